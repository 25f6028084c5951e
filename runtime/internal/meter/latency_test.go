package meter

import (
	"sync"
	"testing"
	"time"
)

// within checks a percentile against the exact one to the histogram's
// precision: never below it, above it by less than 1/1024 of it (0.1%).
func within(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got < want || got > want+want/1024 {
		t.Errorf("%s: %v, want %v to within 0.1%% above", what, got, want)
	}
}

// Every one of 3,000,000 samples counts, not only the first 2^20: the
// queue waits are 1..3,000,000 µs in rising order, so the first 2^20
// alone would put p90 near 0.94 s, not at 2.7 s; the service times are
// the same values in a strided order. The percentiles are the exact
// ranks' (the 1,500,000th, 2,700,000th, 2,970,000th smallest) to within
// 0.1%.
func TestLatenciesEverySample(t *testing.T) {
	const n, stride = 3_000_000, 1_000_003 // stride is prime to n: a permutation
	var l Latencies
	if s := l.Summary(); s != (Latency{}) {
		t.Fatalf("empty: %+v", s)
	}
	for i := range n {
		l.Add(time.Duration(i+1)*time.Microsecond, time.Duration((i*stride)%n+1)*time.Microsecond)
	}
	s := l.Summary()
	if s.Samples != n {
		t.Fatalf("Samples %d, want %d", s.Samples, n)
	}
	for _, p := range []struct {
		what string
		got  Percentiles
	}{{"queue wait", s.QueueWait}, {"service", s.Service}} {
		within(t, p.what+" p50", p.got.P50, 1_500_000*time.Microsecond)
		within(t, p.what+" p90", p.got.P90, 2_700_000*time.Microsecond)
		within(t, p.what+" p99", p.got.P99, 2_970_000*time.Microsecond)
	}
}

// Small samples: a shuffled 1..100 ms gives the 50th, 90th and 99th
// smallest, and queue waits and service times are summarised apart.
func TestLatenciesSmall(t *testing.T) {
	var l Latencies
	for i := range 100 {
		v := time.Duration((i*37)%100+1) * time.Millisecond
		l.Add(v, v/1000)
	}
	s := l.Summary()
	if s.Samples != 100 {
		t.Fatalf("Samples %d", s.Samples)
	}
	within(t, "wait p50", s.QueueWait.P50, 50*time.Millisecond)
	within(t, "wait p90", s.QueueWait.P90, 90*time.Millisecond)
	within(t, "wait p99", s.QueueWait.P99, 99*time.Millisecond)
	within(t, "service p50", s.Service.P50, 50*time.Microsecond)
	within(t, "service p99", s.Service.P99, 99*time.Microsecond)
}

// Stages record while a reader summarises (run with -race): every sample
// counts, and no summary sees more samples than were added.
func TestLatenciesConcurrent(t *testing.T) {
	const writers, each = 4, 1000
	var l Latencies
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for i := range each {
				l.Add(time.Duration(i), time.Duration(2*i))
			}
		})
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			s := l.Summary()
			if s.Samples > writers*each || s.QueueWait.P99 > each {
				t.Errorf("mid-run summary %+v", s)
				return
			}
			if s.Samples == writers*each {
				return
			}
		}
	}()
	wg.Wait()
	<-read
	s := l.Summary()
	if s.Samples != writers*each || s.QueueWait.P50 != each/2-1 || s.Service.P50 != each-2 {
		t.Fatalf("summary %+v, want %d samples, wait p50 %d, service p50 %d", s, writers*each, each/2-1, each-2)
	}
}
