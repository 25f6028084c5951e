package collective

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ringactor/ringactor/internal/ctxcheck"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/msgconv"
	"github.com/ringactor/ringactor/runtime/internal/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The actor-level barrier: participants (goroutines, actors, stage
// drivers) send Arrive{Participant, Phase} to the barrier actor, which
// answers Release{Phase} to every participant of a phase once all have
// arrived. A barrier with ring kernels among its participants
// (BarrierSpec.Stages) is package barrier's flag array instead, which the
// host participants join through Await (flagbarrier.go).

// BarrierSpec describes a barrier.
type BarrierSpec struct {
	// Name names the barrier's actor ("barrier/<Name>") and its spans.
	Name string
	// Participants are the names that may arrive, each once per phase:
	// host participants (goroutines, actors).
	Participants []string
	// Stages are ring kernels taking part (StageParticipant): with any,
	// the barrier is a flag array the kernels arrive at and wait on, on
	// their devices, and the host participants with them (Await); Mark
	// sets each kernel's phase boundary in its stream of messages. Such a
	// barrier has no actor (PID is nil), and its phases must grow.
	Stages []StageParticipant
	// Timeout bounds a phase from its first arrival: a phase not complete
	// by then is abandoned and its waiters get a *BarrierTimeoutError
	// naming who is missing. 0 waits for ever (Await's context still
	// bounds each wait).
	Timeout time.Duration
}

// Arrive tells the barrier actor that Participant reached Phase. Send it
// with a sender (RequestFuture, or Request from an actor): the answer is a
// Release, to that sender, once every participant arrived at Phase, or at
// once with Release.Err set for an arrival the barrier refuses (unknown
// participant, a second arrival in the phase, a phase already over, or the
// participant still waiting in another phase).
type Arrive struct {
	Participant string
	Phase       uint64

	span trace.SpanContext // the waiter's span (Await), linked from the phase's
}

// Release answers Arrive. Err is nil when every participant arrived at
// Phase; otherwise it says why the wait ended: a *BarrierTimeoutError, an
// error wrapping ErrBadArrival, or ErrBarrierClosed.
type Release struct {
	Phase uint64
	Err   error
}

var (
	// ErrBadBarrier: the BarrierSpec cannot make a barrier.
	ErrBadBarrier = errors.New("ringactor: bad barrier")
	// ErrBadArrival: the barrier refused an Arrive.
	ErrBadArrival = errors.New("ringactor: bad barrier arrival")
	// ErrBarrierTimeout: a phase did not complete within the barrier's
	// Timeout. The error is a *BarrierTimeoutError.
	ErrBarrierTimeout = errors.New("ringactor: barrier phase timed out")
	// ErrBarrierClosed: the barrier was closed before the phase completed.
	ErrBarrierClosed = errors.New("ringactor: barrier closed")
)

// BarrierTimeoutError ends the waits of a phase abandoned after the
// barrier's Timeout; it matches ErrBarrierTimeout.
type BarrierTimeoutError struct {
	Barrier string
	Phase   uint64
	Timeout time.Duration
	// Missing are the participants that had not arrived, in spec order.
	Missing []string
}

func (e *BarrierTimeoutError) Error() string {
	return fmt.Sprintf("ringactor: barrier %q phase %d timed out after %v waiting for %s",
		e.Barrier, e.Phase, e.Timeout, strings.Join(e.Missing, ", "))
}

// Is reports ErrBarrierTimeout.
func (e *BarrierTimeoutError) Is(target error) bool { return target == ErrBarrierTimeout }

// Barrier is an actor-level barrier made by NewBarrier.
type Barrier struct {
	rt     *ra.Runtime
	spec   BarrierSpec
	pid    *actor.PID
	tracer trace.Tracer
	closed atomic.Bool
	fb     *flagBarrier // with Stages: the flag array; no actor
}

