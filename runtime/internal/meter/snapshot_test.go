package meter

import (
	"testing"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// clock is a Rates' clock the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestRates() (*Rates, *clock) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	r := NewRates(c.t)
	r.now = c.now
	return r, c
}

// Two GPUs (the first simulated, measuring its kernels' busy time; the
// second read by NVML) and the CPU with 4 cores.
var devs = []rk.Device{
	{ID: 0, Name: "sim-0", Kind: "gpu", MemoryBytes: 16 << 30, MeasuresBusy: true},
	{ID: 1, Name: "gpu-1", Kind: "gpu", MemoryBytes: 80 << 30},
	{ID: 2, Name: "cpu", Kind: "cpu", MemoryBytes: 64 << 30, MeasuresBusy: true, Cores: 4},
}

type keyOf string

// Links on one device add up per kind, sorted by kind; bytes are the
// producers' payload bytes, never messages × slot size; a link
// placed on no device of the reading is left out; rates are over the
// time since the previous Take and never go negative.
func TestLinks(t *testing.T) {
	r, c := newTestRates()
	links := func(scale uint64) []LinkReading {
		return []LinkReading{
			{Key: keyOf("in0"), Placement: p2pqueue.Placement{Kind: p2pqueue.LinkIngress, Device: 0}, Published: 10 * scale, BytesIn: 40 * scale, SlotSize: 64},
			{Key: keyOf("in0b"), Placement: p2pqueue.Placement{Kind: p2pqueue.LinkIngress, Device: 0}, Published: 5 * scale, BytesIn: 20 * scale, SlotSize: 64},
			{Key: keyOf("local0"), Placement: p2pqueue.Placement{Kind: p2pqueue.LinkLocal, Device: 0}, Published: 3 * scale, BytesIn: 36 * scale, SlotSize: 128}, // CUDA-written: counted too
			{Key: keyOf("eg1"), Placement: p2pqueue.Placement{Kind: p2pqueue.LinkEgress, Device: 1}, Published: 2 * scale, BytesIn: 8 * scale, SlotSize: 64},
			{Key: keyOf("eg1e"), Placement: p2pqueue.Placement{Kind: p2pqueue.LinkEgress, Device: 1}, Published: 4 * scale, SlotSize: 64}, // empty payloads
			{Key: keyOf("nowhere"), Placement: p2pqueue.Placement{Kind: p2pqueue.LinkLocal, Device: 9}, Published: 100},
		}
	}
	c.t = c.t.Add(time.Second)
	m := r.Take(func() Reading { return Reading{Devices: devs, Links: links(1)} })
	if m.Interval != time.Second || !m.At.Equal(c.t) || len(m.Devices) != 3 {
		t.Fatalf("snapshot at %v over %v, %d devices", m.At, m.Interval, len(m.Devices))
	}
	d0 := m.Devices[0].Links
	want0 := []LinkMetrics{
		{Kind: "ingress", Links: 2, Messages: 15, Bytes: 60, MessagesPerSecond: 15, BytesPerSecond: 60},
		{Kind: "local", Links: 1, Messages: 3, Bytes: 36, MessagesPerSecond: 3, BytesPerSecond: 36},
	}
	if len(d0) != 2 || d0[0] != want0[0] || d0[1] != want0[1] {
		t.Fatalf("device 0's links: %+v, want %+v", d0, want0)
	}
	if d1 := m.Devices[1].Links; len(d1) != 1 || d1[0].Kind != "egress" || d1[0].Messages != 6 || d1[0].Bytes != 8 {
		t.Fatalf("device 1's links: %+v", d1)
	}
	if m.Devices[2].Links != nil {
		t.Fatalf("the CPU has no links: %+v", m.Devices[2].Links)
	}

	// Two seconds later, three times the counts: rates are the growth over
	// two seconds.
	c.t = c.t.Add(2 * time.Second)
	m = r.Take(func() Reading { return Reading{Devices: devs, Links: links(3)} })
	if l := m.Devices[0].Links[0]; l.Messages != 45 || l.MessagesPerSecond != 15 || l.BytesPerSecond != 60 {
		t.Fatalf("device 0's ingress after 2 s: %+v", l)
	}
	// A counter that went back (a link made again under the same key)
	// gives no negative rate; no time passed, no rate at all.
	m = r.Take(func() Reading { return Reading{Devices: devs, Links: links(1)} })
	if l := m.Devices[0].Links[0]; m.Interval != 0 || l.MessagesPerSecond != 0 || l.Messages != 15 {
		t.Fatalf("no time passed: interval %v, %+v", m.Interval, l)
	}
	c.t = c.t.Add(time.Second)
	m = r.Take(func() Reading { return Reading{Devices: devs, Links: links(0)} })
	if l := m.Devices[0].Links[0]; l.MessagesPerSecond != 0 || l.BytesPerSecond != 0 {
		t.Fatalf("counters went back: %+v", l)
	}
}

