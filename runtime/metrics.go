package runtime

import (
	"github.com/ringactor/ringactor/runtime/internal/devreg"
	"github.com/ringactor/ringactor/runtime/internal/meter"
	"github.com/ringactor/ringactor/runtime/internal/telemetry"
	"github.com/ringactor/ringactor/runtime/metrics"
)

// Metrics is a snapshot of a runtime: every device, the traffic on each
// kind of link, and every running stage (metrics.Metrics, whose doc gives
// the fields). Runtime.Metrics takes one.
type Metrics = metrics.Metrics

// DeviceMetrics, LinkMetrics and StageMetrics are a snapshot's parts
// (package metrics).
type (
	DeviceMetrics = metrics.DeviceMetrics
	LinkMetrics   = metrics.LinkMetrics
	StageMetrics  = metrics.StageMetrics
)

// Percentiles are latency quantiles; StageLatency summarises one stage's
// sampled messages (package metrics gives the fields).
type (
	Percentiles  = metrics.Percentiles
	StageLatency = metrics.StageLatency
)

// Metrics takes a snapshot of the runtime's devices, links and stages.
// Rates and utilization are over the time since the previous call (since
// New, the first time). It is safe for concurrent use; concurrent callers
// share one interval.
func (rt *Runtime) Metrics() Metrics { return rt.meter.Take(rt.reading) }

// reading reads what a snapshot is computed from: the devices, every open
// pipeline's links and running stages, and the backend's samples.
func (rt *Runtime) reading() meter.Reading {
	var b meter.Backend
	if mux, ok := rt.backend.(*devreg.Mux); ok {
		b = mux
	}
	return meter.Read(rt.reg.Devices(), b, func(in *meter.Reading) {
		for _, p := range rt.openPipelines() {
			for _, s := range p.stages {
				in.Link(s.ingressLink, s.inPlacement)
				for _, e := range s.outs {
					in.Link(e.link, e.pl)
				}
				if s.egress != nil {
					in.Link(s.egress.link, s.egress.pl)
				}
				if s.kernel != nil {
					in.Stages = append(in.Stages, meter.StageReading{Key: s, Pipeline: p.spec.Name, Stage: s.spec.Name, Device: s.spec.Device, Status: s.kernel.Status()})
				}
			}
		}
	})
}

// Metric names the runtime exports through its MeterProvider (listed with
// their attributes in docs/METRICS.md). The pipeline's own metrics
// (ringactor.stage.*, ringactor.pipeline.*) are registered per pipeline.
const (
	MetricDeviceUtilization = metrics.DeviceUtilization
	MetricDeviceKernels     = metrics.DeviceKernels
	MetricDeviceMemRuntime  = metrics.DeviceMemRuntime
	MetricDeviceMemUsed     = metrics.DeviceMemUsed
	MetricDeviceMemTotal    = metrics.DeviceMemTotal
	MetricLinkMessages      = metrics.LinkMessages
	MetricLinkBytes         = metrics.LinkBytes
	MetricLinkBandwidth     = metrics.LinkBandwidth
)

// registerMetrics exports each device's snapshot as OpenTelemetry
// metrics, read when the reader collects.
func (rt *Runtime) registerMetrics() (err error) {
	rt.metricsReg, err = meter.RegisterDevices(telemetry.Meter(rt.mp, telemetry.Scope), func() meter.Metrics { return rt.otelMeter.Take(rt.reading) })
	return err
}
