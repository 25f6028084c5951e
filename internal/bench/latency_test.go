package bench

import (
	"testing"
	"time"

	"github.com/ringactor/ringactor/internal/hist"
)

// The table's p50 and p99 are package hist's (the runtime's Latency's),
// over every kept run: two runs of 1..100 µs and 101..200 µs give the
// 100th and 198th smallest of 1..200 µs, as a histogram of the same
// samples does.
func TestPercentilesAreHist(t *testing.T) {
	l := newLatencies(100 * sampleEvery)
	if p50, p99 := l.percentiles(); p50 != 0 || p99 != 0 {
		t.Fatalf("no samples: %d %d", p50, p99)
	}
	var want hist.Histogram
	for run := range 2 {
		l.reset(100 * sampleEvery)
		for i := range 100 {
			d := time.Duration(run*100+(i*37)%100+1) * time.Microsecond
			l.got = append(l.got, int64(d))
			want.Record(d)
		}
		l.keep()
	}
	p50, p99 := l.percentiles()
	if q := want.Quantiles(.50, .99); p50 != int64(q[0]) || p99 != int64(q[1]) {
		t.Fatalf("p50 %d p99 %d, hist's %v", p50, p99, q)
	}
	for _, c := range []struct {
		got  int64
		want time.Duration
	}{{p50, 100 * time.Microsecond}, {p99, 198 * time.Microsecond}} {
		if w := int64(c.want); c.got < w || c.got > w+w/1024 {
			t.Errorf("%v, want %v to within 0.1%% above", time.Duration(c.got), c.want)
		}
	}
}