// Stages: counts, rate and busy fraction (capped at 1) over the interval;
// -1 busy where neither the kernel nor the device measures it; kernels per
// device; utilization from the backend's sample where it has one, else
// from the kernels' busy time over the device's cores, else unknown (-1).
// Memory: what the runtime holds, or the backend's reading where it has
// one, the larger total winning.
func TestStagesAndDevices(t *testing.T) {
	r, c := newTestRates()
	stages := func(s uint64) []StageReading {
		return []StageReading{
			{Key: keyOf("a"), Pipeline: "p", Stage: "a", Device: 0, Status: rk.Status{Processed: 100 * s, Dropped: 1, InQueued: []int{2, 3}, Busy: time.Duration(s) * 400 * time.Millisecond}},
			{Key: keyOf("b"), Pipeline: "p", Stage: "b", Device: 0, Status: rk.Status{Processed: 50 * s, Busy: time.Duration(s) * 900 * time.Millisecond}},
			{Key: keyOf("c"), Pipeline: "p", Stage: "c", Device: 1, Status: rk.Status{Processed: 10 * s}},
			{Key: keyOf("d"), Pipeline: "q", Stage: "d", Device: 2, Status: rk.Status{Processed: 7 * s, Busy: time.Duration(s) * 2 * time.Second}},
			{Key: keyOf("e"), Pipeline: "q", Stage: "e", Device: 2},
		}
	}
	read := func(s uint64) func() Reading {
		return func() Reading {
			return Reading{Devices: devs, RuntimeBytes: []int64{1000, 2000, -5}, Stages: stages(s),
				Samples: []rk.DeviceSample{{}, {Utilization: 0.25, UtilizationFrom: "nvml", UsedBytes: 5 << 30, TotalBytes: 81 << 30}}}
		}
	}
	r.Take(read(0))
	c.t = c.t.Add(time.Second)
	m := r.Take(read(1))
	if len(m.Stages) != 5 {
		t.Fatalf("%d stages", len(m.Stages))
	}
	a, b, cc, d, e := m.Stages[0], m.Stages[1], m.Stages[2], m.Stages[3], m.Stages[4]
	if a != (StageMetrics{Pipeline: "p", Stage: "a", Device: 0, Processed: 100, Dropped: 1, Queued: 5, Rate: 100, Busy: 0.4}) {
		t.Errorf("stage a: %+v", a)
	}
	if b.Busy != 0.9 || cc.Busy != -1 || cc.Rate != 10 || d.Busy != 1 || e.Busy != 0 {
		t.Errorf("busy: b %v, c %v (rate %v), d %v (capped), e %v", b.Busy, cc.Busy, cc.Rate, d.Busy, e.Busy)
	}
	d0, d1, d2 := m.Devices[0], m.Devices[1], m.Devices[2]
	if d0.Kernels != 2 || d0.UtilizationFrom != "kernels" || d0.Utilization != 1 || d0.RuntimeBytes != 1000 || d0.UsedBytes != 1000 || d0.TotalBytes != 16<<30 {
		t.Errorf("sim GPU: %+v", d0)
	}
	if d1.Kernels != 1 || d1.UtilizationFrom != "nvml" || d1.Utilization != 0.25 || d1.RuntimeBytes != 2000 || d1.UsedBytes != 5<<30 || d1.TotalBytes != 81<<30 {
		t.Errorf("NVML GPU: %+v", d1)
	}
	if d2.Kernels != 2 || d2.UtilizationFrom != "kernels" || d2.Utilization != 0.25 || d2.RuntimeBytes != 0 || d2.Name != "cpu" || d2.Kind != "cpu" {
		t.Errorf("CPU (1 of 4 cores busy): %+v", d2)
	}
	// A device nothing measures: utilization unknown.
	m = r.Take(func() Reading { return Reading{Devices: []rk.Device{{ID: 0, Kind: "gpu"}}} })
	if d := m.Devices[0]; d.Utilization != -1 || d.UtilizationFrom != "" || m.Stages != nil {
		t.Errorf("unmeasured device: %+v, stages %v", d, m.Stages)
	}
}

