// Package metrics is the data model of ringactor's metrics: a snapshot of
// a runtime's devices, links and stages (Metrics, as Runtime.Metrics
// takes one), a stage's latency summary (StageLatency, as
// Pipeline.Latency gives them), and the names of the OpenTelemetry
// metrics the runtime exports through its MeterProvider (listed with
// their attributes in docs/METRICS.md). Package runtime names these types
// too (runtime.Metrics is metrics.Metrics); this package holds them so
// that the runtime's meter (runtime/internal/meter) fills them directly.
// It imports nothing of ringactor's.
package metrics

import "time"

// Metrics is a snapshot of a runtime: every device, the traffic on each
// kind of link, and every running stage. runtime.Runtime.Metrics takes one; rates
// and utilization are over Interval, the time since the previous one.
type Metrics struct {
	At       time.Time
	Interval time.Duration
	Devices  []DeviceMetrics
	Stages   []StageMetrics
}

// DeviceMetrics is one device's share of a snapshot.
type DeviceMetrics struct {
	Device     int
	Name, Kind string
	// Utilization is the fraction of Interval the device was busy, 0 to
	// 1, or -1 where nothing measures it. On a GPU of the CUDA backend it
	// is NVML's (which counts a spinning ring kernel as busy); on a
	// simulated GPU the summed busy fraction of its ring kernels (at most
	// 1); on the CPU that sum over its cores. UtilizationFrom says which:
	// "nvml", "kernels", or "" where unknown.
	Utilization     float64
	UtilizationFrom string
	// Kernels is the number of ring kernels running on it.
	Kernels int
	// RuntimeBytes is the memory the runtime holds on it (link queues,
	// control blocks, trace rings); UsedBytes is all memory in use there
	// (NVML's on a GPU, the host's on the CPU, RuntimeBytes on a simulated
	// GPU); TotalBytes its size.
	RuntimeBytes, UsedBytes, TotalBytes uint64
	// Links is the traffic on the links whose queues live in its memory,
	// one entry per kind that has any.
	Links []LinkMetrics
}

// LinkMetrics is the traffic on the links of one kind on one device.
type LinkMetrics struct {
	// Kind is local, peer, staged, ingress or egress (p2pqueue.LinkKind).
	Kind  string
	Links int
	// Messages and Bytes moved since the links were made: payload bytes
	// as the producer counted them; for links a CUDA kernel writes, which
	// does not count bytes, messages times the slot size (an upper bound).
	Messages, Bytes uint64
	// MessagesPerSecond and BytesPerSecond are the achieved rates over
	// the snapshot's Interval.
	MessagesPerSecond, BytesPerSecond float64
}

// StageMetrics is one running stage's share of a snapshot.
type StageMetrics struct {
	Pipeline, Stage            string
	Device                     int
	Processed, Dropped, Queued uint64
	Rate                       float64 // processed per second over Interval
	Busy                       float64 // fraction of Interval spent on messages; -1 where not measured (CUDA)
}

// The device and link metrics the runtime exports through its
// MeterProvider (runtime.MetricDeviceUtilization ... name them too). The
// pipeline's own metrics (ringactor.stage.*, ringactor.pipeline.*) are
// registered per pipeline.
const (
	DeviceUtilization = "ringactor.device.utilization"
	DeviceKernels     = "ringactor.device.kernels"
	DeviceMemRuntime  = "ringactor.device.memory.runtime"
	DeviceMemUsed     = "ringactor.device.memory.used"
	DeviceMemTotal    = "ringactor.device.memory.total"
	LinkMessages      = "ringactor.link.messages"
	LinkBytes         = "ringactor.link.bytes"
	LinkBandwidth     = "ringactor.link.bandwidth"
)
