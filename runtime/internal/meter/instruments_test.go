package meter

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// at is the attribute set of kvs, as data points are keyed.
func at(kvs ...attribute.KeyValue) attribute.Distinct {
	s := attribute.NewSet(kvs...)
	return s.Equivalent()
}

func newReader() (*sdkmetric.ManualReader, *sdkmetric.MeterProvider) {
	rd := sdkmetric.NewManualReader()
	return rd, sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
}

// collect reads rd's data points as name → attribute set → value.
func collect(t *testing.T, rd *sdkmetric.ManualReader) map[string]map[attribute.Distinct]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[attribute.Distinct]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			pts := map[attribute.Distinct]float64{}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					pts[p.Attributes.Equivalent()] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					pts[p.Attributes.Equivalent()] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					pts[p.Attributes.Equivalent()] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					pts[p.Attributes.Equivalent()] = float64(p.Count)
				}
			}
			out[m.Name] = pts
		}
	}
	return out
}

// The device instruments report each device's share of the snapshot
// under the documented names and attributes, utilization only where it
// is known; after Unregister, nothing.
func TestRegisterDevices(t *testing.T) {
	rd, mp := newReader()
	snap := Metrics{Devices: []DeviceMetrics{
		{Device: 0, Name: "sim-0", Kind: "gpu", Utilization: 0.5, SampledUtilization: 0.75, Kernels: 2, RuntimeBytes: 10, UsedBytes: 20, TotalBytes: 30,
			Links: []LinkMetrics{{Kind: "ingress", Messages: 7, Bytes: 28, BytesPerSecond: 3.5}}},
		{Device: 1, Name: "cpu", Kind: "cpu", Utilization: -1, SampledUtilization: -1},
	}, Pipelines: []PipelineMetrics{{Pipeline: "pipe", Devices: 2, Imbalance: 1.25}}}
	reg, err := RegisterDevices(mp.Meter("test"), func() Metrics { return snap })
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, rd)
	dev0 := at(attribute.Int("ringactor.device", 0), attribute.String("ringactor.device.kind", "gpu"), attribute.String("ringactor.device.name", "sim-0"))
	dev1 := at(attribute.Int("ringactor.device", 1), attribute.String("ringactor.device.kind", "cpu"), attribute.String("ringactor.device.name", "cpu"))
	in0 := at(attribute.Int("ringactor.device", 0), attribute.String("ringactor.device.kind", "gpu"), attribute.String("ringactor.device.name", "sim-0"),
		attribute.String("ringactor.link.kind", "ingress"))
	for _, c := range []struct {
		name string
		at   attribute.Distinct
		want float64
	}{
		{DeviceUtilization, dev0, 0.5}, {DeviceKernels, dev0, 2}, {DeviceMemRuntime, dev0, 10}, {DeviceMemUsed, dev0, 20}, {DeviceMemTotal, dev0, 30},
		{LinkMessages, in0, 7}, {LinkBytes, in0, 28}, {LinkBandwidth, in0, 3.5}, {DeviceKernels, dev1, 0},
		{DeviceUtilSampled, dev0, 0.75}, {PipelineImbalance, at(attribute.String("ringactor.pipeline", "pipe")), 1.25},
	} {
		if v, ok := got[c.name][c.at]; !ok || v != c.want {
			t.Errorf("%s: %v (reported %v), want %v", c.name, v, ok, c.want)
		}
	}
	if _, ok := got[DeviceUtilization][dev1]; ok || len(got[DeviceUtilization]) != 1 {
		t.Errorf("utilization reported where unknown: %v", got[DeviceUtilization])
	}
	if len(got[DeviceUtilSampled]) != 1 {
		t.Errorf("sampled utilization reported where none: %v", got[DeviceUtilSampled])
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, rd); len(got[DeviceKernels]) != 0 {
		t.Errorf("reported after Unregister: %v", got)
	}
}

// A pipeline's instruments: latencies recorded per stage (kept for
// percentiles, and in the histograms), its running stages' counters and
// its account at each collection; nothing after Close.
func TestPipeline(t *testing.T) {
	rd, mp := newReader()
	status := func(i int) (rk.Status, bool) {
		if i == 1 {
			return rk.Status{}, false // no kernel
		}
		return rk.Status{Processed: 9, Dropped: 1, InQueued: []int{4}}, true
	}
	p, err := NewPipeline(mp.Meter("test"), "pipe", []Stage{{Name: "a", Device: 0}, {Name: "b", Device: 2}}, status,
		func() Account { return Account{Sent: 10, Delivered: 8, DeadLettered: 1, InFlight: 1} })
	if err != nil {
		t.Fatal(err)
	}
	p.Record(0, time.Millisecond, 2*time.Millisecond)
	p.Record(0, 3*time.Millisecond, 4*time.Millisecond)
	p.Record(1, time.Microsecond, time.Microsecond)
	// Of two samples, the median is the smaller (rank round(0.5·2) = 1).
	l := p.Latency(0)
	if l.Samples != 2 {
		t.Errorf("stage a's latency: %+v", l)
	}
	within(t, "stage a's wait p50", l.QueueWait.P50, time.Millisecond)
	within(t, "stage a's wait p99", l.QueueWait.P99, 3*time.Millisecond)
	within(t, "stage a's service p50", l.Service.P50, 2*time.Millisecond)
	within(t, "stage a's service p99", l.Service.P99, 4*time.Millisecond)
	got := collect(t, rd)
	a := at(attribute.String("ringactor.pipeline", "pipe"), attribute.String("ringactor.stage", "a"), attribute.Int("ringactor.device", 0))
	b := at(attribute.String("ringactor.pipeline", "pipe"), attribute.String("ringactor.stage", "b"), attribute.Int("ringactor.device", 2))
	pipe := at(attribute.String("ringactor.pipeline", "pipe"))
	for _, c := range []struct {
		name string
		at   attribute.Distinct
		want float64
	}{
		{"ringactor.stage.queue_wait", a, 2}, {"ringactor.stage.service_time", a, 2}, {"ringactor.stage.queue_wait", b, 1},
		{"ringactor.stage.processed", a, 9}, {"ringactor.stage.dropped", a, 1}, {"ringactor.stage.queue_depth", a, 4},
		{"ringactor.pipeline.sent", pipe, 10}, {"ringactor.pipeline.delivered", pipe, 8}, {"ringactor.pipeline.dead_lettered", pipe, 1}, {"ringactor.pipeline.in_flight", pipe, 1},
	} {
		if v, ok := got[c.name][c.at]; !ok || v != c.want {
			t.Errorf("%s: %v (reported %v), want %v", c.name, v, ok, c.want)
		}
	}
	if _, ok := got["ringactor.stage.processed"][b]; ok {
		t.Error("a stage without a kernel reported its counters")
	}
	p.Close()
	if got := collect(t, rd); len(got["ringactor.pipeline.sent"]) != 0 {
		t.Errorf("reported after Close: %v", got["ringactor.pipeline.sent"])
	}
}
