package runtime

import (
	"slices"
	"sync"
	"time"
)

// maxSamples bounds the latency samples kept per stage: enough for exact
// percentiles of any run a table is printed for, and bounded memory.
const maxSamples = 1 << 20

// latencies keeps a stage's sampled queue waits and service times.
type latencies struct {
	mu      sync.Mutex
	wait    []time.Duration
	service []time.Duration
	seen    uint64
}

func (l *latencies) add(wait, service time.Duration) {
	l.mu.Lock()
	l.seen++
	if len(l.wait) < maxSamples {
		l.wait = append(l.wait, wait)
		l.service = append(l.service, service)
	}
	l.mu.Unlock()
}

// Percentiles are latency quantiles.
type Percentiles struct {
	P50, P90, P99 time.Duration
}

func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Percentiles{P50: q(0.50), P90: q(0.90), P99: q(0.99)}
}

// StageLatency summarises one stage's sampled messages.
type StageLatency struct {
	Stage  string
	Device int
	// Node is the cluster node the stage runs on: "" for this process (a
	// cluster pipeline's Latency names the others).
	Node      string
	Samples   uint64
	QueueWait Percentiles
	Service   Percentiles
}

func (l *latencies) summary(stage string, device int) StageLatency {
	l.mu.Lock()
	defer l.mu.Unlock()
	return StageLatency{Stage: stage, Device: device, Samples: l.seen, QueueWait: percentiles(l.wait), Service: percentiles(l.service)}
}
