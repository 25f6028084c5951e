package collective

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ringactor/ringactor/barrier"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/ext"
	"github.com/ringactor/ringactor/runtime/internal/msgconv"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// A barrier with ring kernels among its participants (BarrierSpec.Stages)
// is package barrier's flag array, in memory every participant reaches
// (portable pinned memory on a GPU backend, Go memory on sim): one word
// per participant, the host participants first, then the kernels. A host
// participant arrives and waits from Await; a kernel arrives on its
// device once it has taken the messages sent to its stage before Mark,
// and waits there (ringkernel.Kernel.ArriveAt, CmdBarrier), taking none
// of those sent after until every participant has arrived. A phase is a
// generation: phases must grow, one participant at a time.

// StageParticipant is a ring kernel taking part in a barrier: the kernel
// of stage Stage of a built Pipeline. Several may run on one device. Its
// name, in timeouts and spans, is "<pipeline>/<stage>@gpu<device>" (or
// "@cpu" on the CPU device).
type StageParticipant struct {
	Pipeline *ra.Pipeline
	Stage    string
}

// flagBarrier is a Barrier's flag array and its kernel participants.
type flagBarrier struct {
	b       *Barrier
	flags   *barrier.Flags
	names   []string // every participant's, in index order
	kernels []stagePart
	hosts   map[string]*hostPart
	region  p2pqueue.Region
	backend rk.Backend

	mu     sync.Mutex
	phases map[uint64]*flagPhase // open phases
	freed  bool

	closed  context.Context // ends at close: waits in progress end
	closeIt context.CancelFunc
	waiters sync.WaitGroup // host waits reading the flag array
}

type stagePart struct {
	name  string
	index int
	k     *rk.Kernel
	in    *p2pqueue.Link // the stage's ingress: Mark counts what was sent into it
}

type hostPart struct {
	mu sync.Mutex // a Participant belongs to one goroutine at a time
	p  *barrier.Participant
}

// flagPhase is a phase seen from the host: its span and the kernels' waits.
type flagPhase struct {
	start  time.Time
	span   trace.Span
	kspans []trace.Span // each kernel's wait, from Mark to the phase's end
}

func newFlagBarrier(rt *ra.Runtime, b *Barrier) (*flagBarrier, error) {
	spec := b.spec
	h := ext.Of(rt)
	fb := &flagBarrier{b: b, names: append([]string(nil), spec.Participants...), hosts: map[string]*hostPart{},
		phases: map[uint64]*flagPhase{}, backend: rt.Backend()}
	fb.closed, fb.closeIt = context.WithCancel(context.Background())
	cpu := rt.Registry().CPUDevice().ID
	device := -1 // where the flag array is allocated: a GPU of a kernel participant, else GPU 0
	seen := map[string]bool{}
	for _, p := range spec.Participants {
		seen[p] = true
	}
	for i, sp := range spec.Stages {
		if sp.Pipeline == nil {
			return nil, fmt.Errorf("%w: %q: stage participant %d has no pipeline", ErrBadBarrier, spec.Name, i)
		}
		k, in, dev, err := h.StageKernel(sp.Pipeline, sp.Stage)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrBadBarrier, spec.Name, err)
		}
		pid, _ := sp.Pipeline.PID(sp.Stage)
		name := fmt.Sprintf("%s@gpu%d", pid.Id, dev)
		if dev == cpu {
			name = pid.Id + "@cpu"
		} else if device < 0 {
			device = dev
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: %q names participant %q twice", ErrBadBarrier, spec.Name, name)
		}
		seen[name] = true
		fb.kernels = append(fb.kernels, stagePart{name: name, index: len(fb.names), k: k, in: in})
		fb.names = append(fb.names, name)
	}
	size, err := barrier.Size(len(fb.names))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadBarrier, spec.Name, err)
	}
	if fb.region, err = fb.backend.Alloc(max(device, 0), size, p2pqueue.PortablePinnedMemory); err != nil {
		return nil, fmt.Errorf("%w: %q: flag array: %w", ErrBadBarrier, spec.Name, err)
	}
	if fb.flags, err = barrier.Init(fb.region, len(fb.names), barrier.WithNames(fb.names...)); err != nil {
		fb.backend.Free(fb.region)
		return nil, fmt.Errorf("%w: %q: %w", ErrBadBarrier, spec.Name, err)
	}
	for i, name := range spec.Participants {
		p, _ := fb.flags.Participant(i) // fresh: cannot be claimed
		fb.hosts[name] = &hostPart{p: p}
	}
	return fb, nil
}

