package runtime

import (
	"context"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/devreg"
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

// meter remembers the last reading of each counter, so that a snapshot
// can say rates over the time since the previous one. The runtime keeps
// one for Metrics and one for its OpenTelemetry callback, so neither
// shortens the other's interval.
type meter struct {
	mu   sync.Mutex
	at   time.Time
	prev map[any]uint64
}

func newMeter(start time.Time) *meter { return &meter{at: start, prev: map[any]uint64{}} }

// Metrics takes a snapshot of the runtime's devices, links and stages.
// Rates and utilization are over the time since the previous call (since
// New, the first time). It is safe for concurrent use; concurrent callers
// share one interval.
func (rt *Runtime) Metrics() Metrics { return rt.snapshot(rt.meter) }

// linkKey and busyKey name counters in a meter.
type linkKey struct {
	l     *p2pqueue.Link
	bytes bool
}
type busyKey struct {
	p     *Pipeline
	stage int
}
type procKey busyKey

func (rt *Runtime) snapshot(m *meter) Metrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	dt := now.Sub(m.at).Seconds()
	seen := map[any]uint64{}
	delta := func(k any, v uint64) float64 {
		seen[k] = v
		if dt <= 0 {
			return 0
		}
		return float64(v-min(v, m.prev[k])) / dt
	}
	out := Metrics{At: now, Interval: now.Sub(m.at)}
	devs := rt.reg.Devices()
	busy := make([]float64, len(devs))
	out.Devices = make([]DeviceMetrics, len(devs))
	links := make([]map[p2pqueue.LinkKind]*LinkMetrics, len(devs))
	for i, d := range devs {
		out.Devices[i] = DeviceMetrics{Device: d.ID, Name: d.Name, Kind: d.Kind, Utilization: -1, TotalBytes: d.MemoryBytes}
		links[i] = map[p2pqueue.LinkKind]*LinkMetrics{}
		if mux, ok := rt.backend.(*devreg.Mux); ok {
			out.Devices[i].RuntimeBytes = mux.Held(i)
		}
	}
	addLink := func(l *p2pqueue.Link, pl p2pqueue.Placement) {
		if pl.Device < 0 || pl.Device >= len(devs) {
			return
		}
		st := l.Stats()
		b := st.BytesIn
		if b == 0 {
			b = st.Published * uint64(l.Config().SlotSize)
		}
		lm := links[pl.Device][pl.Kind]
		if lm == nil {
			lm = &LinkMetrics{Kind: pl.Kind.String()}
			links[pl.Device][pl.Kind] = lm
		}
		lm.Links++
		lm.Messages += st.Published
		lm.Bytes += b
		lm.MessagesPerSecond += delta(linkKey{l, false}, st.Published)
		lm.BytesPerSecond += delta(linkKey{l, true}, b)
	}
	for _, p := range rt.openPipelines() {
		for i, s := range p.stages {
			addLink(s.ingressLink, s.inPlacement)
			for _, e := range s.outs {
				addLink(e.link, e.pl)
			}
			if s.egress != nil {
				addLink(s.egress.link, s.egress.pl)
			}
			if s.kernel == nil {
				continue
			}
			st := s.kernel.Status()
			sm := StageMetrics{Pipeline: p.spec.Name, Stage: s.spec.Name, Device: s.spec.Device,
				Processed: st.Processed, Dropped: st.Dropped, Queued: st.Queued(), Busy: -1,
				Rate: delta(procKey{p, i}, st.Processed)}
			if d := s.spec.Device; d >= 0 && d < len(devs) {
				out.Devices[d].Kernels++
				if st.Busy > 0 || devs[d].MeasuresBusy {
					sm.Busy = min(delta(busyKey{p, i}, uint64(st.Busy))/1e9, 1)
					busy[d] += sm.Busy
				}
			}
			out.Stages = append(out.Stages, sm)
		}
	}
	var samples []rk.DeviceSample
	if mux, ok := rt.backend.(*devreg.Mux); ok {
		samples = mux.Sample()
	}
	for i, d := range devs {
		dm := &out.Devices[i]
		for _, lm := range links[i] {
			dm.Links = append(dm.Links, *lm)
		}
		sort.Slice(dm.Links, func(a, b int) bool { return dm.Links[a].Kind < dm.Links[b].Kind })
		var s rk.DeviceSample
		if i < len(samples) {
			s = samples[i]
		}
		dm.UsedBytes = dm.RuntimeBytes // unless the backend reads more: what we hold
		if s.TotalBytes > 0 {
			dm.UsedBytes, dm.TotalBytes = s.UsedBytes, max(s.TotalBytes, dm.TotalBytes)
		}
		switch {
		case s.UtilizationFrom != "":
			dm.Utilization, dm.UtilizationFrom = s.Utilization, s.UtilizationFrom
		case d.MeasuresBusy:
			dm.Utilization, dm.UtilizationFrom = min(busy[i]/float64(max(d.Cores, 1)), 1), "kernels"
		}
	}
	m.at, m.prev = now, seen
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
func (rt *Runtime) registerMetrics() error {
	m := rt.mp.Meter(scope)
	util, err := m.Float64ObservableGauge(MetricDeviceUtilization, metric.WithUnit("1"),
		metric.WithDescription("fraction of the time since the last collection the device was busy (NVML on a GPU, its ring kernels' busy time on sim and the CPU)"))
	if err != nil {
		return err
	}
	kernels, err := m.Int64ObservableGauge(MetricDeviceKernels, metric.WithDescription("ring kernels running on the device"))
	if err != nil {
		return err
	}
	memRT, err := m.Int64ObservableGauge(MetricDeviceMemRuntime, metric.WithUnit("By"), metric.WithDescription("memory the runtime holds on the device: link queues, control blocks, trace rings"))
	if err != nil {
		return err
	}
	memUsed, err := m.Int64ObservableGauge(MetricDeviceMemUsed, metric.WithUnit("By"), metric.WithDescription("memory in use on the device, by anyone"))
	if err != nil {
		return err
	}
	memTotal, err := m.Int64ObservableGauge(MetricDeviceMemTotal, metric.WithUnit("By"), metric.WithDescription("the device's memory"))
	if err != nil {
		return err
	}
	msgs, err := m.Int64ObservableCounter(MetricLinkMessages, metric.WithDescription("messages moved over the device's links of one kind"))
	if err != nil {
		return err
	}
	bytes, err := m.Int64ObservableCounter(MetricLinkBytes, metric.WithUnit("By"), metric.WithDescription("bytes moved over the device's links of one kind"))
	if err != nil {
		return err
	}
	bw, err := m.Float64ObservableGauge(MetricLinkBandwidth, metric.WithUnit("By/s"), metric.WithDescription("bytes per second over the device's links of one kind, since the last collection"))
	if err != nil {
		return err
	}
	rt.metricsReg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		snap := rt.snapshot(rt.otelMeter)
		for _, d := range snap.Devices {
			base := []attribute.KeyValue{attribute.Int("ringactor.device", d.Device), attribute.String("ringactor.device.kind", d.Kind), attribute.String("ringactor.device.name", d.Name)}
			opt := metric.WithAttributes(base...)
			if d.Utilization >= 0 {
				o.ObserveFloat64(util, d.Utilization, opt)
			}
			o.ObserveInt64(kernels, int64(d.Kernels), opt)
			o.ObserveInt64(memRT, int64(d.RuntimeBytes), opt)
			o.ObserveInt64(memUsed, int64(d.UsedBytes), opt)
			o.ObserveInt64(memTotal, int64(d.TotalBytes), opt)
			for _, l := range d.Links {
				lopt := metric.WithAttributes(append(base, attribute.String("ringactor.link.kind", l.Kind))...)
				o.ObserveInt64(msgs, int64(l.Messages), lopt)
				o.ObserveInt64(bytes, int64(l.Bytes), lopt)
				o.ObserveFloat64(bw, l.BytesPerSecond, lopt)
			}
		}
		return nil
	}, util, kernels, memRT, memUsed, memTotal, msgs, bytes, bw)
	return err
}
