package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// exact is the q quantile of sorted s by the package's definition: the
// rank-th smallest, rank = max(1, round(q·n)).
func exact(s []time.Duration, q float64) time.Duration {
	rank := max(1, min(len(s), int(math.Round(q*float64(len(s))))))
	return s[rank-1]
}

// within checks got against want to the stated precision: never below
// it, above it by less than 1/1024 of it.
func within(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got < want || got > want+want/1024 {
		t.Errorf("%s: %v (%d ns), want %v (%d ns) to within 1/1024 above", what, got, int64(got), want, int64(want))
	}
}

// Quantiles of 200,000 log-uniform durations from 1 ns to 10 s agree with
// the sorted samples' to the stated precision, asked for one by one or
// together in any order.
func TestQuantilesWithinPrecision(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	d := make([]time.Duration, 200_000)
	var h Histogram
	for i := range d {
		d[i] = time.Duration(math.Exp(r.Float64() * math.Log(10e9)))
		h.Record(d[i])
	}
	if h.Count() != uint64(len(d)) {
		t.Fatalf("Count %d, want %d", h.Count(), len(d))
	}
	slices.Sort(d)
	qs := []float64{1, .999, .99, .9, .5, .1, .001}
	all := h.Quantiles(qs...)
	for i, q := range qs {
		within(t, "Quantile", h.Quantile(q), exact(d, q))
		if all[i] != h.Quantile(q) {
			t.Errorf("Quantiles[%d] %v, Quantile(%v) %v", i, all[i], q, h.Quantile(q))
		}
	}
	p50, p90, p99 := h.Percentiles()
	if p50 != h.Quantile(.5) || p90 != h.Quantile(.9) || p99 != h.Quantile(.99) {
		t.Errorf("Percentiles %v %v %v, Quantile %v", p50, p90, p99, h.Quantiles(.5, .9, .99))
	}
}

// Below 2,048 ns every value has its own bucket: quantiles are exact, and
// the rank rounds to nearest (the median of 1..100 is the 50th).
func TestSmallValuesExact(t *testing.T) {
	var h Histogram
	if q := h.Quantiles(.5, .99); q[0] != 0 || q[1] != 0 || h.Count() != 0 {
		t.Fatalf("empty: %v, count %d", q, h.Count())
	}
	for i := range 100 {
		h.Record(time.Duration((i*37)%100 + 1))
	}
	if p50, p90, p99 := h.Percentiles(); p50 != 50 || p90 != 90 || p99 != 99 {
		t.Fatalf("1..100 ns: p50 %d p90 %d p99 %d, want 50 90 99", p50, p90, p99)
	}
	if q := h.Quantiles(0, 1); q[0] != 1 || q[1] != 100 {
		t.Fatalf("min, max: %v, want 1ns 100ns", q)
	}
	var one Histogram
	one.Record(7)
	if p50, p90, p99 := one.Percentiles(); p50 != 7 || p90 != 7 || p99 != 7 {
		t.Fatalf("one sample: %v %v %v", p50, p90, p99)
	}
}

// Out-of-range durations are counted at the bounds, never dropped.
func TestClamped(t *testing.T) {
	var h Histogram
	h.Record(-time.Second)
	h.Record(2 * time.Hour)
	h.Record(Highest)
	h.Record(0)
	if h.Count() != 4 || h.Clamped() != 2 {
		t.Fatalf("Count %d Clamped %d, want 4 2", h.Count(), h.Clamped())
	}
	if q := h.Quantiles(.25, .5, 1); q[0] != 0 || q[1] != 0 || q[2] != Highest {
		t.Fatalf("quantiles %v, want 0 0 %v", q, Highest)
	}
}

