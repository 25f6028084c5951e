package meter

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ringactor/ringactor/runtime/metrics"
)

// The names of the runtime's device and link metrics (package metrics').
const (
	DeviceUtilization = metrics.DeviceUtilization
	DeviceUtilSampled = metrics.DeviceUtilizationSampled
	PipelineImbalance = metrics.PipelineImbalance
	DeviceKernels     = metrics.DeviceKernels
	DeviceMemRuntime  = metrics.DeviceMemRuntime
	DeviceMemUsed     = metrics.DeviceMemUsed
	DeviceMemTotal    = metrics.DeviceMemTotal
	LinkMessages      = metrics.LinkMessages
	LinkBytes         = metrics.LinkBytes
	LinkBandwidth     = metrics.LinkBandwidth
)

// RegisterDevices exports each device's share of a snapshot, taken by
// snap when the reader collects, as m's instruments (docs/METRICS.md).
// Unregister the registration to stop.
func RegisterDevices(m metric.Meter, snap func() Metrics) (metric.Registration, error) {
	util, err := m.Float64ObservableGauge(DeviceUtilization, metric.WithUnit("1"),
		metric.WithDescription("fraction of the time since the last collection the device was busy: its ring kernels' busy time (the backend's sample where they do not count it)"))
	if err != nil {
		return nil, err
	}
	sampled, err := m.Float64ObservableGauge(DeviceUtilSampled, metric.WithUnit("1"),
		metric.WithDescription("the backend sampler's utilization of the device (NVML's on a GPU, which counts a spinning ring kernel as busy)"))
	if err != nil {
		return nil, err
	}
	imbalance, err := m.Float64ObservableGauge(PipelineImbalance, metric.WithUnit("1"),
		metric.WithDescription("the most work any device did for the pipeline over the mean of the devices its stages run on (busy time where measured, else messages processed; 1 is even)"))
	if err != nil {
		return nil, err
	}
	kernels, err := m.Int64ObservableGauge(DeviceKernels, metric.WithUnit("{kernel}"), metric.WithDescription("ring kernels running on the device"))
	if err != nil {
		return nil, err
	}
	memRT, err := m.Int64ObservableGauge(DeviceMemRuntime, metric.WithUnit("By"), metric.WithDescription("memory the runtime holds on the device: link queues, control blocks, trace rings"))
	if err != nil {
		return nil, err
	}
	memUsed, err := m.Int64ObservableGauge(DeviceMemUsed, metric.WithUnit("By"), metric.WithDescription("memory in use on the device, by anyone"))
	if err != nil {
		return nil, err
	}
	memTotal, err := m.Int64ObservableGauge(DeviceMemTotal, metric.WithUnit("By"), metric.WithDescription("the device's memory"))
	if err != nil {
		return nil, err
	}
	msgs, err := m.Int64ObservableCounter(LinkMessages, metric.WithUnit("{message}"), metric.WithDescription("messages moved over the device's links of one kind"))
	if err != nil {
		return nil, err
	}
	bytes, err := m.Int64ObservableCounter(LinkBytes, metric.WithUnit("By"), metric.WithDescription("bytes moved over the device's links of one kind"))
	if err != nil {
		return nil, err
	}
	bw, err := m.Float64ObservableGauge(LinkBandwidth, metric.WithUnit("By/s"), metric.WithDescription("bytes per second over the device's links of one kind, since the last collection"))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		m := snap()
		for _, p := range m.Pipelines {
			o.ObserveFloat64(imbalance, p.Imbalance, metric.WithAttributes(attribute.String("ringactor.pipeline", p.Pipeline)))
		}
		for _, d := range m.Devices {
			base := []attribute.KeyValue{attribute.Int("ringactor.device", d.Device), attribute.String("ringactor.device.kind", d.Kind), attribute.String("ringactor.device.name", d.Name)}
			opt := metric.WithAttributes(base...)
			if d.Utilization >= 0 {
				o.ObserveFloat64(util, d.Utilization, opt)
			}
			if d.SampledUtilization >= 0 {
				o.ObserveFloat64(sampled, d.SampledUtilization, opt)
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
	}, util, sampled, imbalance, kernels, memRT, memUsed, memTotal, msgs, bytes, bw)
}
