package meter

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// Stage is what a pipeline's metrics say of one of its stages.
type Stage struct {
	Name   string
	Device int
}

// Account is the part of a pipeline's message account its metrics
// report, read together (docs/ARCHITECTURE.md §6).
type Account struct {
	Sent, Delivered, DeadLettered, InFlight uint64
}

// Pipeline is one pipeline's metrics (docs/METRICS.md, "Pipelines"): its
// stages' sampled latencies, kept for percentiles and recorded in
// histograms, and the counters read when the reader collects.
type Pipeline struct {
	attrs         []attribute.Set // stage i's: pipeline, stage, device
	lat           []Latencies
	wait, service metric.Float64Histogram
	reg           metric.Registration
}

// NewPipeline registers pipeline's instruments with m. At each
// collection it reads status(i) for each stage i (false: the stage runs
// no kernel, and reports nothing) and then account.
func NewPipeline(m metric.Meter, pipeline string, stages []Stage, status func(i int) (rk.Status, bool), account func() Account) (*Pipeline, error) {
	p := &Pipeline{attrs: make([]attribute.Set, len(stages)), lat: make([]Latencies, len(stages))}
	for i, s := range stages {
		p.attrs[i] = attribute.NewSet(attribute.String("ringactor.pipeline", pipeline), attribute.String("ringactor.stage", s.Name), attribute.Int("ringactor.device", s.Device))
	}
	var err error
	if p.wait, err = m.Float64Histogram("ringactor.stage.queue_wait", metric.WithUnit("s"),
		metric.WithDescription("time sampled messages waited in a stage's in-link")); err != nil {
		return nil, err
	}
	if p.service, err = m.Float64Histogram("ringactor.stage.service_time", metric.WithUnit("s"),
		metric.WithDescription("time a stage function took on sampled messages")); err != nil {
		return nil, err
	}
	processed, err := m.Int64ObservableCounter("ringactor.stage.processed", metric.WithUnit("{message}"), metric.WithDescription("messages a stage passed on"))
	if err != nil {
		return nil, err
	}
	dropped, err := m.Int64ObservableCounter("ringactor.stage.dropped", metric.WithUnit("{message}"), metric.WithDescription("messages a stage dead-lettered"))
	if err != nil {
		return nil, err
	}
	depth, err := m.Int64ObservableGauge("ringactor.stage.queue_depth", metric.WithUnit("{message}"), metric.WithDescription("messages queued in a stage's in-links"))
	if err != nil {
		return nil, err
	}
	// The pipeline's account (docs/ARCHITECTURE.md §6): sent = delivered +
	// dead_lettered + in_flight, read together so the four agree.
	sent, err := m.Int64ObservableCounter("ringactor.pipeline.sent", metric.WithUnit("{message}"), metric.WithDescription("messages that entered the pipeline"))
	if err != nil {
		return nil, err
	}
	delivered, err := m.Int64ObservableCounter("ringactor.pipeline.delivered", metric.WithUnit("{message}"), metric.WithDescription("results delivered"))
	if err != nil {
		return nil, err
	}
	dead, err := m.Int64ObservableCounter("ringactor.pipeline.dead_lettered", metric.WithUnit("{message}"), metric.WithDescription("messages dead-lettered, for any reason"))
	if err != nil {
		return nil, err
	}
	inFlight, err := m.Int64ObservableGauge("ringactor.pipeline.in_flight", metric.WithUnit("{message}"), metric.WithDescription("messages sent and not yet delivered or dead-lettered"))
	if err != nil {
		return nil, err
	}
	pattrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("ringactor.pipeline", pipeline)))
	if p.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for i := range stages {
			st, ok := status(i)
			if !ok {
				continue
			}
			opt := metric.WithAttributeSet(p.attrs[i])
			o.ObserveInt64(processed, int64(st.Processed), opt)
			o.ObserveInt64(dropped, int64(st.Dropped), opt)
			o.ObserveInt64(depth, int64(st.Queued()), opt)
		}
		a := account()
		o.ObserveInt64(sent, int64(a.Sent), pattrs)
		o.ObserveInt64(delivered, int64(a.Delivered), pattrs)
		o.ObserveInt64(dead, int64(a.DeadLettered), pattrs)
		o.ObserveInt64(inFlight, int64(a.InFlight), pattrs)
		return nil
	}, processed, dropped, depth, sent, delivered, dead, inFlight); err != nil {
		return nil, err
	}
	return p, nil
}

// Record counts a sampled message's queue wait and service time at
// stage i.
func (p *Pipeline) Record(i int, wait, service time.Duration) {
	p.lat[i].Add(wait, service)
	opt := metric.WithAttributeSet(p.attrs[i])
	ctx := context.Background()
	p.wait.Record(ctx, wait.Seconds(), opt)
	p.service.Record(ctx, service.Seconds(), opt)
}

// Latency summarises stage i's sampled messages.
func (p *Pipeline) Latency(i int) Latency { return p.lat[i].Summary() }

// Close stops the counters' reports.
func (p *Pipeline) Close() { p.reg.Unregister() }
