package spans

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/msgconv"
)

// Stage is what a stage's spans say of it.
type Stage struct {
	Name   string
	Device int
	// Fanout is how many messages each of its results makes downstream:
	// a copy per stage in To under RouteAll, else one.
	Fanout int
}

// Death is a dead copy of a message, as its root span reports it.
type Death struct {
	Stage  string // the stage that dropped it
	Reason string // the dead letter's reason, as its String says it
}

// Tracer keeps the traces of one pipeline's sampled messages open until
// their last copy ends.
type Tracer struct {
	tracer   trace.Tracer
	pipeline string
	stages   []Stage

	mu   sync.Mutex
	msgs map[uint64]*message
}

// message is one sampled message's trace.
type message struct {
	ctx  context.Context // holds the root span
	root trace.Span
	tokens
	last     time.Time // the latest end of a copy
	stageEnd time.Time // the latest end of a stage span: the root ends no earlier
	dead     *Death    // the first copy to die, if one did
}

// New makes the tracer of pipeline's messages, whose stages (ids 1 to
// len(stages)) are stages.
func New(tracer trace.Tracer, pipeline string, stages []Stage) *Tracer {
	return &Tracer{tracer: tracer, pipeline: pipeline, stages: stages, msgs: map[uint64]*message{}}
}

// Begin opens the trace of sampled message id, entering at at, under
// parent's span where it has one.
func (t *Tracer) Begin(parent context.Context, id uint64, at time.Time) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, root := t.tracer.Start(parent, msgconv.SpanName(msgconv.OpSend, t.pipeline), trace.WithTimestamp(at), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(msgconv.Send(msgconv.OpSend, t.pipeline, msgconv.ID(id), attribute.String("ringactor.pipeline", t.pipeline))...))
	m := &message{ctx: ctx, root: root, tokens: newTokens(len(t.stages))}
	m.settle(0, 1) // the host's token: the message itself
	t.mu.Lock()
	t.msgs[id] = m
	t.mu.Unlock()
}

// Record turns stage id stage's trace record into its span. A record of
// a message not begun here (a stage group's thief took it) is ignored.
func (t *Tracer) Record(stage uint32, r rk.TraceRecord) {
	t.mu.Lock()
	m := t.msgs[r.ID]
	t.mu.Unlock()
	if m == nil {
		return // not traced here (begun elsewhere: a stage group's thief)
	}
	s := t.stages[stage-1]
	start := r.Enqueued
	if start.IsZero() {
		start = r.Dequeued
	}
	dest := msgconv.Stage(t.pipeline, s.Name)
	_, sp := t.tracer.Start(m.ctx, msgconv.SpanName(msgconv.OpProcess, dest), trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(msgconv.Process(msgconv.OpProcess, dest, msgconv.ID(r.ID),
			attribute.String("ringactor.stage", s.Name),
			attribute.Int("ringactor.device", s.Device),
			attribute.Int64("ringactor.queue_wait_ns", r.QueueWait().Nanoseconds()),
			attribute.Int64("ringactor.service_ns", r.Service().Nanoseconds()),
		)...))
	sp.End(trace.WithTimestamp(r.Done))
	t.mu.Lock()
	if r.Done.After(m.stageEnd) {
		m.stageEnd = r.Done
	}
	m.settle(r.From, -1)
	m.settle(stage, int32(s.Fanout)) // the copies it sent on
	t.finishLocked(r.ID, m)
	t.mu.Unlock()
}

// End ends one copy of message id, delivered (dead == nil) or
// dead-lettered, that came from stage id from (0: the host) at when; the
// root span ends with the last.
func (t *Tracer) End(id uint64, from uint32, when time.Time, dead *Death) {
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
func (t *Tracer) finishLocked(id uint64, m *message) {
	if !m.settled() || m.last.IsZero() || t.msgs[id] != m {
		return
	}
	delete(t.msgs, id)
	m.endRoot()
}

// endRoot ends the root span at the latest end of the message's copies
// and stage spans (device and host clocks may differ by a little), with
// the error status and reason when a copy died.
func (m *message) endRoot() {
	if d := m.dead; d != nil {
		m.root.SetStatus(codes.Error, fmt.Sprintf("dead-lettered at stage %q: %s", d.Stage, d.Reason))
		m.root.SetAttributes(attribute.String("ringactor.dead_letter.reason", d.Reason), msgconv.ErrorType(d.Reason))
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

// Close ends the traces still open (the pipeline shut down mid-flight):
// those whose end was not seen as dead with closed.
func (t *Tracer) Close(closed Death) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, m := range t.msgs {
		if m.dead == nil { // its end was not seen (a close cut short)
			d := closed
			m.dead = &d
		}
		m.endRoot()
		delete(t.msgs, id)
	}
}
