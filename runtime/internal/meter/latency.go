package meter

import (
	"slices"
	"sync"
	"time"

	"github.com/ringactor/ringactor/runtime/metrics"
)

// maxSamples bounds the latency samples kept per stage: enough for exact
// percentiles of any run a table is printed for, and bounded memory.
const maxSamples = 1 << 20

// Latencies keeps a stage's sampled queue waits and service times. The
// zero value is ready to use.
type Latencies struct {
	mu      sync.Mutex
	wait    []time.Duration
	service []time.Duration
	seen    uint64
}

// Add counts one sampled message, keeping its times while fewer than
// maxSamples are kept.
func (l *Latencies) Add(wait, service time.Duration) {
	l.mu.Lock()
	l.seen++
	if len(l.wait) < maxSamples {
		l.wait = append(l.wait, wait)
		l.service = append(l.service, service)
	}
	l.mu.Unlock()
}

// Percentiles are latency quantiles (package metrics').
type Percentiles = metrics.Percentiles

// Latency summarises a stage's sampled messages: how many were seen, and
// the percentiles of those kept.
type Latency struct {
	Samples   uint64
	QueueWait Percentiles
	Service   Percentiles
}

// Summary reads l.
func (l *Latencies) Summary() Latency {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Latency{Samples: l.seen, QueueWait: percentiles(l.wait), Service: percentiles(l.service)}
}

// percentiles are d's nearest-rank quantiles; d is left as it is.
func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Percentiles{P50: q(0.50), P90: q(0.90), P99: q(0.99)}
}
