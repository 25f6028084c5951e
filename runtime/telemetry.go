package runtime

import (
	"context"
	"errors"
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
// per sampled message (a root span from ingress to its last copy's end,
// parented on the sender's span when it had one) with one child span per
// stage visited (the copies a RouteAll stage makes share the root), all
// with the kernels' timestamps.
//
// A message's events arrive from several goroutines (each stage's record
// pump, each exit's egress pump, senders) in any order, and in a graph
// neither the number of copies nor their paths are known in advance. So
// the trace counts tokens: each event ends one token of the stage the
// message came from (0: the host) and a stage's record makes tokens for
// the copies it sent on (len(To) for RouteAll, else 1; an exit's one
// goes to its egress). The root starts with one host token and ends when
// every stage's tokens made equal those ended: the last event has
// arrived, whatever the order.
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
	ctx  context.Context // holds the root span
	root trace.Span
	// open[j] is stage j's tokens made minus those ended (j = 0: the
	// host); unsettled counts the j where that is not 0.
	open      []int32
	unsettled int
	last      time.Time   // the latest end of a copy
	stageEnd  time.Time   // the latest end of a stage span: the root ends no earlier
	dead      *DeadLetter // the first copy to die, if one did
}

// settle adds d to stage j's open tokens.
func (m *msgTrace) settle(j uint32, d int32) {
	if int(j) >= len(m.open) || d == 0 {
		return // not a stage of this pipeline: nothing it could settle
	}
	was := m.open[j]
	m.open[j] += d
	switch {
	case was == 0:
		m.unsettled++
	case m.open[j] == 0:
		m.unsettled--
	}
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
	m := &msgTrace{ctx: ctx, root: root, open: make([]int32, len(t.stages)+1)}
	m.settle(0, 1) // the host's token: the message itself
	t.mu.Lock()
	t.msgs[id] = m
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
	t.mu.Unlock()
	if m == nil {
		return // not traced here (begun elsewhere: a stage group's thief)
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
	t.mu.Lock()
	if r.Done.After(m.stageEnd) {
		m.stageEnd = r.Done
	}
	m.settle(r.From, -1)
	m.settle(s.id(), int32(s.fanout())) // the copies it sent on
	t.finishLocked(r.ID, m)
	t.mu.Unlock()
}

// end ends one copy of a message, delivered (dead == nil) or
// dead-lettered, that came from stage id from (0: the host); the root
// span ends with the last.
func (t *telemetry) end(id uint64, from uint32, when time.Time, dead *DeadLetter) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.msgs[id]
	if m == nil {
		return
	}
	m.settle(from, -1)
	if when.After(m.last) {
		m.last = when
	}
	if dead != nil && m.dead == nil {
		d := *dead
		m.dead = &d
	}
	t.finishLocked(id, m)
}

// finishLocked ends m's root once every token is settled. t.mu is held.
func (t *telemetry) finishLocked(id uint64, m *msgTrace) {
	if m.unsettled != 0 || m.last.IsZero() || t.msgs[id] != m {
		return
	}
	delete(t.msgs, id)
	m.endRoot()
}

// endRoot ends the root span at the latest end of the message's copies
// and stage spans (device and host clocks may differ by a little), with
// the error status and reason when a copy died.
func (m *msgTrace) endRoot() {
	if d := m.dead; d != nil {
		m.root.SetStatus(codes.Error, fmt.Sprintf("dead-lettered at stage %q: %s", d.Stage, d.Reason))
		m.root.SetAttributes(attribute.String("ringactor.dead_letter.reason", d.Reason.String()))
	}
	end := m.last
	if m.stageEnd.After(end) {
		end = m.stageEnd
	}
	if end.IsZero() {
		m.root.End()
		return
	}
	m.root.End(trace.WithTimestamp(end))
}

func (t *telemetry) close() {
	if t.reg != nil {
		t.reg.Unregister()
	}
	// Messages still open at close (shut down mid-flight) end now.
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, m := range t.msgs {
		if m.dead == nil { // its end was not seen (a close cut short)
			m.dead = &DeadLetter{ID: id, Reason: ReasonPipelineClosed, Err: errors.New("the pipeline closed with the message (or a copy of it) in flight")}
		}
		m.endRoot()
		delete(t.msgs, id)
	}
}
