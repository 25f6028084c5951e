package meter

import (
	"sync"
	"time"

	"github.com/ringactor/ringactor/internal/hist"
	"github.com/ringactor/ringactor/runtime/metrics"
)

// Latencies counts a stage's sampled queue waits and service times in two
// histograms (package hist) under one lock: every sample counts, in fixed
// memory (2 × hist.Bytes, from the first sample), and percentiles are
// within 0.1%. The zero value is ready to use; its methods may be called
// concurrently.
type Latencies struct {
	mu            sync.Mutex
	wait, service hist.Counts
}

// Add counts one sampled message's times.
func (l *Latencies) Add(wait, service time.Duration) {
	l.mu.Lock()
	l.wait.Record(wait)
	l.service.Record(service)
	l.mu.Unlock()
}

// Percentiles are latency quantiles (package metrics').
type Percentiles = metrics.Percentiles

// Latency summarises a stage's sampled messages: how many there were, and
// their percentiles (hist's definition).
type Latency struct {
	Samples   uint64
	QueueWait Percentiles
	Service   Percentiles
}

// Summary reads l.
func (l *Latencies) Summary() Latency {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Latency{Samples: l.wait.Count(), QueueWait: percentiles(&l.wait), Service: percentiles(&l.service)}
}

func percentiles(c *hist.Counts) Percentiles {
	p50, p90, p99 := c.Percentiles()
	return Percentiles{P50: p50, P90: p90, P99: p99}
}
