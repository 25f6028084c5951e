package meter

import (
	"sort"
	"sync"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/metrics"
)

// The snapshot's types are package metrics' (runtime's names for them
// are aliases).
type (
	Metrics         = metrics.Metrics
	DeviceMetrics   = metrics.DeviceMetrics
	LinkMetrics     = metrics.LinkMetrics
	StageMetrics    = metrics.StageMetrics
	PipelineMetrics = metrics.PipelineMetrics
)

// Reading is what a snapshot is computed from, read at its time.
type Reading struct {
	Devices []rk.Device
	// RuntimeBytes is the memory the runtime holds on each device, by
	// device id, where known.
	RuntimeBytes []int64
	Links        []LinkReading
	Stages       []StageReading
	// Samples is the backend's reading of each device, by id, where it
	// reads them (rk.Sampler).
	Samples []rk.DeviceSample
}

// LinkReading is one link's counters.
type LinkReading struct {
	Key       any // the same for the same link in every reading
	Placement p2pqueue.Placement
	Published uint64
	// BytesIn is the payload bytes its producer counted (a Go producer
	// or a CUDA kernel: both count them).
	BytesIn uint64
	// SlotSize is the link's slot size (unused: bytes are counted).
	SlotSize uint32
}

// StageReading is one running stage's kernel status.
type StageReading struct {
	Key             any // the same for the same stage in every reading
	Pipeline, Stage string
	Device          int
	Status          rk.Status
}

// Rates remembers the last reading of each counter, so that a snapshot
// can say rates over the time since the previous one. Keep one per
// reader (the runtime has one for Metrics and one for its OpenTelemetry
// callback), so that neither shortens the other's interval.
type Rates struct {
	now func() time.Time

	mu   sync.Mutex
	at   time.Time
	prev map[key]uint64
}

// key names a counter in Rates: a reading's Key and which of its
// counters.
type key struct {
	k       any
	counter int
}

const (
	linkMessages = iota
	linkBytes
	stageProcessed
	stageBusy
)

// NewRates starts the first interval at start.
func NewRates(start time.Time) *Rates {
	return &Rates{now: time.Now, at: start, prev: map[key]uint64{}}
}

// Take reads (calling read once, with concurrent Takes held back, so they
// share one interval) and returns the snapshot, with rates and
// utilization over the time since the previous Take.
func (r *Rates) Take(read func() Reading) Metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	dt := now.Sub(r.at).Seconds()
	seen := map[key]uint64{}
	delta := func(k key, v uint64) float64 {
		seen[k] = v
		if dt <= 0 {
			return 0
		}
		return float64(v-min(v, r.prev[k])) / dt
	}
	in := read()
	out := Metrics{At: now, Interval: now.Sub(r.at)}
	devs := in.Devices
	busy := make([]float64, len(devs))
	out.Devices = make([]DeviceMetrics, len(devs))
	links := make([]map[p2pqueue.LinkKind]*LinkMetrics, len(devs))
	for i, d := range devs {
		out.Devices[i] = DeviceMetrics{Device: d.ID, Name: d.Name, Kind: d.Kind, Utilization: -1, SampledUtilization: -1, TotalBytes: d.MemoryBytes}
		links[i] = map[p2pqueue.LinkKind]*LinkMetrics{}
		if i < len(in.RuntimeBytes) {
			out.Devices[i].RuntimeBytes = uint64(max(in.RuntimeBytes[i], 0))
		}
	}
	for _, l := range in.Links {
		pl := l.Placement
		if pl.Device < 0 || pl.Device >= len(devs) {
			continue
		}
		b := l.BytesIn
		lm := links[pl.Device][pl.Kind]
		if lm == nil {
			lm = &LinkMetrics{Kind: pl.Kind.String()}
			links[pl.Device][pl.Kind] = lm
		}
		lm.Links++
		lm.Messages += l.Published
		lm.Bytes += b
		lm.MessagesPerSecond += delta(key{l.Key, linkMessages}, l.Published)
		lm.BytesPerSecond += delta(key{l.Key, linkBytes}, b)
	}
	for _, s := range in.Stages {
		st := s.Status
		sm := StageMetrics{Pipeline: s.Pipeline, Stage: s.Stage, Device: s.Device,
			Processed: st.Processed, Dropped: st.Dropped, Queued: st.Queued(), Busy: -1,
			Rate: delta(key{s.Key, stageProcessed}, st.Processed)}
		if d := s.Device; d >= 0 && d < len(devs) {
			out.Devices[d].Kernels++
			if st.Busy > 0 || devs[d].MeasuresBusy {
				sm.Busy = min(delta(key{s.Key, stageBusy}, uint64(st.Busy))/1e9, 1)
				busy[d] += sm.Busy
			}
		}
		out.Stages = append(out.Stages, sm)
	}
	out.Pipelines = pipelines(out.Stages, len(devs))
	for i, d := range devs {
		dm := &out.Devices[i]
		for _, lm := range links[i] {
			dm.Links = append(dm.Links, *lm)
		}
		sort.Slice(dm.Links, func(a, b int) bool { return dm.Links[a].Kind < dm.Links[b].Kind })
		var s rk.DeviceSample
		if i < len(in.Samples) {
			s = in.Samples[i]
		}
		dm.UsedBytes = dm.RuntimeBytes // unless the backend reads more: what we hold
		if s.TotalBytes > 0 {
			dm.UsedBytes, dm.TotalBytes = s.UsedBytes, max(s.TotalBytes, dm.TotalBytes)
		}
		// The kernels' own busy time where their loops count it; the
		// backend's sample (NVML's, which reads a spinning ring kernel as
		// busy) beside it, and in its place where they do not.
		if s.UtilizationFrom != "" {
			dm.SampledUtilization, dm.SampledFrom = s.Utilization, s.UtilizationFrom
			dm.Utilization, dm.UtilizationFrom = s.Utilization, s.UtilizationFrom
		}
		if d.MeasuresBusy {
			dm.Utilization, dm.UtilizationFrom = min(busy[i]/float64(max(d.Cores, 1)), 1), "kernels"
		}
	}
	r.at, r.prev = now, seen
	return out
}

