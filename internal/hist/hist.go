// Package hist is the project's one latency histogram: an HDR histogram
// (github.com/HdrHistogram/hdrhistogram-go) behind a mutex, so that the
// runtime's stage latencies (runtime.Pipeline.Latency) and the benchmarks'
// p50/p99 (internal/bench, internal/gpubench) count samples and compute
// percentiles the same way.
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

// Histogram counts durations. The zero value is ready to use and holds no
// memory until its first Record; its methods may be called concurrently.
type Histogram struct {
	mu      sync.Mutex
	h       *hdrhistogram.Histogram
	clamped uint64
}

func newHDR() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(Highest), Digits) }

// Bytes is one histogram's memory once it holds a sample (the counts
// array and its header), the same for any number of samples.
func Bytes() int { return newHDR().ByteSize() }

// Record counts one duration: a negative one as 0, one above Highest as
// Highest (both also counted by Clamped).
func (h *Histogram) Record(d time.Duration) {
	h.mu.Lock()
	if h.h == nil {
		h.h = newHDR()
	}
	if d < 0 || d > Highest {
		h.clamped++
		d = max(0, min(d, Highest))
	}
	// In range, and far from int64 counts' overflow: it cannot fail.
	_ = h.h.RecordValue(int64(d))
	h.mu.Unlock()
}

// Count is the number of durations recorded (merged ones included).
func (h *Histogram) Count() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h == nil {
		return 0
	}
	return uint64(h.h.TotalCount())
}

// Clamped is how many of the durations counted were out of range and
// recorded at a bound: negative ones as 0, ones above Highest as Highest.
func (h *Histogram) Clamped() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.clamped
}

// Quantile is the q quantile (q in [0, 1]) of the durations recorded, as
// the package documentation defines it; 0 when there are none.
func (h *Histogram) Quantile(q float64) time.Duration { return h.Quantiles(q)[0] }

// Quantiles are the qs quantiles (each in [0, 1]) in the order given, in
// one pass over the counts; all 0 when nothing has been recorded.
func (h *Histogram) Quantiles(qs ...float64) []time.Duration {
	ps := make([]float64, len(qs))
	for i, q := range qs {
		ps[i] = 100 * q // hdrhistogram's quantiles are percents
	}
	out := make([]time.Duration, len(qs))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h == nil {
		return out
	}
	for i, v := range h.h.ValueAtPercentilesSlice(ps) {
		// The top bucket reaches a little past Highest.
		out[i] = min(time.Duration(v), Highest)
	}
	return out
}

// Percentiles are the 50th, 90th and 99th percentiles (Quantiles).
func (h *Histogram) Percentiles() (p50, p90, p99 time.Duration) {
	q := h.Quantiles(.50, .90, .99)
	return q[0], q[1], q[2]
}

// Merge adds from's counts (and its Clamped) to h. from is read first, so
// two histograms may be merged into each other at once, and h.Merge(h)
// doubles h.
func (h *Histogram) Merge(from *Histogram) {
	from.mu.Lock()
	var src *hdrhistogram.Histogram
	if from.h != nil {
		src = from.h.Clone()
	}
	clamped := from.clamped
	from.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clamped += clamped
	if src == nil {
		return
	}
	if h.h == nil {
		h.h = newHDR()
	}
	// Same range on both sides: nothing is dropped.
	h.h.Merge(src)
}

// Reset forgets every duration recorded, keeping the memory.
func (h *Histogram) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h != nil {
		h.h.Reset()
	}
	h.clamped = 0
}
