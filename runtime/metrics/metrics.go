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
	// Pipelines is each open pipeline's load balance across the devices
	// its stages run on.
	Pipelines []PipelineMetrics
}

// DeviceMetrics is one device's share of a snapshot.
type DeviceMetrics struct {
	Device     int
	Name, Kind string
	// Utilization is the fraction of Interval the device was busy, 0 to
	// 1, or -1 where nothing measures it: on a GPU (of the CUDA backend
	// or simulated) the summed busy fraction of its ring kernels (at most
	// 1), as their loops count the time they spend on batches; on the CPU
	// that sum over its cores; on a device whose loops do not count it,
	// the backend's sample. UtilizationFrom says which: "kernels",
	// "nvml", or "" where unknown.
	Utilization     float64
	UtilizationFrom string
	// SampledUtilization is the backend sampler's figure for the device,
	// 0 to 1, shown beside Utilization: NVML's on a GPU of the CUDA
	// backend, over NVML's own sampling window, which counts a spinning
	// persistent kernel as busy (a GPU running any ring kernel reads near
	// 1 however idle its kernels are); -1 where the backend samples none
	// (sim, the CPU, the emulated driver). SampledFrom says whose
	// ("nvml"), "" where none.
	SampledUtilization float64
	SampledFrom        string
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
	// as the producer counted them (a Go producer, or the CUDA device
	// loop, which counts its results' bytes exactly as the Go side does).
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
	Busy                       float64 // fraction of Interval spent on batches of messages; -1 where not measured
}

// PipelineMetrics is one open pipeline's load balance across the devices
// its stages run on.
type PipelineMetrics struct {
	Pipeline string
	// Devices is the number of devices its running stages are on.
	Devices int
	// Imbalance is the most work any of those devices did for the
	// pipeline over the mean of them (Imbalance's ratio: 1 is even, and 1
	// on one device); ImbalancePercent is how far above even. A device's
	// work is the summed busy fraction of the pipeline's stages there
	// over Interval where every stage's busy time is measured
	// (ImbalanceFrom "busy"), else the messages they processed over
	// Interval ("processed").
	Imbalance, ImbalancePercent float64
	ImbalanceFrom               string
}

// Imbalance is the load imbalance of work spread over n parts: the most
// any did over the mean (1 when even, or when there is no work), and that
// as a percentage above even. Stage groups (group.Imbalance, over their
// instances) and the snapshot's pipelines (over devices) use it.
func Imbalance[W ~uint64 | ~float64](work []W) (ratio, percent float64) {
	var sum, most float64
	for _, w := range work {
		sum += float64(w)
		most = max(most, float64(w))
	}
	if sum <= 0 {
		return 1, 0
	}
	ratio = most * float64(len(work)) / sum
	return ratio, (ratio - 1) * 100
}

// The device and link metrics the runtime exports through its
// MeterProvider (runtime.MetricDeviceUtilization ... name them too). The
// pipeline's own metrics (ringactor.stage.*, ringactor.pipeline.*) are
// registered per pipeline.
const (
	DeviceUtilization = "ringactor.device.utilization"
	// DeviceUtilizationSampled is DeviceMetrics.SampledUtilization (NVML's).
	DeviceUtilizationSampled = "ringactor.device.utilization.sampled"
	// PipelineImbalance is PipelineMetrics.Imbalance, with attribute
	// ringactor.pipeline.
	PipelineImbalance = "ringactor.pipeline.imbalance"
	DeviceKernels     = "ringactor.device.kernels"
	DeviceMemRuntime  = "ringactor.device.memory.runtime"
	DeviceMemUsed     = "ringactor.device.memory.used"
	DeviceMemTotal    = "ringactor.device.memory.total"
	LinkMessages      = "ringactor.link.messages"
	LinkBytes         = "ringactor.link.bytes"
	LinkBandwidth     = "ringactor.link.bandwidth"
)
