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
	for i := 1; i <= n; i++ {
		if err := p.Send(ctxT(t), ra.Data{ID: uint64(i), Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
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
		busyOK := s.Busy >= 0 && s.Busy <= 1 || !rttest.Has(rttest.SimMetrics) && s.Device != cpuID && s.Busy == -1 // -1: not measured
		if s.Pipeline != "metered" || s.Processed != n || s.Rate <= 0 || !busyOK {
			t.Errorf("stage %+v", s)
		}
		if s.Stage == "root" && s.Busy < minBusy*0.9 {
			t.Errorf("stage root on the CPU was busy %.3f of the interval; it slept at least %.3f", s.Busy, minBusy)
		}
	}
	for _, d := range []int{0, 2} {
		dm := m.Devices[d]
		if dm.Utilization < 0 && rttest.Has(rttest.SimMetrics) || dm.Kernels != 1 || dm.RuntimeBytes == 0 || dm.TotalBytes == 0 {
			t.Errorf("device %d: %+v", d, dm)
		}
		if rttest.Has(rttest.SimMetrics) && (dm.UtilizationFrom != "kernels" || dm.UsedBytes != dm.RuntimeBytes || dm.TotalBytes != 16<<30) {
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