// Flags is the barrier's flag array, for a barrier with stage
// participants (nil for one of host participants only, an actor).
func (b *Barrier) Flags() *barrier.Flags {
	if b.fb == nil {
		return nil
	}
	return b.fb.flags
}

// Mark sets the phase boundary of every stage participant: each kernel
// arrives at phase once it has taken (and passed on) every message sent
// to its stage so far, taking none sent after until every participant has
// arrived at phase. Call it between the sends of two phases, from the
// goroutine that sends (a send that races with Mark lands on either side).
// phase must be above the last one marked, and each kernel must have
// arrived at the last one first. A barrier with no stage participants
// refuses it.
func (b *Barrier) Mark(ctx context.Context, phase uint64) error {
	if b.fb == nil {
		return fmt.Errorf("%w: barrier %q has no stage participants to mark", ErrBadArrival, b.spec.Name)
	}
	if b.closed.Load() {
		return fmt.Errorf("%w: %q", ErrBarrierClosed, b.spec.Name)
	}
	fb := b.fb
	ph := fb.open(phase)
	for _, kp := range fb.kernels {
		at := kp.in.Stats().Published
		if err := kp.k.ArriveAt(ctx, fb.flags, kp.index, phase, kp.in, at); err != nil {
			return fmt.Errorf("%w: barrier %q: %s at phase %d: %w", ErrBadArrival, b.spec.Name, kp.name, phase, err)
		}
		_, span := b.tracer.Start(ctx, msgconv.SpanName(msgconv.OpArrive, msgconv.Barrier(b.spec.Name)), trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(b.arriveAttrs(kp.name, phase)...))
		span.SetAttributes(attribute.Int64("ringactor.barrier.mark", int64(at)))
		fb.mu.Lock()
		ph.kspans = append(ph.kspans, span)
		fb.mu.Unlock()
	}
	return nil
}

// Wait waits, without arriving, until every participant has arrived at
// phase: an observer's wait (the host that marked a barrier whose
// participants are all kernels). Timeout and ctx bound it as Await's.
func (b *Barrier) Wait(ctx context.Context, phase uint64) error {
	if b.fb == nil {
		return fmt.Errorf("%w: barrier %q is an actor: Await its phases", ErrBadArrival, b.spec.Name)
	}
	return b.fb.wait(ctx, "", phase)
}

// open returns phase's record, opening it (and its span) at first use.
func (fb *flagBarrier) open(phase uint64) *flagPhase {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if ph := fb.phases[phase]; ph != nil {
		return ph
	}
	ph := &flagPhase{start: time.Now()}
	dest := msgconv.Barrier(fb.b.spec.Name)
	_, ph.span = fb.b.tracer.Start(context.Background(), msgconv.SpanName(msgconv.OpProcess, dest), trace.WithTimestamp(ph.start),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(msgconv.Process(msgconv.OpProcess, dest, msgconv.ID(phase),
			attribute.String("ringactor.barrier", fb.b.spec.Name),
			attribute.Int64("ringactor.barrier.phase", int64(phase)),
			attribute.Int("ringactor.barrier.participants", len(fb.names)),
		)...))
	fb.phases[phase] = ph
	return ph
}

// finish ends phase's spans once: released (err nil) or not.
func (fb *flagBarrier) finish(phase uint64, err error, missing []string) {
	fb.mu.Lock()
	ph := fb.phases[phase]
	delete(fb.phases, phase)
	fb.mu.Unlock()
	if ph == nil {
		return
	}
	now := time.Now()
	ph.span.SetAttributes(attribute.Int("ringactor.barrier.arrived", len(fb.names)-len(missing)), msgconv.BatchCount(len(fb.names)-len(missing)),
		attribute.Int64("ringactor.barrier.wait_ns", now.Sub(ph.start).Nanoseconds()))
	if err != nil {
		ph.span.SetAttributes(attribute.StringSlice("ringactor.barrier.missing", missing))
		ph.span.SetStatus(codes.Error, err.Error())
	}
	for _, s := range ph.kspans {
		s.SetAttributes(attribute.Int64("ringactor.barrier.wait_ns", now.Sub(ph.start).Nanoseconds()))
		if err != nil {
			s.SetStatus(codes.Error, err.Error())
		}
		s.End(trace.WithTimestamp(now))
	}
	ph.span.End(trace.WithTimestamp(now))
}