// NewBarrier spawns a barrier actor for spec in the runtime's actor system.
// It takes no ctx: it spawns one local actor and waits for nothing (the
// waits are Await's, which takes one).
func NewBarrier(rt *ra.Runtime, spec BarrierSpec) (*Barrier, error) {
	if spec.Name == "" {
		return nil, fmt.Errorf("%w: no name", ErrBadBarrier)
	}
	if len(spec.Participants)+len(spec.Stages) == 0 {
		return nil, fmt.Errorf("%w: %q has no participants", ErrBadBarrier, spec.Name)
	}
	if spec.Timeout < 0 {
		return nil, fmt.Errorf("%w: %q has a negative timeout %v", ErrBadBarrier, spec.Name, spec.Timeout)
	}
	index := make(map[string]int, len(spec.Participants))
	for i, p := range spec.Participants {
		if p == "" {
			return nil, fmt.Errorf("%w: %q: participant %d has no name", ErrBadBarrier, spec.Name, i)
		}
		if _, dup := index[p]; dup {
			return nil, fmt.Errorf("%w: %q names participant %q twice", ErrBadBarrier, spec.Name, p)
		}
		index[p] = i
	}
	spec.Participants, spec.Stages = slices.Clone(spec.Participants), slices.Clone(spec.Stages)
	b := &Barrier{rt: rt, spec: spec, tracer: telemetry.Tracer(rt.TracerProvider(), scope)}
	if len(spec.Stages) > 0 {
		fb, err := newFlagBarrier(rt, b)
		if err != nil {
			return nil, err
		}
		b.fb = fb
		return b, nil
	}
	props := actor.PropsFromProducer(func() actor.Actor {
		return &barrierActor{b: b, index: index, phases: map[uint64]*barrierPhase{}, waiting: map[int]uint64{}}
	})
	pid, err := rt.System().Root.SpawnNamed(props, "barrier/"+spec.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadBarrier, spec.Name, err)
	}
	b.pid = pid
	return b, nil
}

// PID is the barrier actor's: send it Arrive (nil for a barrier with
// Stages, which has no actor: use Await).
func (b *Barrier) PID() *actor.PID { return b.pid }

// Spec is the barrier's spec.
func (b *Barrier) Spec() BarrierSpec {
	s := b.spec
	s.Participants, s.Stages = slices.Clone(s.Participants), slices.Clone(s.Stages)
	return s
}

// Await arrives as participant at phase and waits for the release: nil
// once every participant arrived, the Release's error otherwise. When ctx
// ends first, Await withdraws the arrival (unless the phase completed
// meanwhile) and returns ctx's error. Each call records a span "arrive
// barrier/<name>" (kind producer, a child of ctx's span) with the
// messaging attributes (message id: the phase), the participant, the
// phase and the wait; the barrier's actor records "process
// barrier/<name>" (kind consumer) per phase, linked to the waits.
//
// With Stages (a flag array), phases must grow for each participant, an
// arrival cannot be withdrawn (after ctx ends it stands), the Timeout
// runs from the phase's first sight on the host (Mark, Await or Wait),
// and "process barrier/<name>" ends with the phase's first observed end;
// each kernel's wait is an "arrive barrier/<name>" span from Mark to then.
func (b *Barrier) Await(ctx context.Context, participant string, phase uint64) error {
	if err := ctxcheck.NotNil(ctx, "Barrier.Await"); err != nil {
		return err
	}
	start := time.Now()
	dest := msgconv.Barrier(b.spec.Name)
	ctx, span := b.tracer.Start(ctx, msgconv.SpanName(msgconv.OpArrive, dest), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(b.arriveAttrs(participant, phase)...))
	var err error
	if b.fb != nil {
		err = b.fb.await(ctx, participant, phase)
	} else {
		err = b.await(ctx, participant, phase, span.SpanContext())
	}
	span.SetAttributes(attribute.Int64("ringactor.barrier.wait_ns", time.Since(start).Nanoseconds()))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return err
}

// arriveAttrs are an "arrive barrier/<name>" span's attributes.
func (b *Barrier) arriveAttrs(participant string, phase uint64) []attribute.KeyValue {
	return msgconv.Send(msgconv.OpArrive, msgconv.Barrier(b.spec.Name), msgconv.ID(phase),
		attribute.String("ringactor.barrier", b.spec.Name),
		attribute.String("ringactor.barrier.participant", participant),
		attribute.Int64("ringactor.barrier.phase", int64(phase)),
	)
}