// A GPU whose loops count their busy time and that the backend samples
// too (the CUDA backend's, with NVML): Utilization is its kernels' busy
// share, NVML's figure beside it in SampledUtilization; a device with
// only the sample has it in both; one with neither, -1 in both.
func TestKernelsUtilizationBesideTheSample(t *testing.T) {
	r, c := newTestRates()
	ds := []rk.Device{
		{ID: 0, Name: "gpu-0", Kind: "gpu", MeasuresBusy: true},
		{ID: 1, Name: "gpu-1", Kind: "gpu"},
		{ID: 2, Name: "gpu-2", Kind: "gpu"},
	}
	read := func(s time.Duration) func() Reading {
		return func() Reading {
			return Reading{Devices: ds, Stages: []StageReading{{Key: keyOf("k"), Pipeline: "p", Stage: "k", Device: 0, Status: rk.Status{Busy: s * 300 * time.Millisecond}}},
				Samples: []rk.DeviceSample{{Utilization: 1, UtilizationFrom: "nvml"}, {Utilization: 0.5, UtilizationFrom: "nvml"}}}
		}
	}
	r.Take(read(0))
	c.t = c.t.Add(time.Second)
	m := r.Take(read(1))
	d0, d1, d2 := m.Devices[0], m.Devices[1], m.Devices[2]
	if d0.Utilization != 0.3 || d0.UtilizationFrom != "kernels" || d0.SampledUtilization != 1 || d0.SampledFrom != "nvml" {
		t.Errorf("a GPU measuring its kernels, NVML beside: %+v", d0)
	}
	if d1.Utilization != 0.5 || d1.UtilizationFrom != "nvml" || d1.SampledUtilization != 0.5 || d1.SampledFrom != "nvml" {
		t.Errorf("a GPU with NVML only: %+v", d1)
	}
	if d2.Utilization != -1 || d2.SampledUtilization != -1 || d2.UtilizationFrom != "" || d2.SampledFrom != "" {
		t.Errorf("a GPU nothing measures: %+v", d2)
	}
}

// A pipeline's imbalance across the devices its stages run on: of their
// summed busy fractions per device where every stage's is measured, else
// of their rates; 1 on one device; a stage on no device of the reading
// left out.
func TestPipelineImbalance(t *testing.T) {
	r, c := newTestRates()
	stages := func(s uint64) []StageReading {
		busy := func(ms time.Duration) time.Duration { return time.Duration(s) * ms * time.Millisecond }
		return []StageReading{
			// p: device 0 busy 0.2+0.4, device 2 (the CPU, 4 cores) 0.2: mean 0.4, most 0.6.
			{Key: keyOf("p1"), Pipeline: "p", Stage: "a", Device: 0, Status: rk.Status{Processed: 10 * s, Busy: busy(200)}},
			{Key: keyOf("p2"), Pipeline: "p", Stage: "b", Device: 0, Status: rk.Status{Processed: 10 * s, Busy: busy(400)}},
			{Key: keyOf("p3"), Pipeline: "p", Stage: "c", Device: 2, Status: rk.Status{Processed: 10 * s, Busy: busy(200)}},
			{Key: keyOf("p4"), Pipeline: "p", Stage: "x", Device: 7, Status: rk.Status{Processed: 99 * s}},
			// q: device 1 measures nothing: rates, 30 on 1 and 10 on 2: mean 20, most 30.
			{Key: keyOf("q1"), Pipeline: "q", Stage: "a", Device: 1, Status: rk.Status{Processed: 30 * s}},
			{Key: keyOf("q2"), Pipeline: "q", Stage: "b", Device: 2, Status: rk.Status{Processed: 10 * s, Busy: busy(900)}},
			// one: a single device.
			{Key: keyOf("o1"), Pipeline: "one", Stage: "a", Device: 0, Status: rk.Status{Processed: 5 * s, Busy: busy(100)}},
		}
	}
	read := func(s uint64) func() Reading {
		return func() Reading { return Reading{Devices: devs, Stages: stages(s)} }
	}
	r.Take(read(0))
	c.t = c.t.Add(time.Second)
	m := r.Take(read(1))
	if len(m.Pipelines) != 3 {
		t.Fatalf("pipelines: %+v", m.Pipelines)
	}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	p, q, one := m.Pipelines[0], m.Pipelines[1], m.Pipelines[2]
	if p.Pipeline != "p" || p.Devices != 2 || p.ImbalanceFrom != "busy" || !near(p.Imbalance, 1.5) || !near(p.ImbalancePercent, 50) {
		t.Errorf("pipeline p: %+v, want busy 0.6 and 0.2 over 2 devices: 1.5", p)
	}
	if q.Pipeline != "q" || q.Devices != 2 || q.ImbalanceFrom != "processed" || !near(q.Imbalance, 1.5) {
		t.Errorf("pipeline q: %+v, want rates 30 and 10: 1.5", q)
	}
	if one.Pipeline != "one" || one.Devices != 1 || one.Imbalance != 1 || one.ImbalancePercent != 0 {
		t.Errorf("pipeline on one device: %+v", one)
	}
}
