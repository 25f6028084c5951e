package bench

import (
	"sync/atomic"
	"time"

	"github.com/ringactor/ringactor/internal/hist"
)

// sampleEvery: one message in this many carries a timestamp. Every member
// of a comparison pays the same, and it keeps the clock reads from being a
// large share of a fast link's cost.
const sampleEvery = 16

// epoch is the zero of the benchmark clock: time.Since reads the
// monotonic clock.
var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

// latencies records, for messages whose id is a multiple of sampleEvery,
// when each was sent (by the sender) and how long it took to arrive (by
// the receiver). The two sides touch a stamp only on either side of the
// queue the message went through, which orders them. A run's latencies
// go to a slice (the receiver appends, nothing more); keep counts them in
// the histogram of every run so far, the runtime's (package hist).
type latencies struct {
	sent []int64
	got  []int64        // this run
	all  hist.Histogram // every run so far
}

func newLatencies(n int) *latencies { return &latencies{sent: make([]int64, n/sampleEvery+1)} }

func (l *latencies) reset(n int) {
	if cap(l.sent) < n/sampleEvery+1 {
		l.sent = make([]int64, n/sampleEvery+1)
	}
	l.sent = l.sent[:n/sampleEvery+1]
	if cap(l.got) < len(l.sent) {
		l.got = make([]int64, 0, len(l.sent))
	}
	l.got = l.got[:0]
}

// sampled reports whether message id carries a timestamp.
func sampled(id uint64) bool { return id%sampleEvery == 0 }

// send stamps message id as sent now, if it is sampled.
func (l *latencies) send(id uint64) {
	if sampled(id) {
		if i := int(id / sampleEvery); i < len(l.sent) {
			// Atomic: the queue between the two sides orders them, but
			// through device memory (the CUDA rows) the race detector
			// cannot see that.
			atomic.StoreInt64(&l.sent[i], now())
		}
	}
}

// arrive records message id's latency, if it is sampled.
func (l *latencies) arrive(id uint64) {
	if sampled(id) {
		if i := int(id / sampleEvery); i < len(l.sent) {
			l.got = append(l.got, now()-atomic.LoadInt64(&l.sent[i]))
		}
	}
}

func (l *latencies) keep() {
	for _, d := range l.got {
		l.all.Record(time.Duration(d))
	}
}

// percentiles are every kept run's p50 and p99, as package hist defines
// them (what runtime.Pipeline.Latency reports): within 0.1%.
func (l *latencies) percentiles() (p50, p99 int64) {
	q := l.all.Quantiles(.50, .99)
	return int64(q[0]), int64(q[1])
}