func (b *Barrier) await(ctx context.Context, participant string, phase uint64, sc trace.SpanContext) error {
	if b.closed.Load() {
		return fmt.Errorf("%w: %q", ErrBarrierClosed, b.spec.Name)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ringactor: barrier %q: %s did not arrive at phase %d: %w", b.spec.Name, participant, phase, err)
	}
	root := b.rt.System().Root
	// No future timeout: ctx bounds the wait, by stopping the future.
	f := root.RequestFuture(b.pid, Arrive{Participant: participant, Phase: phase, span: sc}, -1)
	stop := context.AfterFunc(ctx, func() { root.Stop(f.PID()) })
	res, err := f.Result()
	stop()
	if res == nil && err == nil { // stopped by ctx
		root.Send(b.pid, barrierWithdraw{participant: participant, phase: phase, sender: f.PID()})
		return fmt.Errorf("ringactor: barrier %q: %s gave up waiting at phase %d: %w", b.spec.Name, participant, phase, ctx.Err())
	}
	if errors.Is(err, actor.ErrDeadLetter) {
		return fmt.Errorf("%w: %q", ErrBarrierClosed, b.spec.Name)
	}
	if err != nil {
		return fmt.Errorf("ringactor: barrier %q: %w", b.spec.Name, err)
	}
	switch r := res.(type) {
	case Release:
		return r.Err
	case *Release:
		if r != nil {
			return r.Err
		}
	}
	return fmt.Errorf("ringactor: barrier %q answered %T, not a Release", b.spec.Name, res)
}

// Close stops the barrier actor; waits in progress end with
// ErrBarrierClosed. Close the barrier before its runtime. A flag array
// (Stages) is given back once its kernels have ended: close their
// pipelines too.
func (b *Barrier) Close() {
	if !b.closed.CompareAndSwap(false, true) {
		return
	}
	if b.fb != nil {
		b.fb.close()
		return
	}
	b.rt.System().Root.StopFuture(b.pid).Wait()
}

// barrierTimeout is the phase timer's message to the actor.
type barrierTimeout struct{ phase, seq uint64 }

// barrierWithdraw takes back an arrival whose Await gave up.
type barrierWithdraw struct {
	participant string
	phase       uint64
	sender      *actor.PID
}

type barrierActor struct {
	b       *Barrier
	index   map[string]int
	phases  map[uint64]*barrierPhase // open phases
	waiting map[int]uint64           // participant -> the open phase it arrived in
	next    uint64                   // phases below it are over, unless still open
	seq     uint64
}

type barrierPhase struct {
	phase   uint64
	seq     uint64
	arrived []bool
	senders []*actor.PID
	count   int
	start   time.Time
	span    trace.Span
	timer   *time.Timer
}

func (a *barrierActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case Arrive:
		a.arrive(c, m)
	case *Arrive:
		if m == nil {
			a.refuse(c, 0, fmt.Errorf("%w: nil *Arrive", ErrBadArrival))
			return
		}
		a.arrive(c, *m)
	case barrierTimeout:
		if ph := a.phases[m.phase]; ph != nil && ph.seq == m.seq {
			a.abandon(c, ph)
		}
	case barrierWithdraw:
		a.withdraw(m)
	case *actor.Stopping:
		for _, ph := range a.phases {
			a.finish(c, ph, fmt.Errorf("%w: %q", ErrBarrierClosed, a.b.spec.Name), "barrier closed")
		}
	}
}

func (a *barrierActor) refuse(c actor.Context, phase uint64, err error) {
	if c.Sender() != nil {
		c.Respond(Release{Phase: phase, Err: err})
	}
}

func (a *barrierActor) arrive(c actor.Context, m Arrive) {
	name := a.b.spec.Name
	i, ok := a.index[m.Participant]
	if !ok {
		a.refuse(c, m.Phase, fmt.Errorf("%w: barrier %q has no participant %q (it has %s)",
			ErrBadArrival, name, m.Participant, strings.Join(a.b.spec.Participants, ", ")))
		return
	}
	if q, ok := a.waiting[i]; ok {
		if q == m.Phase {
			a.refuse(c, m.Phase, fmt.Errorf("%w: barrier %q: %s arrived twice at phase %d", ErrBadArrival, name, m.Participant, m.Phase))
		} else {
			a.refuse(c, m.Phase, fmt.Errorf("%w: barrier %q: %s arrived at phase %d while still waiting at phase %d",
				ErrBadArrival, name, m.Participant, m.Phase, q))
		}
		return
	}
	ph := a.phases[m.Phase]
	if ph == nil {
		if m.Phase < a.next {
			a.refuse(c, m.Phase, fmt.Errorf("%w: barrier %q: %s arrived at phase %d, which is over (next phase %d)",
				ErrBadArrival, name, m.Participant, m.Phase, a.next))
			return
		}
		ph = a.open(c, m.Phase)
	}
	ph.arrived[i] = true
	ph.senders[i] = c.Sender()
	ph.count++
	a.waiting[i] = m.Phase
	if m.span.IsValid() {
		ph.span.AddLink(trace.Link{SpanContext: m.span, Attributes: []attribute.KeyValue{
			attribute.String("ringactor.barrier.participant", m.Participant)}})
	}
	if ph.count == len(ph.arrived) {
		a.finish(c, ph, nil, "")
	}
}