// pipelines is each pipeline's imbalance across the devices its stages
// run on (metrics.PipelineMetrics): of its stages' summed busy fraction
// per device where every one is measured, else of their processing rates.
func pipelines(stages []StageMetrics, ndev int) []PipelineMetrics {
	type acc struct {
		busy, rate []float64
		on         []bool
		measured   bool
	}
	var order []string
	by := map[string]*acc{}
	for _, s := range stages {
		if s.Device < 0 || s.Device >= ndev {
			continue
		}
		a := by[s.Pipeline]
		if a == nil {
			a = &acc{busy: make([]float64, ndev), rate: make([]float64, ndev), on: make([]bool, ndev), measured: true}
			by[s.Pipeline] = a
			order = append(order, s.Pipeline)
		}
		a.on[s.Device] = true
		a.rate[s.Device] += s.Rate
		a.busy[s.Device] += s.Busy
		a.measured = a.measured && s.Busy >= 0
	}
	out := make([]PipelineMetrics, 0, len(order))
	for _, name := range order {
		a := by[name]
		work, from := a.rate, "processed"
		if a.measured {
			work, from = a.busy, "busy"
		}
		var on []float64
		for d, w := range work {
			if a.on[d] {
				on = append(on, w)
			}
		}
		pm := PipelineMetrics{Pipeline: name, Devices: len(on), ImbalanceFrom: from}
		pm.Imbalance, pm.ImbalancePercent = metrics.Imbalance(on)
		out = append(out, pm)
	}
	return out
}

// Backend is what a reading takes from a backend that knows it (the
// runtime's device mux): the memory it holds on each device, and its
// samples.
type Backend interface {
	Held(device int) uint64
	Sample() []rk.DeviceSample
}

// Read makes a reading of devices, b's memory and samples (b may be
// nil), and the links and stages add reports to it.
func Read(devices []rk.Device, b Backend, add func(r *Reading)) Reading {
	in := Reading{Devices: devices}
	if b != nil {
		in.RuntimeBytes = make([]int64, len(devices))
		for i := range in.RuntimeBytes {
			in.RuntimeBytes[i] = int64(b.Held(i))
		}
	}
	add(&in)
	if b != nil {
		in.Samples = b.Sample()
	}
	return in
}

// Link adds link l, placed at pl, to the reading.
func (in *Reading) Link(l *p2pqueue.Link, pl p2pqueue.Placement) {
	st := l.Stats()
	in.Links = append(in.Links, LinkReading{Key: l, Placement: pl, Published: st.Published, BytesIn: st.BytesIn, SlotSize: l.Config().SlotSize})
}