// await arrives as host participant name at phase and waits.
func (fb *flagBarrier) await(ctx context.Context, name string, phase uint64) error {
	hp := fb.hosts[name]
	if hp == nil {
		return fmt.Errorf("%w: barrier %q has no host participant %q (it has %v)", ErrBadArrival, fb.b.spec.Name, name, fb.b.spec.Participants)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ringactor: barrier %q: %s did not arrive at phase %d: %w", fb.b.spec.Name, name, phase, err)
	}
	if !fb.enter() {
		return fmt.Errorf("%w: %q", ErrBarrierClosed, fb.b.spec.Name)
	}
	defer fb.waiters.Done()
	hp.mu.Lock()
	err := hp.p.Arrive(phase)
	hp.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: barrier %q: %w", ErrBadArrival, fb.b.spec.Name, err)
	}
	return fb.waitIn(ctx, name, phase)
}

// enter counts a host goroutine in among those that may touch the flag
// array, unless the barrier is closed; leave with waiters.Done.
func (fb *flagBarrier) enter() bool {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if fb.closed.Err() != nil {
		return false
	}
	fb.waiters.Add(1)
	return true
}

// wait is waitIn for an observer.
func (fb *flagBarrier) wait(ctx context.Context, who string, phase uint64) error {
	if !fb.enter() {
		return fmt.Errorf("%w: %q", ErrBarrierClosed, fb.b.spec.Name)
	}
	defer fb.waiters.Done()
	return fb.waitIn(ctx, who, phase)
}

// waitIn waits for every participant to reach phase, bounded by ctx and
// the spec's Timeout from the phase's first sight here; the caller has
// entered.
func (fb *flagBarrier) waitIn(ctx context.Context, who string, phase uint64) error {
	ph := fb.open(phase)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(fb.closed, cancel)()
	if d := fb.b.spec.Timeout; d > 0 {
		var stop context.CancelFunc
		wctx, stop = context.WithDeadline(wctx, ph.start.Add(d))
		defer stop()
	}
	err := fb.flags.Wait(wctx, phase)
	if err == nil {
		fb.finish(phase, nil, nil)
		return nil
	}
	var te *barrier.TimeoutError
	if !errors.As(err, &te) {
		return fmt.Errorf("ringactor: barrier %q: %w", fb.b.spec.Name, err)
	}
	if fb.closed.Err() != nil {
		return fmt.Errorf("%w: %q", ErrBarrierClosed, fb.b.spec.Name)
	}
	if ctx.Err() == nil { // the barrier's Timeout, not the caller's ctx
		bte := &BarrierTimeoutError{Barrier: fb.b.spec.Name, Phase: phase, Timeout: fb.b.spec.Timeout, Missing: te.Names}
		fb.finish(phase, bte, te.Names)
		return bte
	}
	if who == "" {
		who = "the observer"
	}
	// An arrival on the flag array cannot be taken back: it stands.
	return fmt.Errorf("ringactor: barrier %q: %s gave up waiting at phase %d for %v: %w", fb.b.spec.Name, who, phase, te.Names, ctx.Err())
}

// close ends the open phases' spans and gives the flag array back once
// every kernel participant has ended (a kernel may still read it until
// then): at once if they have, else from a goroutine that waits for them.
func (fb *flagBarrier) close() {
	fb.mu.Lock()
	fb.closeIt()
	fb.mu.Unlock()
	fb.waiters.Wait() // they end at once: nothing reads the flag array after
	fb.mu.Lock()
	var open []uint64
	for p := range fb.phases {
		open = append(open, p)
	}
	fb.mu.Unlock()
	for _, p := range open {
		fb.finish(p, fmt.Errorf("%w: %q", ErrBarrierClosed, fb.b.spec.Name), fb.missing(p))
	}
	free := func() {
		fb.mu.Lock()
		defer fb.mu.Unlock()
		if !fb.freed {
			fb.freed = true
			fb.backend.Free(fb.region)
		}
	}
	for _, kp := range fb.kernels {
		select {
		case <-kp.k.Ended():
			continue
		default:
		}
		go func() {
			for _, kp := range fb.kernels {
				<-kp.k.Ended()
			}
			free()
		}()
		return
	}
	free()
}

func (fb *flagBarrier) missing(phase uint64) []string {
	var m []string
	for _, i := range fb.flags.Missing(phase) {
		m = append(m, fb.names[i])
	}
	return m
}
