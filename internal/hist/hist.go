// Package hist is the project's one latency histogram: an HDR histogram
// (github.com/HdrHistogram/hdrhistogram-go), so that the runtime's stage
// latencies (runtime.Pipeline.Latency) and the benchmarks' p50/p99
// (internal/bench, internal/gpubench) count samples and compute
// percentiles the same way. Histogram is safe for concurrent use; Counts
// is the same without its lock, for a caller that holds its own.
//
// Range and precision: it tracks 0 to Highest (one hour) in nanoseconds
// with Digits (3) significant decimal digits. A duration above Highest is
// recorded as Highest and a negative one as 0; both are counted (Clamped),
// never dropped. Memory is fixed whatever the sample count: Bytes
// (270,404 bytes, 264 KiB), allocated at the first Record; Count is exact.
//
// Percentile definition: Quantile(q) is the rank-th smallest sample with
// rank = max(1, round(q·Count)) (q in [0, 1]), the HDR histogram's
// ValueAtQuantile: the smallest recorded value v such that at least
// round(q·Count) samples are <= v. It is reported as the highest value of
// the histogram bucket that sample fell in, so it is never below the exact
// sample and above it by less than 1/1024 of it: within 0.1%. Values below
// 2,048 ns are exact.
package hist

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

const (
	// Highest is the largest duration the histogram tells apart; longer
	// ones are recorded as Highest (and counted by Clamped).
	Highest = time.Hour
	// Digits is the number of significant decimal digits kept: values are
	// exact to within 0.1%.
	Digits = 3
)

// Counts counts durations: Histogram without its lock, for a caller that
// holds its own (meter.Latencies keeps two under one). The zero value is
// ready to use and holds no memory until its first Record; it is not safe
// for concurrent use.
type Counts struct {
	h       *hdrhistogram.Histogram
	clamped uint64
}

func newHDR() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(Highest), Digits) }

// Bytes is one histogram's memory once it holds a sample (the counts
// array and its header), the same for any number of samples.
func Bytes() int { return newHDR().ByteSize() }

// Record counts one duration: a negative one as 0, one above Highest as
// Highest (both also counted by Clamped).
func (c *Counts) Record(d time.Duration) {
	if c.h == nil {
		c.h = newHDR()
	}
	if d < 0 || d > Highest {
		c.clamped++
		d = max(0, min(d, Highest))
	}
	// In range, and far from int64 counts' overflow: it cannot fail.
	_ = c.h.RecordValue(int64(d))
}

// Count is the number of durations recorded (merged ones included).
func (c *Counts) Count() uint64 {
	if c.h == nil {
		return 0
	}
	return uint64(c.h.TotalCount())
}

// Clamped is how many of the durations counted were out of range and
// recorded at a bound: negative ones as 0, ones above Highest as Highest.
func (c *Counts) Clamped() uint64 { return c.clamped }

// Quantile is the q quantile (q in [0, 1]) of the durations recorded, as
// the package documentation defines it; 0 when there are none.
func (c *Counts) Quantile(q float64) time.Duration { return c.Quantiles(q)[0] }

// Quantiles are the qs quantiles (each in [0, 1]) in the order given, in
// one pass over the counts; all 0 when nothing has been recorded.
func (c *Counts) Quantiles(qs ...float64) []time.Duration {
	out := make([]time.Duration, len(qs))
	if c.h == nil {
		return out
	}
	ps := make([]float64, len(qs))
	for i, q := range qs {
		ps[i] = 100 * q // hdrhistogram's quantiles are percents
	}
	for i, v := range c.h.ValueAtPercentilesSlice(ps) {
		// The top bucket reaches a little past Highest.
		out[i] = min(time.Duration(v), Highest)
	}
	return out
}

// Percentiles are the 50th, 90th and 99th percentiles (Quantiles).
func (c *Counts) Percentiles() (p50, p90, p99 time.Duration) {
	q := c.Quantiles(.50, .90, .99)
	return q[0], q[1], q[2]
}

// Merge adds from's counts (and its Clamped) to c; c.Merge(c) doubles c.
func (c *Counts) Merge(from *Counts) {
	c.clamped += from.clamped
	if from.h == nil {
		return
	}
	if c.h == nil {
		c.h = newHDR()
	}
	if from == c {
		// Same range on both sides: nothing is dropped.
		c.h.Merge(from.h.Clone())
		return
	}
	c.h.Merge(from.h)
}

// Reset forgets every duration recorded, keeping the memory.
func (c *Counts) Reset() {
	if c.h != nil {
		c.h.Reset()
	}
	c.clamped = 0
}

// Histogram is Counts behind a mutex: its methods may be called
// concurrently. The zero value is ready to use and holds no memory until
// its first Record.
type Histogram struct {
	mu sync.Mutex
	c  Counts
}

// Record counts one duration (Counts.Record).
func (h *Histogram) Record(d time.Duration) {
	h.mu.Lock()
	h.c.Record(d)
	h.mu.Unlock()
}

// Count is the number of durations recorded (merged ones included).
func (h *Histogram) Count() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.c.Count()
}

// Clamped is how many durations were recorded at a bound (Counts.Clamped).
func (h *Histogram) Clamped() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.c.Clamped()
}

// Quantile is the q quantile (q in [0, 1]); 0 when there are none.
func (h *Histogram) Quantile(q float64) time.Duration { return h.Quantiles(q)[0] }

// Quantiles are the qs quantiles in the order given (Counts.Quantiles).
func (h *Histogram) Quantiles(qs ...float64) []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.c.Quantiles(qs...)
}

// Percentiles are the 50th, 90th and 99th percentiles.
func (h *Histogram) Percentiles() (p50, p90, p99 time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.c.Percentiles()
}

// Merge adds from's counts (and its Clamped) to h. from is copied first,
// under its own lock, so two histograms may be merged into each other at
// once, and h.Merge(h) doubles h.
func (h *Histogram) Merge(from *Histogram) {
	from.mu.Lock()
	var src Counts
	src.Merge(&from.c)
	from.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.c.Merge(&src)
}

// Reset forgets every duration recorded, keeping the memory.
func (h *Histogram) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.c.Reset()
}
