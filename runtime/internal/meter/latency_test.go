package meter

import (
	"testing"
	"time"
)

// Nearest-rank percentiles of a shuffled 1..100 ms; the input is left as
// it was; none of nothing.
func TestPercentiles(t *testing.T) {
	var d []time.Duration
	for i := range 100 {
		d = append(d, time.Duration((i*37)%100+1)*time.Millisecond)
	}
	first := d[0]
	got := percentiles(d)
	want := Percentiles{P50: 51 * time.Millisecond, P90: 91 * time.Millisecond, P99: 100 * time.Millisecond}
	if got != want {
		t.Fatalf("percentiles: %+v, want %+v", got, want)
	}
	if d[0] != first {
		t.Fatal("percentiles sorted its input")
	}
	if one := percentiles([]time.Duration{7}); one != (Percentiles{P50: 7, P90: 7, P99: 7}) {
		t.Fatalf("one sample: %+v", one)
	}
	if none := percentiles(nil); none != (Percentiles{}) {
		t.Fatalf("no samples: %+v", none)
	}
}

// Latencies counts every sample, keeps at most maxSamples of them, and
// summarises queue waits and service times apart.
func TestLatenciesBounded(t *testing.T) {
	var l Latencies
	if s := l.Summary(); s != (Latency{}) {
		t.Fatalf("empty: %+v", s)
	}
	for i := range maxSamples + 10 {
		l.Add(time.Duration(i%10), time.Duration(100+i%10))
	}
	if len(l.wait) != maxSamples || len(l.service) != maxSamples {
		t.Fatalf("kept %d waits, %d service times; want at most %d", len(l.wait), len(l.service), maxSamples)
	}
	// The kept samples are i%10 for i < 2^20: 0 to 5 once more than 6 to
	// 9, which puts the median at 4 and the 90th percentile at 8.
	s := l.Summary()
	want := Latency{Samples: maxSamples + 10, QueueWait: Percentiles{P50: 4, P90: 8, P99: 9}, Service: Percentiles{P50: 104, P90: 108, P99: 109}}
	if s != want {
		t.Fatalf("summary: %+v, want %+v", s, want)
	}
}
