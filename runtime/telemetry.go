package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// Instrumentation scope of ringactor's spans and metrics.
const scope = "github.com/ringactor/ringactor/runtime"

// telemetry turns kernels' trace records into spans and metrics: one trace
// per sampled message (a root span from ingress to delivery, parented on
// the sender's span when it had one) with one child span per stage, all
// with the kernels' timestamps.
type telemetry struct {
	tracer   trace.Tracer
	pipeline string
	stages   []*stage

	mu   sync.Mutex
	msgs map[uint64]*msgTrace

	wait, service metric.Float64Histogram
	reg           metric.Registration
}

type msgTrace struct {
	ctx        context.Context // holds the root span
	root       trace.Span
	first      int // index of the stage it entered at
	have, want int // stage spans made, and expected (-1 until it ends)
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, pipeline string, stages []*stage, account func() PipelineStats) (*telemetry, error) {
	t := &telemetry{tracer: tp.Tracer(scope), pipeline: pipeline, stages: stages, msgs: map[uint64]*msgTrace{}}
	m := mp.Meter(scope)
	var err error
	if t.wait, err = m.Float64Histogram("ringactor.stage.queue_wait", metric.WithUnit("s"),
		metric.WithDescription("time sampled messages waited in a stage's in-link")); err != nil {
		return nil, err
	}
	if t.service, err = m.Float64Histogram("ringactor.stage.service_time", metric.WithUnit("s"),
		metric.WithDescription("time a stage function took on sampled messages")); err != nil {
		return nil, err
	}
	processed, err := m.Int64ObservableCounter("ringactor.stage.processed", metric.WithDescription("messages a stage passed on"))
	if err != nil {
		return nil, err
	}
	dropped, err := m.Int64ObservableCounter("ringactor.stage.dropped", metric.WithDescription("messages a stage dead-lettered"))
	if err != nil {
		return nil, err
	}
	depth, err := m.Int64ObservableGauge("ringactor.stage.queue_depth", metric.WithDescription("messages queued in a stage's in-links"))
	if err != nil {
		return nil, err
	}
	// The pipeline's account (docs/ARCHITECTURE.md §6): sent = delivered +
	// dead_lettered + in_flight, read together so the four agree.
	sent, err := m.Int64ObservableCounter("ringactor.pipeline.sent", metric.WithDescription("messages that entered the pipeline"))
	if err != nil {
		return nil, err
	}
	delivered, err := m.Int64ObservableCounter("ringactor.pipeline.delivered", metric.WithDescription("results delivered"))
	if err != nil {
		return nil, err
	}
	dead, err := m.Int64ObservableCounter("ringactor.pipeline.dead_lettered", metric.WithDescription("messages dead-lettered, for any reason"))
	if err != nil {
		return nil, err
	}
	inFlight, err := m.Int64ObservableGauge("ringactor.pipeline.in_flight", metric.WithDescription("messages sent and not yet delivered or dead-lettered"))
	if err != nil {
		return nil, err
	}
	pattrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("ringactor.pipeline", pipeline)))
	t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range stages {
			if s.kernel == nil {
				continue
			}
			st := s.kernel.Status()
			opt := metric.WithAttributeSet(s.attrs)
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
	}, processed, dropped, depth, sent, delivered, dead, inFlight)
	return t, err
}

// begin opens the trace of a sampled message entering at stage first.
func (t *telemetry) begin(parent context.Context, id uint64, first int, at time.Time) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, root := t.tracer.Start(parent, "ringactor.message", trace.WithTimestamp(at), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.Int64("ringactor.message.id", int64(id)), attribute.String("ringactor.pipeline", t.pipeline)))
	t.mu.Lock()
	t.msgs[id] = &msgTrace{ctx: ctx, root: root, first: first, want: -1}
	t.mu.Unlock()
}

// record turns one stage's trace record into its span and metrics.
func (t *telemetry) record(s *stage, r rk.TraceRecord) {
	wait, service := r.QueueWait(), r.Service()
	s.lat.add(wait, service)
	opt := metric.WithAttributeSet(s.attrs)
	ctx := context.Background()
	t.wait.Record(ctx, wait.Seconds(), opt)
	t.service.Record(ctx, service.Seconds(), opt)

	t.mu.Lock()
	m := t.msgs[r.ID]
	if m != nil {
		m.have++
	}
	t.mu.Unlock()
	if m == nil {
		return // begun before tracing was set up, or already complete
	}
	start := r.Enqueued
	if start.IsZero() {
		start = r.Dequeued
	}
	_, sp := t.tracer.Start(m.ctx, "stage "+s.spec.Name, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("ringactor.stage", s.spec.Name),
			attribute.Int("ringactor.device", s.spec.Device),
			attribute.Int64("ringactor.message.id", int64(r.ID)),
			attribute.Int64("ringactor.queue_wait_ns", wait.Nanoseconds()),
			attribute.Int64("ringactor.service_ns", service.Nanoseconds()),
		))
	sp.End(trace.WithTimestamp(r.Done))
	t.maybeForget(r.ID, m)
}

// end closes a message's root span when it was delivered (dead == nil) or
// dead-lettered at stage index at.
func (t *telemetry) end(id uint64, at int, when time.Time, dead *DeadLetter) {
	t.mu.Lock()
	m := t.msgs[id]
	if m != nil {
		if dead == nil {
			m.want = len(t.stages) - m.first
		} else {
			m.want = max(at-m.first, 0)
		}
	}
	t.mu.Unlock()
	if m == nil {
		return
	}
	if dead != nil {
		m.root.SetStatus(codes.Error, fmt.Sprintf("dead-lettered at stage %q: %s", dead.Stage, dead.Reason))
		m.root.SetAttributes(attribute.String("ringactor.dead_letter.reason", dead.Reason))
	}
	m.root.End(trace.WithTimestamp(when))
	t.maybeForget(id, m)
}

func (t *telemetry) maybeForget(id uint64, m *msgTrace) {
	t.mu.Lock()
	if m.want >= 0 && m.have >= m.want && t.msgs[id] == m {
		delete(t.msgs, id)
	}
	t.mu.Unlock()
}

func (t *telemetry) close() {
	if t.reg != nil {
		t.reg.Unregister()
	}
	// Messages still open at close (shut down mid-flight) end now.
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, m := range t.msgs {
		if m.want < 0 {
			m.root.SetStatus(codes.Error, "pipeline closed with the message in flight")
			m.root.End()
		}
		delete(t.msgs, id)
	}
}
