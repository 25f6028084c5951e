package runtime

import (
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	"github.com/ringactor/ringactor/runtime/internal/devreg"
	"github.com/ringactor/ringactor/runtime/internal/meter"
)

// Metrics is a snapshot of a runtime: every device, the traffic on each
// kind of link, and every running stage. Runtime.Metrics takes one; rates
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

// Metrics takes a snapshot of the runtime's devices, links and stages.
// Rates and utilization are over the time since the previous call (since
// New, the first time). It is safe for concurrent use; concurrent callers
// share one interval.
func (rt *Runtime) Metrics() Metrics { return metricsOf(rt.meter.Take(rt.reading)) }

// reading reads what a snapshot is computed from: the devices, every open
// pipeline's links and running stages, and the backend's samples.
func (rt *Runtime) reading() meter.Reading {
	in := meter.Reading{Devices: rt.reg.Devices()}
	mux, _ := rt.backend.(*devreg.Mux)
	if mux != nil {
		in.RuntimeBytes = make([]int64, len(in.Devices))
		for i := range in.RuntimeBytes {
			in.RuntimeBytes[i] = int64(mux.Held(i))
		}
	}
	link := func(l *p2pqueue.Link, pl p2pqueue.Placement) {
		st := l.Stats()
		in.Links = append(in.Links, meter.LinkReading{Key: l, Placement: pl, Published: st.Published, BytesIn: st.BytesIn, SlotSize: l.Config().SlotSize})
	}
	for _, p := range rt.openPipelines() {
		for _, s := range p.stages {
			link(s.ingressLink, s.inPlacement)
			for _, e := range s.outs {
				link(e.link, e.pl)
			}
			if s.egress != nil {
				link(s.egress.link, s.egress.pl)
			}
			if s.kernel != nil {
				in.Stages = append(in.Stages, meter.StageReading{Key: s, Pipeline: p.spec.Name, Stage: s.spec.Name, Device: s.spec.Device, Status: s.kernel.Status()})
			}
		}
	}
	if mux != nil {
		in.Samples = mux.Sample()
	}
	return in
}

// metricsOf is m as the public types say it.
func metricsOf(m meter.Metrics) Metrics {
	out := Metrics{At: m.At, Interval: m.Interval, Devices: make([]DeviceMetrics, len(m.Devices))}
	for i, d := range m.Devices {
		var links []LinkMetrics
		for _, l := range d.Links {
			links = append(links, LinkMetrics(l))
		}
		out.Devices[i] = DeviceMetrics{Device: d.Device, Name: d.Name, Kind: d.Kind, Utilization: d.Utilization, UtilizationFrom: d.UtilizationFrom,
			Kernels: d.Kernels, RuntimeBytes: d.RuntimeBytes, UsedBytes: d.UsedBytes, TotalBytes: d.TotalBytes, Links: links}
	}
	for _, s := range m.Stages {
		out.Stages = append(out.Stages, StageMetrics(s))
	}
	return out
}

// Metric names the runtime exports through its MeterProvider (listed with
// their attributes in docs/METRICS.md). The pipeline's own metrics
// (ringactor.stage.*, ringactor.pipeline.*) are registered per pipeline.
const (
	MetricDeviceUtilization = "ringactor.device.utilization"
	MetricDeviceKernels     = "ringactor.device.kernels"
	MetricDeviceMemRuntime  = "ringactor.device.memory.runtime"
	MetricDeviceMemUsed     = "ringactor.device.memory.used"
	MetricDeviceMemTotal    = "ringactor.device.memory.total"
	MetricLinkMessages      = "ringactor.link.messages"
	MetricLinkBytes         = "ringactor.link.bytes"
	MetricLinkBandwidth     = "ringactor.link.bandwidth"
)

// registerMetrics exports each device's snapshot as OpenTelemetry
// metrics, read when the reader collects.
func (rt *Runtime) registerMetrics() (err error) {
	rt.metricsReg, err = meter.RegisterDevices(rt.mp.Meter(scope), func() meter.Metrics { return rt.otelMeter.Take(rt.reading) })
	return err
}