// Merge gives what recording everything in one histogram gives; Reset
// forgets it all.
func TestMergeReset(t *testing.T) {
	var a, b, both Histogram
	for i := range 10_000 {
		d := time.Duration(i*i) * time.Nanosecond
		both.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	b.Record(-1)
	both.Record(-1)
	var empty Histogram
	a.Merge(&empty)
	a.Merge(&b)
	qs := []float64{.1, .5, .9, .99, 1}
	if a.Count() != both.Count() || a.Clamped() != 1 || !slices.Equal(a.Quantiles(qs...), both.Quantiles(qs...)) {
		t.Fatalf("merged: count %d clamped %d %v, want count %d clamped 1 %v", a.Count(), a.Clamped(), a.Quantiles(qs...), both.Count(), both.Quantiles(qs...))
	}
	empty.Merge(&a)
	if empty.Count() != a.Count() {
		t.Fatalf("merged into empty: count %d, want %d", empty.Count(), a.Count())
	}
	a.Merge(&a)
	if a.Count() != 2*both.Count() || !slices.Equal(a.Quantiles(qs...), both.Quantiles(qs...)) {
		t.Fatalf("self-merge: count %d, want %d; %v, want %v", a.Count(), 2*both.Count(), a.Quantiles(qs...), both.Quantiles(qs...))
	}
	a.Reset()
	if a.Count() != 0 || a.Clamped() != 0 || a.Quantile(.5) != 0 {
		t.Fatalf("reset: count %d clamped %d p50 %v", a.Count(), a.Clamped(), a.Quantile(.5))
	}
}

// Memory is fixed: once the histogram exists, recording allocates
// nothing, and it is what Bytes says.
func TestFixedMemory(t *testing.T) {
	var h Histogram
	h.Record(1)
	if n := testing.AllocsPerRun(1000, func() { h.Record(123456789) }); n != 0 {
		t.Fatalf("Record allocates %v times", n)
	}
	if b := Bytes(); b < 100_000 || b > 300_000 {
		t.Fatalf("Bytes %d, documented as 270,404", b)
	}
}

// Goroutines record while another reads: every sample is counted (run
// with -race).
func TestConcurrent(t *testing.T) {
	const writers, each = 4, 2000
	var h Histogram
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		for h.Count() < writers*each {
			_, _, p99 := h.Percentiles()
			if p99 < 0 || p99 > each {
				t.Errorf("p99 %v out of the recorded range", p99)
				return
			}
		}
	}()
	for w := range writers {
		wg.Go(func() {
			var mine Histogram
			for i := range each {
				h.Record(time.Duration(i + 1))
				mine.Record(time.Duration(w))
			}
			h.Merge(&mine)
		})
	}
	wg.Wait()
	<-done
	if h.Count() != 2*writers*each {
		t.Fatalf("Count %d, want %d", h.Count(), 2*writers*each)
	}
}

// Counts, the unlocked core: its zero value is empty, merging it into
// itself doubles it, and it agrees with Histogram.
func TestCounts(t *testing.T) {
	var c Counts
	var h Histogram
	if c.Count() != 0 || c.Quantile(.5) != 0 {
		t.Fatalf("empty: count %d p50 %v", c.Count(), c.Quantile(.5))
	}
	for i := range 5000 {
		c.Record(time.Duration(i) * time.Microsecond)
		h.Record(time.Duration(i) * time.Microsecond)
	}
	c.Record(3 * Highest)
	h.Record(3 * Highest)
	p50, p90, p99 := c.Percentiles()
	if q := h.Quantiles(.5, .9, .99); q[0] != p50 || q[1] != p90 || q[2] != p99 || c.Count() != h.Count() || c.Clamped() != 1 {
		t.Fatalf("Counts %v %v %v (count %d, clamped %d), Histogram %v (count %d)", p50, p90, p99, c.Count(), c.Clamped(), q, h.Count())
	}
	c.Merge(&c)
	if c.Count() != 2*h.Count() || c.Clamped() != 2 || c.Quantile(.9) != p90 {
		t.Fatalf("self-merge: count %d clamped %d p90 %v, want %d 2 %v", c.Count(), c.Clamped(), c.Quantile(.9), 2*h.Count(), p90)
	}
	c.Reset()
	if c.Count() != 0 || c.Clamped() != 0 {
		t.Fatalf("reset: count %d clamped %d", c.Count(), c.Clamped())
	}
}
