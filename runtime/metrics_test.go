package runtime_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
)

// Metrics and their OpenTelemetry export: the guide's pipeline on GPU 0,
// the CPU and GPU 2, with a simulated cost on the CPU so its stage is busy.
// Each device's links carry what the topology says they carry, the busy
// CPU shows utilization, and the exported metrics have the documented
// names and the same values.
func TestMetrics(t *testing.T) {
	const n = 400
	const cost = 100 * time.Microsecond
	opts := ra.DeviceOptions{SimDevices: 4}
	cpuID := rttest.CPUID(t, opts)
	opts.SimCost = map[int]time.Duration{cpuID: cost} // the CPU engine is sim's on every backend
	e := rttest.Devices(t, opts)
	if e.RT.Registry().CPUDevice().ID != cpuID {
		t.Fatalf("the CPU is device %d", e.RT.Registry().CPUDevice().ID)
	}
	res := make(chan ra.Result, n)
	spec := guide("metered")
	spec.Stages[0].Device, spec.Stages[1].Device, spec.Stages[2].Device = 0, cpuID, 2
	spec.Deliver.Chan = res
	p := buildStarted(t, e.RT, spec)
	e.RT.Metrics() // the interval starts here
	start := time.Now()
	sendN(t, p, n)
	for range n {
		<-res
	}
	// A kernel publishes its counters after its results: wait for them.
	waitUntil(t, func() bool {
		for _, s := range p.Stats().Stages {
			if s.Processed != n {
				return false
			}
		}
		return true
	})
	m := e.RT.Metrics()
	elapsed := m.At.Sub(start)
	if m.Interval < elapsed || len(m.Devices) != cpuID+1 || len(m.Stages) != 3 {
		t.Fatalf("snapshot: interval %v (sends took %v), %d devices, %d stages", m.Interval, elapsed, len(m.Devices), len(m.Stages))
	}
	links := func(d int) map[string]ra.LinkMetrics {
		out := map[string]ra.LinkMetrics{}
		for _, l := range m.Devices[d].Links {
			out[l.Kind] = l
		}
		return out
	}
	// GPU 0 holds x2's ingress and its egress to the CPU; GPU 2 holds the
	// CPU's ingress link to it and plus1's egress; the CPU only its own
	// (unused) ingress.
	for _, c := range []struct {
		dev   int
		kind  string
		links int
		msgs  uint64
	}{
		{0, "ingress", 1, n}, {0, "egress", 1, n}, {2, "ingress", 2, n}, {2, "egress", 1, n}, {cpuID, "ingress", 1, 0},
	} {
		l := links(c.dev)[c.kind]
		bytesOK := l.Bytes == 4*c.msgs || !rttest.Has(rttest.PayloadBytes) && l.Bytes > 0
		if l.Links != c.links || l.Messages != c.msgs || (c.msgs > 0 && (!bytesOK || l.MessagesPerSecond <= 0 || l.BytesPerSecond <= 0)) {
			t.Errorf("device %d %s links: %+v; want %d links, %d messages", c.dev, c.kind, l, c.links, c.msgs)
		}
	}
	if len(links(1)) != 0 || m.Devices[1].Kernels != 0 || m.Devices[1].RuntimeBytes != 0 {
		t.Errorf("device 1 runs nothing: %+v", m.Devices[1])
	}
	cpu := m.Devices[cpuID]
	// The CPU stage slept cost per message inside its loop's busy time.
	minBusy := float64(n*cost) / float64(m.Interval)
	if cpu.Kind != ra.KindCPU || cpu.Kernels != 1 || cpu.UtilizationFrom != "kernels" || cpu.Utilization <= 0 || cpu.RuntimeBytes == 0 || cpu.UsedBytes == 0 {
		t.Errorf("the CPU: %+v", cpu)
	}
	for _, s := range m.Stages {
		if s.Pipeline != "metered" || s.Processed != n || s.Rate <= 0 || s.Busy < 0 || s.Busy > 1 { // measured on every backend

			t.Errorf("stage %+v", s)
		}
		if s.Stage == "root" && s.Busy < minBusy*0.9 {
			t.Errorf("stage root on the CPU was busy %.3f of the interval; it slept at least %.3f", s.Busy, minBusy)
		}
	}
	for _, d := range []int{0, 2} {
		dm := m.Devices[d]
		if dm.Utilization < 0 || dm.UtilizationFrom != "kernels" || dm.Kernels != 1 || dm.RuntimeBytes == 0 || dm.TotalBytes == 0 {
			t.Errorf("device %d: %+v", d, dm)
		}
		if rttest.Has(rttest.SimMetrics) && (dm.UsedBytes != dm.RuntimeBytes || dm.TotalBytes != 16<<30) {
			t.Errorf("simulated device %d: %+v", d, dm)
		}
	}

	// The same through OpenTelemetry.
	var rm metricdata.ResourceMetrics
	if err := e.Metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	var linkMsgs int64
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			got[mt.Name] = true
			if mt.Name != ra.MetricLinkMessages {
				continue
			}
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				dev, _ := dp.Attributes.Value(attribute.Key("ringactor.device"))
				kind, _ := dp.Attributes.Value(attribute.Key("ringactor.link.kind"))
				if dev.AsInt64() == 2 && kind.AsString() == "ingress" {
					linkMsgs = dp.Value
				}
			}
		}
	}
	for _, name := range []string{ra.MetricDeviceUtilization, ra.MetricDeviceKernels, ra.MetricDeviceMemRuntime, ra.MetricDeviceMemUsed,
		ra.MetricDeviceMemTotal, ra.MetricLinkMessages, ra.MetricLinkBytes, ra.MetricLinkBandwidth} {
		if !got[name] {
			t.Errorf("no metric %s exported", name)
		}
	}
	if linkMsgs != n {
		t.Errorf("%s for device 2's ingress links: %d, want %d", ra.MetricLinkMessages, linkMsgs, n)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if after := e.RT.Metrics(); len(after.Stages) != 0 || after.Devices[0].Kernels != 0 {
		t.Errorf("a closed pipeline is still in the snapshot: %+v", after.Stages)
	}
}

