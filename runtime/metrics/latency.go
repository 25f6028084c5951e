package metrics

import "time"

// Percentiles are latency quantiles.
type Percentiles struct {
	P50, P90, P99 time.Duration
}

// StageLatency summarises one stage's sampled messages. Samples counts
// every one, and the percentiles are of all of them, from an HDR
// histogram: the round(q·Samples)-th smallest, to within 0.1% above
// (docs/ARCHITECTURE.md §5).
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