func (a *barrierActor) open(c actor.Context, phase uint64) *barrierPhase {
	a.seq++
	n := len(a.b.spec.Participants)
	ph := &barrierPhase{phase: phase, seq: a.seq, arrived: make([]bool, n), senders: make([]*actor.PID, n), start: time.Now()}
	dest := msgconv.Barrier(a.b.spec.Name)
	_, ph.span = a.b.tracer.Start(context.Background(), msgconv.SpanName(msgconv.OpProcess, dest), trace.WithTimestamp(ph.start),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(msgconv.Process(msgconv.OpProcess, dest, msgconv.ID(phase),
			attribute.String("ringactor.barrier", a.b.spec.Name),
			attribute.Int64("ringactor.barrier.phase", int64(phase)),
			attribute.Int("ringactor.barrier.participants", n),
		)...))
	if d := a.b.spec.Timeout; d > 0 {
		self, system, msg := c.Self(), c.ActorSystem(), barrierTimeout{phase: phase, seq: ph.seq}
		ph.timer = time.AfterFunc(d, func() { system.Root.Send(self, msg) })
	}
	a.phases[phase] = ph
	return ph
}

// abandon ends a phase past its timeout.
func (a *barrierActor) abandon(c actor.Context, ph *barrierPhase) {
	var missing []string
	for i, ok := range ph.arrived {
		if !ok {
			missing = append(missing, a.b.spec.Participants[i])
		}
	}
	ph.span.SetAttributes(attribute.StringSlice("ringactor.barrier.missing", missing))
	a.finish(c, ph, &BarrierTimeoutError{Barrier: a.b.spec.Name, Phase: ph.phase, Timeout: a.b.spec.Timeout, Missing: missing},
		"timed out")
}

// finish ends a phase, released (err nil) or not, and answers its waiters.
// The phase's span ends first, so a released waiter finds it recorded.
func (a *barrierActor) finish(c actor.Context, ph *barrierPhase, err error, why string) {
	if ph.timer != nil {
		ph.timer.Stop()
	}
	delete(a.phases, ph.phase)
	a.next = max(a.next, ph.phase+1)
	now := time.Now()
	ph.span.SetAttributes(
		attribute.Int("ringactor.barrier.arrived", ph.count), msgconv.BatchCount(ph.count),
		attribute.Int64("ringactor.barrier.wait_ns", now.Sub(ph.start).Nanoseconds()),
	)
	if err != nil {
		ph.span.SetStatus(codes.Error, why)
		ph.span.SetAttributes(msgconv.ErrorType(why))
	}
	ph.span.End(trace.WithTimestamp(now))
	for i, ok := range ph.arrived {
		if !ok {
			continue
		}
		delete(a.waiting, i)
		if s := ph.senders[i]; s != nil {
			c.Send(s, Release{Phase: ph.phase, Err: err})
		}
	}
}

// withdraw takes back an arrival whose waiter gave up; a phase nobody
// waits in any more closes without counting as over.
func (a *barrierActor) withdraw(m barrierWithdraw) {
	i, ok := a.index[m.participant]
	ph := a.phases[m.phase]
	if !ok || ph == nil || !ph.arrived[i] || ph.senders[i] == nil || !ph.senders[i].Equal(m.sender) {
		return // released meanwhile, or not this arrival
	}
	ph.arrived[i], ph.senders[i] = false, nil
	ph.count--
	delete(a.waiting, i)
	if ph.count == 0 {
		if ph.timer != nil {
			ph.timer.Stop()
		}
		delete(a.phases, ph.phase)
		ph.span.SetStatus(codes.Error, "every participant withdrew")
		ph.span.End()
	}
}