// waitUntil polls cond until it holds, failing the test at ctxT's deadline:
// for counts a kernel publishes after the results they count.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	ctx := ctxT(t)
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition never held")
		case <-time.After(time.Millisecond):
		}
	}
}

// The device loop's own account in a snapshot, on every backend (over the
// CUDA backend: the CUDA device loop's): messages of 3 and 5 floats, n of
// each, through x*2 → +1 on two devices. Every link's bytes are the
// payload bytes it moved, exactly (12 and 20 per message, never the slot
// size), per link kind and in all; each stage's busy time is measured
// (> 0, and a fraction of the interval), and each GPU's utilization is its
// kernels' busy share, with the sampler's figure beside it.
func TestMetricsCountPayloadBytesAndBusyTime(t *testing.T) {
	const n = 150
	e := deviceEnv(t)
	res := make(chan ra.Result, 2*n)
	spec := ra.PipelineSpec{Name: "sized", Stages: []ra.StageSpec{
		{Name: "double", Op: "scale", Params: []float32{2}, Device: testDevice(0)},
		{Name: "inc", Op: "offset", Params: []float32{1}, Device: testDevice(1)},
	}}
	spec.Deliver.Chan = res
	p := buildStarted(t, e.RT, spec)
	e.RT.Metrics() // the interval starts here
	for i := 1; i <= 2*n; i++ {
		fs := make([]float32, 3+2*(i%2)) // 5 floats for odd ids, 3 for even
		for k := range fs {
			fs[k] = float32(i + k)
		}
		if err := p.Send(ctxT(t), ra.Data{ID: uint64(i), Floats: fs}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 * n {
		r := <-res
		if len(r.Floats) != 3+2*int(r.ID%2) || r.Floats[0] != float32(2*r.ID+1) {
			t.Fatalf("result %d: %v", r.ID, r.Floats)
		}
	}
	waitUntil(t, func() bool {
		for _, s := range p.Stats().Stages {
			if s.Processed != 2*n {
				return false
			}
		}
		return true
	})
	m := e.RT.Metrics()
	// Three links carry all 2n messages (the ingress, double → inc, the
	// egress); inc's own ingress link carries none.
	const perLink = n*3*4 + n*5*4
	var msgs, bytes uint64
	for _, d := range m.Devices {
		for _, l := range d.Links {
			msgs += l.Messages
			bytes += l.Bytes
			if l.Messages%(2*n) != 0 || l.Bytes != l.Messages/(2*n)*perLink {
				t.Errorf("device %d's %s links: %d messages, %d bytes; want %d bytes for each %d messages", d.Device, l.Kind, l.Messages, l.Bytes, perLink, 2*n)
			}
		}
	}
	if msgs != 3*2*n || bytes != 3*perLink {
		t.Errorf("all links: %d messages, %d bytes; want %d and %d", msgs, bytes, 3*2*n, 3*perLink)
	}
	for _, s := range p.Stats().Stages {
		if s.Busy <= 0 {
			t.Errorf("stage %s on device %d: busy %v, want its loop's time on batches", s.Stage, s.Device, s.Busy)
		}
	}
	if len(m.Stages) != 2 {
		t.Fatalf("%d stages in the snapshot", len(m.Stages))
	}
	for _, s := range m.Stages {
		if s.Busy <= 0 || s.Busy > 1 {
			t.Errorf("stage %s: busy %v of the interval, want in (0, 1]", s.Stage, s.Busy)
		}
	}
	for _, d := range []int{testDevice(0), testDevice(1)} {
		dm := m.Devices[d]
		if dm.UtilizationFrom != "kernels" || dm.Utilization <= 0 || dm.Utilization > 1 || dm.SampledUtilization > 1 ||
			(dm.SampledUtilization < 0) != (dm.SampledFrom == "") {
			t.Errorf("device %d: utilization %v from %q, sampled %v from %q; want its kernels' busy share in (0, 1]",
				d, dm.Utilization, dm.UtilizationFrom, dm.SampledUtilization, dm.SampledFrom)
		}
	}
	if len(m.Pipelines) != 1 || m.Pipelines[0].Pipeline != "sized" || m.Pipelines[0].ImbalanceFrom != "busy" || m.Pipelines[0].Imbalance < 1 {
		t.Errorf("pipelines: %+v", m.Pipelines)
	}
	// On a GPU the bundle's summary collects this line (NVML's figure beside the kernels').
	for _, d := range []int{testDevice(0), testDevice(1)} {
		dm := m.Devices[d]
		t.Logf("GPU-NOTE metrics on %s device %d: utilization %.4f (%s), sampled %.4f (%s); links %+v", rttest.Backend(), d, dm.Utilization, dm.UtilizationFrom, dm.SampledUtilization, dm.SampledFrom, dm.Links)
	}
	t.Logf("GPU-NOTE metrics on %s: links %d messages, %d payload bytes; stages %+v; pipeline %+v", rttest.Backend(), msgs, bytes, m.Stages, m.Pipelines)
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
}
