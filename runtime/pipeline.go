package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/account"
	"github.com/ringactor/ringactor/runtime/internal/graph"
	"github.com/ringactor/ringactor/runtime/internal/naming"
	"github.com/ringactor/ringactor/runtime/internal/requests"
)

// PipelineSpec defines a pipeline: its stages (a chain in order, or a
// graph when stages name where their results go, StageSpec.To), where
// results go, and how messages are traced.
type PipelineSpec struct {
	Name   string
	Stages []StageSpec
	// Deliver receives every result; the zero Sink discards them (they are
	// still counted as delivered).
	Deliver Sink
	// OnDeadLetter receives every dead letter, from any stage or the ingress.
	// A panic in it is recovered (the runtime's goroutine that called it
	// goes on, the dead letter still counts and still goes to
	// DeadLetterChan and DeadLetterPID) and published as a
	// CallbackPanicked on the actor system's event stream.
	OnDeadLetter func(DeadLetter)
	// DeadLetterChan and DeadLetterPID also receive every dead letter (a
	// PID gets DeadLetter messages). A full channel holds up whoever
	// reports the dead letter (a stage's record pump, a sender): keep it
	// drained.
	DeadLetterChan chan<- DeadLetter
	DeadLetterPID  *actor.PID
	// SampleRatio is the fraction of messages traced, 0 to 1.
	SampleRatio float64
	// HangAfter is the watchdog's limit: a stage with work queued whose
	// loop has not gone round for this long is declared faulted and the
	// pipeline torn down (see StageFaulted). 0 means DefaultHangAfter; a
	// negative value turns the watchdog off. Set it above the longest time
	// the stage function may take on one batch.
	HangAfter time.Duration
	// OnFault is told when a stage faults, before the teardown. A panic in
	// it is recovered (the teardown still runs) and published as a
	// CallbackPanicked on the actor system's event stream.
	OnFault func(StageFaulted)

	// stealIn and stealTo are a stage group's (package runtime/group, set
	// through ext.Host.WithSteal), which makes one-stage pipelines whose
	// kernels steal from each other: stealIn are extra in-links the first
	// stage reads (victims forward stolen work into them), stealTo its
	// links to thieves, in thief order (Steal.To indexes them).
	stealIn, stealTo []*p2pqueue.Link
}

// Sink is where a pipeline's results go: a callback, a channel, or a PID
// (which receives Result messages). Set one. A result counts as delivered
// when it is handed to the sink: Func called, sent on Chan, sent to PID.
// A Chan that is full holds the pipeline up while it runs (backpressure);
// during Close it is waited for CloseWait, and what it has not taken by
// then is dead-lettered "sink not read" (ErrSinkNotRead), not delivered.
type Sink struct {
	// Func is called in the egress pump's goroutine. A panic in it is
	// recovered: that result is dead-lettered "stage panic" (stage
	// "egress", ErrStagePanic), not delivered, and the pump goes on.
	Func func(Result)
	Chan chan<- Result
	PID  *actor.PID
	// CloseWait bounds how long Close waits for a Chan that takes nothing
	// (default 1 s): once it has waited that long, what the channel has
	// not taken is dead-lettered ("sink not read"). While the pipeline
	// runs, a full Chan holds the pipeline up instead (backpressure).
	CloseWait time.Duration
	// slots takes each batch of results undecoded, straight from the
	// egress link's slots (the payloads are valid until it returns), for
	// a sub-package that passes results on as bytes: a cluster segment
	// forwarding them to another process (set through ext.Host.WithSlots).
	// It must end every message it is given, passed on or dead-lettered;
	// they count as delivered here.
	slots func(ctx context.Context, hs []p2pqueue.Header, payloads [][]byte)
}

// DeadLetter is a message that left the pipeline without a result: every
// message ends either delivered or as one DeadLetter, given to
// OnDeadLetter, DeadLetterChan and DeadLetterPID (and to a request's
// caller as a *RequestError), and counted in PipelineStats.DeadLettered.
// A sampled message that dies gets its trace's root span ended with the
// error status and the attribute ringactor.dead_letter.reason.
type DeadLetter struct {
	ID uint64
	// Stage is the stage that dropped it ("egress" for the host's end of
	// an exit), Device that stage's device.
	Stage  string
	Device int
	// Reason is the dead letter's class, one of the Reason constants
	// (docs/ARCHITECTURE.md §6).
	Reason Reason
	// Err says what happened; it wraps the class's sentinel where there
	// is one (ErrClosed, ErrStageStopped, ErrMailboxFull, ErrSinkNotRead,
	// ErrWrongType, ErrStagePanic, p2pqueue.ErrTooLarge, ctx's error for
	// "send cancelled").
	Err error
}

func (d DeadLetter) String() string {
	return fmt.Sprintf("message %d dead at stage %q: %s: %v", d.ID, d.Stage, d.Reason, d.Err)
}

// ErrBadPipeline: a pipeline spec that cannot be built.
var ErrBadPipeline = errors.New("ringactor: bad pipeline")

// Pipeline is a built chain of stages. Its methods are safe for concurrent
// use.
type Pipeline struct {
	rt     *Runtime
	number uint32 // the owner number of its links (LinkID)
	spec   PipelineSpec
	stages []*stage
	byName map[string]*stage
	tele   *telemetry

	next  [][]int  // stage i's results go to stages next[i]; none: an exit
	takes []uint32 // the message type stage i takes (kernels.TypeAny: any)
	gives []uint32 // the type stage i's results have
	exits []*stage // the stages whose results leave, in stage order

	acct        *account.Account // the message account (docs/ARCHITECTURE.md §6)
	sinks       *deadSinks       // the name and dead-letter subscribers alone, for late sends (closedStage)
	sampleEvery uint64

	reqs requests.Table[outcome] // in flight, by message id

	faulted  atomic.Pointer[StageFaulted]
	stopDog  context.CancelFunc
	dogDone  chan struct{}
	dogLooks atomic.Uint64 // the watchdog's looks at the stages so far

	startOnce, closeOnce sync.Once
	pumpCtx              context.Context
	stopPump             context.CancelFunc
	pumpDone             chan struct{}
	started              atomic.Bool
	closing              atomic.Bool   // Close has begun
	closingCh            chan struct{} // closed when Close begins
	sinkGone             atomic.Bool   // a Chan sink took nothing for CloseWait during Close
	closeErr             error
}

// Build places the pipeline's links, launches a ring kernel per stage (in
// state Launched) and spawns its actors. Start activates it.
//
// Build refuses, with an error wrapping ErrBadPipeline and naming the fix,
// a spec that cannot be built: no stages, an unknown op, a device that
// does not exist (also ErrNoDevice), duplicate names, a Capacity or
// SlotSize out of range or too big for the memory that would hold the
// link (p2pqueue.ErrBadCapacity, ErrBadSlotSize), a bad graph. It
// refuses a nil or ended ctx (ErrNilContext, ctx's error) and a closed
// runtime (ErrRuntimeClosed). Nothing is left running after an error.
func (rt *Runtime) Build(ctx context.Context, spec PipelineSpec) (*Pipeline, error) {
	if err := ctxcheck.Live(ctx, "Runtime.Build"); err != nil {
		return nil, err
	}
	if rt.closed.Load() {
		return nil, fmt.Errorf("%w: cannot build pipeline %q; make a new Runtime", ErrRuntimeClosed, spec.Name)
	}
	g, err := rt.check(&spec)
	if err != nil {
		return nil, err
	}
	if err := rt.openDevices(ctx, &spec); err != nil {
		return nil, err
	}
	if err := rt.claimName(spec.Name); err != nil {
		return nil, err
	}
	p := &Pipeline{rt: rt, spec: spec, acct: &account.Account{}, next: g.Next, takes: g.In, gives: g.Out, byName: map[string]*stage{}, pumpDone: make(chan struct{}), dogDone: make(chan struct{}), closingCh: make(chan struct{})}
	p.number = rt.newLinkOwner()
	p.sinks = &deadSinks{name: spec.Name, on: spec.OnDeadLetter, ch: spec.DeadLetterChan, pid: spec.DeadLetterPID}
	p.pumpCtx, p.stopPump = context.WithCancel(context.Background())
	if spec.SampleRatio > 0 {
		p.sampleEvery = uint64(math.Max(1, math.Round(1/spec.SampleRatio)))
	}
	if err := p.build(ctx); err != nil {
		p.teardown()
		rt.releaseName(spec.Name)
		return nil, err
	}
	if err := rt.built(p); err != nil {
		p.teardown()
		rt.releaseName(spec.Name)
		return nil, err
	}
	return p, nil
}

// check validates spec, fills in its defaults, and resolves its graph
// (package graph: where each stage's results go, the types they carry).
func (rt *Runtime) check(spec *PipelineSpec) (graph.Graph, error) {
	bad := func(format string, a ...any) error { // wraps ErrBadPipeline and any %w in format
		return fmt.Errorf("%w %q: %w", ErrBadPipeline, spec.Name, fmt.Errorf(format, a...))
	}
	if err := naming.Check("pipeline", spec.Name, ""); err != nil {
		return graph.Graph{}, fmt.Errorf("%w: %w", ErrBadPipeline, err)
	}
	if len(spec.Stages) == 0 {
		return graph.Graph{}, bad("no stages")
	}
	if spec.SampleRatio < 0 || spec.SampleRatio > 1 || math.IsNaN(spec.SampleRatio) {
		return graph.Graph{}, bad("sample ratio %g; want 0 to 1", spec.SampleRatio)
	}
	if n := spec.Deliver.count(); n > 1 {
		return graph.Graph{}, bad("Deliver names %d sinks; set one of Func, Chan, PID", n)
	}
	seen := map[string]bool{}
	gs := make([]graph.Stage, len(spec.Stages)) // each stage as the graph sees it, its op resolved once
	for i := range spec.Stages {
		s := &spec.Stages[i]
		*s = s.WithDefaults()
		if err := naming.Check("stage", s.Name, ""); err != nil {
			return graph.Graph{}, bad("stage %d: %w", i, err)
		}
		if s.Node != "" {
			return graph.Graph{}, bad("stage %q names node %q: a pipeline across nodes is built with package runtime/cluster (Join, then Node.Build)", s.Name, s.Node)
		}
		if seen[s.Name] {
			return graph.Graph{}, bad("two stages are named %q; stage names are unique", s.Name)
		}
		seen[s.Name] = true
		dev, err := rt.reg.Device(s.Device)
		if err != nil {
			return graph.Graph{}, bad("stage %q: %w", s.Name, err)
		}
		if err := rt.checkLink(s, dev); err != nil {
			return graph.Graph{}, bad("%w", err)
		}
		gs[i] = graph.Stage{Name: s.Name, To: s.To, Route: s.Route, KeyOffset: s.KeyOffset}
		if gs[i].Op, err = s.kernelStage().Resolve(); err != nil {
			return graph.Graph{}, bad("%w", err)
		}
		if s.Backpressure != Block && s.Backpressure != Reject {
			return graph.Graph{}, bad("stage %q: Backpressure %d; use Block or Reject", s.Name, s.Backpressure)
		}
		if err := rt.supports(s.Device, gs[i].Op); err != nil {
			return graph.Graph{}, bad("stage %q: %w", s.Name, err)
		}
	}
	g, err := graph.Resolve(gs, len(spec.stealIn), typeName)
	if err != nil {
		return graph.Graph{}, bad("%w", err)
	}
	return g, nil
}

func (p *Pipeline) build(ctx context.Context) error {
	for i, ss := range p.spec.Stages {
		dev, _ := p.rt.reg.Device(ss.Device)
		s := &stage{p: p, idx: i, spec: ss, dev: dev, in: p.takes[i]}
		var err error
		if s.ingressLink, s.inPlacement, err = p.rt.newLink(p2pqueue.Host, ss.Device, ss.Capacity, ss.SlotSize, NewLinkID(p.number, LinkIn, i, 0)); err != nil {
			return fmt.Errorf("ringactor: stage %q ingress: %w", ss.Name, err)
		}
		q, err := s.ingressLink.Producer()
		if err != nil {
			return err
		}
		s.ingress = s.newIngress(q)
		p.stages = append(p.stages, s)
		p.byName[ss.Name] = s
	}
	// A link per edge, in the consumer's slots; an exit's to the host.
	for i, s := range p.stages {
		for _, j := range p.next[i] {
			t := p.stages[j]
			l, pl, err := p.rt.newLink(s.spec.Device, t.spec.Device, t.spec.Capacity, t.spec.SlotSize, NewLinkID(p.number, LinkOut, i, j))
			if err != nil {
				return fmt.Errorf("ringactor: link %q → %q: %w", s.spec.Name, t.spec.Name, err)
			}
			s.outs = append(s.outs, edge{peer: t, link: l, pl: pl})
			t.ups = append(t.ups, edge{peer: s, link: l, pl: pl})
		}
		if len(p.next[i]) > 0 {
			continue
		}
		e := &egress{}
		var err error
		if e.link, e.pl, err = p.rt.newLink(s.spec.Device, p2pqueue.Host, s.spec.Capacity, s.spec.SlotSize, NewLinkID(p.number, LinkEgress, i, 0)); err != nil {
			return fmt.Errorf("ringactor: stage %q egress: %w", s.spec.Name, err)
		}
		e.link.SetDoorbell(p2pqueue.NewDoorbell())
		if e.c, err = e.link.Consumer(); err != nil {
			return err
		}
		s.egress = e
		p.exits = append(p.exits, s)
	}
	var err error
	if p.tele, err = newTelemetry(p.rt.tp, p.rt.mp, p.spec.Name, p.stages, p.account); err != nil {
		return fmt.Errorf("ringactor: telemetry: %w", err)
	}
	for i, s := range p.stages {
		var in []*p2pqueue.Link
		for _, e := range s.ups {
			in = append(in, e.link)
		}
		in = append(in, s.ingressLink)
		var stealTo []*p2pqueue.Link
		if i == 0 {
			in = append(in, p.spec.stealIn...)
			stealTo = p.spec.stealTo
		}
		var out []*p2pqueue.Link
		for _, e := range s.outs {
			out = append(out, e.link)
		}
		if s.egress != nil {
			out = []*p2pqueue.Link{s.egress.link}
		}
		s := s
		if s.kernel, err = rk.Launch(ctx, p.rt.backend, rk.Spec{
			Stage: s.spec.kernelStage(), ID: s.id(), Device: s.spec.Device, In: in, Out: out, StealTo: stealTo,
			Route: s.spec.Route, KeyOffset: s.spec.KeyOffset,
			OnTrace: func(r rk.TraceRecord) { p.tele.record(s, r) },
			OnDeadLetter: func(d rk.DeadLetter) {
				reason := ReasonOf(d.Reason)
				switch {
				case d.Reason != rk.ReasonShutdown:
				case p.faulted.Load() != nil:
					reason = ReasonStageFaulted // torn down because a stage faulted
				case s.stopped.Load() && !p.closing.Load():
					reason = ReasonStageStopped // by a Stop
				}
				p.deadLetter(d.From, DeadLetter{ID: d.ID, Stage: s.spec.Name, Device: s.spec.Device, Reason: reason, Err: d.Err})
			},
		}); err != nil {
			return err
		}
		p.rt.usesLinks(s.kernel, in, out, stealTo)
		props := actor.PropsFromProducer(func() actor.Actor { return &stageActor{s: s} },
			actor.WithMailbox(func() actor.Mailbox { return &stageMailbox{Mailbox: actor.Unbounded()(), s: s} }))
		if s.pid, err = p.rt.system.Root.SpawnNamed(props, p.spec.Name+"/"+s.spec.Name); err != nil {
			return fmt.Errorf("ringactor: stage %q actor: %w", s.spec.Name, err)
		}
		p.rt.registerStage(s)
	}
	return nil
}

// teardown ends whatever build made, after a failed build.
func (p *Pipeline) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range p.stages {
		if s.pid != nil {
			p.rt.system.Root.StopFuture(s.pid).Wait()
		}
		if s.kernel != nil {
			s.kernel.Terminate(ctx, false)
		}
	}
	if p.tele != nil {
		p.tele.close()
	}
	p.freeLinks()
}

// Start activates every stage and starts delivering results. A second
// Start does nothing; Start after Close returns ErrClosed; a nil or ended
// ctx is refused before anything is done.
func (p *Pipeline) Start(ctx context.Context) error {
	if err := ctxcheck.Live(ctx, "Pipeline.Start"); err != nil {
		return err
	}
	if p.closing.Load() {
		return fmt.Errorf("%w: pipeline %q cannot start again; build a new one", ErrClosed, p.spec.Name)
	}
	var err error
	p.startOnce.Do(func() {
		p.startPumps()
		p.started.Store(true)
		if p.spec.HangAfter >= 0 {
			var dogCtx context.Context
			dogCtx, p.stopDog = context.WithCancel(context.Background())
			go p.watchdog(dogCtx)
		} else {
			close(p.dogDone)
		}
		for _, s := range p.stages {
			if err = s.kernel.Activate(ctx); err != nil {
				err = fmt.Errorf("ringactor: start stage %q: %w", s.spec.Name, err)
				return
			}
		}
	})
	return err
}

// PID is the actor of the named stage. Data sent to it goes straight into
// the stage's device mailbox; control messages reach the actor. A Data or
// *Data is copied into the mailbox before Send returns (while the stage
// runs), so a sender may reuse one *Data (and its Floats) for the next
// message: a Data value costs the interface conversion's allocation, a
// reused *Data none.
func (p *Pipeline) PID(stage string) (*actor.PID, error) {
	s, ok := p.byName[stage]
	if !ok {
		return nil, fmt.Errorf("ringactor: pipeline %q has no stage %q; stages: %s", p.spec.Name, stage, strings.Join(p.StageNames(), ", "))
	}
	return s.pid, nil
}

// StageStatus reads the named stage's kernel status (what a Stats message
// to its PID answers) without a round trip through its actor.
func (p *Pipeline) StageStatus(stage string) (StageStats, error) {
	s, ok := p.byName[stage]
	if !ok {
		return StageStats{}, fmt.Errorf("ringactor: pipeline %q has no stage %q; stages: %s", p.spec.Name, stage, strings.Join(p.StageNames(), ", "))
	}
	return s.stats(), nil
}

// StageNames lists the stages in order.
func (p *Pipeline) StageNames() []string {
	names := make([]string, len(p.stages))
	for i, s := range p.stages {
		names[i] = s.spec.Name
	}
	return names
}

// Send puts one message into the first stage, waiting while its mailbox is
// full until ctx ends. A nil ctx, or one that has already ended, is
// refused with an error before anything is done: the message is neither
// sent nor counted, and the error wraps ErrNotSent (and ErrNilContext or
// ctx's error). Otherwise the message ends in the pipeline's account
// (PipelineStats) whatever happens: delivered, or dead-lettered with a
// reason, which the error names (ErrClosed once Close has begun,
// ErrStageStopped after a Stop, ErrMailboxFull under Reject, ctx's error
// when ctx ends while it waits for room). d.ID 0 takes the pipeline's
// next id (SendID reports it); see Data.ID for explicit ids.
func (p *Pipeline) Send(ctx context.Context, d Data) error {
	_, err := p.SendID(ctx, d)
	return err
}

// SendID is Send that also returns the id the message travels under: its
// own, or the one assigned to ID 0 (0 when nothing was sent).
func (p *Pipeline) SendID(ctx context.Context, d Data) (uint64, error) {
	if err := ctxcheck.LiveSend(ctx, "Pipeline.Send"); err != nil {
		return 0, err
	}
	var id [1]uint64
	_, err := p.stages[0].ingress.Send(ctx, []Data{d}, id[:])
	return id[0], err
}

// SendBatch puts messages into the first stage with as few queue
// publishes as space allows. It returns how many it took into the stage's
// mailbox, in order; every message it did not take has been
// dead-lettered (and counted), and the error says why. A nil ctx, or one
// that has already ended, is refused before anything is done (0, nothing
// counted, and the error wraps ErrNotSent): errors.Is(err, ErrNotSent)
// tells that case from messages that were counted and dead-lettered.
func (p *Pipeline) SendBatch(ctx context.Context, ds []Data) (int, error) {
	return p.SendBatchIDs(ctx, ds, nil)
}

// SendBatchIDs is SendBatch that also reports each message's id: ids[i]
// receives ds[i]'s (its own, or the one assigned to ID 0), for as many of
// ds as ids has room for, taken or dead-lettered. Auto ids are increasing,
// and never one an explicit id has reached.
func (p *Pipeline) SendBatchIDs(ctx context.Context, ds []Data, ids []uint64) (int, error) {
	if err := ctxcheck.LiveSend(ctx, "Pipeline.SendBatch"); err != nil {
		return 0, err
	}
	return p.stages[0].ingress.Send(ctx, ds, ids)
}

// idOf is the id a message travels under: its own, or the next one for 0
// (account.Account.ID).
func (p *Pipeline) idOf(id uint64) uint64 { return p.acct.ID(id) }

// deadLetter ends a message (a copy of one, in a graph) that came from
// stage id from (0: the host) as dead.
func (p *Pipeline) deadLetter(from uint32, d DeadLetter) {
	p.acct.DeadLetter()
	p.tellDead(from, d)
}

// undeliver moves a message counted delivered to the dead: a result
// handed to a Chan sink that never took it.
func (p *Pipeline) undeliver(from uint32, d DeadLetter) {
	p.acct.Undeliver()
	p.tellDead(from, d)
}

// tellDead ends a dead message's trace, answers its request, and tells
// the spec's subscribers; the account has counted it.
func (p *Pipeline) tellDead(from uint32, d DeadLetter) {
	p.tele.end(d.ID, from, time.Now(), &d)
	if p.reqs.Pending() {
		dd := d
		p.answer(d.ID, outcome{dead: &dd}) // after the count: an answered request is in the account
	}
	p.rt.tellDeadLetter(&p.spec, d)
}

// tellDeadLetter hands a dead letter to every subscriber spec names (rt
// sends to its PID), as a pipeline does its own; a sub-package that ends
// messages of a spec outside a Pipeline (a cluster pipeline's origin)
// uses it through ext.Host.
func (rt *Runtime) tellDeadLetter(spec *PipelineSpec, d DeadLetter) {
	rt.tell(deadSinks{name: spec.Name, on: spec.OnDeadLetter, ch: spec.DeadLetterChan, pid: spec.DeadLetterPID}, d)
}

// deadSinks is a pipeline's name and dead-letter subscribers.
type deadSinks struct {
	name string
	on   func(DeadLetter)
	ch   chan<- DeadLetter
	pid  *actor.PID
}

func (rt *Runtime) tell(s deadSinks, d DeadLetter) {
	if s.on != nil {
		rt.callback(s.name, "OnDeadLetter", d.ID, func() { s.on(d) })
	}
	if s.ch != nil {
		s.ch <- d
	}
	if s.pid != nil {
		rt.system.Root.Send(s.pid, d)
	}
}

// deliver hands r to the pipeline's sink and reports whether the sink
// took it. Only a Chan can refuse: while the pipeline runs the pump waits
// for the reader (backpressure); once Close has begun, for CloseWait at
// most, and after one such wait the channel is taken as unread.
func (p *Pipeline) deliver(r Result) bool {
	ch := p.spec.Deliver.Chan
	if ch == nil {
		p.rt.deliverTo(p.pumpCtx, p.spec.Deliver, r)
		return true
	}
	if p.sinkGone.Load() {
		return false
	}
	select {
	case ch <- r:
		return true
	default:
	}
	select {
	case ch <- r:
		return true
	case <-p.pumpCtx.Done():
	case <-p.closingCh:
		wait := p.spec.Deliver.CloseWait
		if wait <= 0 {
			wait = DefaultCloseWait
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case ch <- r:
			return true
		case <-p.pumpCtx.Done():
		case <-t.C:
		}
	}
	p.sinkGone.Store(true)
	return false
}

// DefaultCloseWait is Sink.CloseWait's default.
const DefaultCloseWait = time.Second

// ErrSinkNotRead: a result the pipeline's Chan sink did not take by the
// end of Close.
var ErrSinkNotRead = errors.New("ringactor: sink not read")

// count is how many of Func, Chan, PID and slots s sets.
func (s Sink) count() int {
	n := 0
	for _, set := range []bool{s.Func != nil, s.Chan != nil, s.PID != nil, s.slots != nil} {
		if set {
			n++
		}
	}
	return n
}

// checkResults returns an error when s cannot take results handed to it
// one Result at a time, as deliverTo hands them (a stage group's sink, a
// cluster pipeline's): when it names more than one of Func, Chan and PID,
// or names slots, which takes raw egress batches that only a Pipeline's
// own egress has. The zero Sink passes (results are discarded).
func (s Sink) checkResults() error {
	if n := s.count(); n > 1 {
		return fmt.Errorf("Deliver names %d sinks; set one of Func, Chan, PID", n)
	}
	if s.slots != nil {
		return errors.New("a slots sink takes a pipeline's raw egress batches, and these results arrive one at a time, decoded; set Func, Chan or PID")
	}
	return nil
}

// deliverTo hands a result to a sink as a pipeline's egress does: to its
// Func, Chan (giving up when done ends) or PID. A slots sink takes raw
// batches only, so a Result for one is dropped: a sub-package that
// delivers with deliverTo refuses such a sink first (checkResults).
func (rt *Runtime) deliverTo(done context.Context, sink Sink, r Result) {
	switch {
	case sink.Func != nil:
		sink.Func(r)
	case sink.Chan != nil:
		select {
		case sink.Chan <- r:
		case <-done.Done():
		}
	case sink.PID != nil:
		rt.system.Root.Send(sink.PID, r)
	}
}

// Close stops the pipeline: it takes no more messages, and then with drain
// every stage finishes what it holds in order; without, each stage
// dead-letters what it holds ("shutdown without drain"). Results already
// past the last stage are delivered. A drained close activates a stage
// that was deactivated first (a Deactivate to its PID): a drain means
// finishing what the pipeline holds, and the stages before a deactivated
// one could not drain into it. It returns when every kernel has ended
// and every result and dead letter is delivered, or when ctx ends (the
// drain is then cut short, with its messages dead-lettered). Close is
// idempotent; a nil ctx is refused (ErrNilContext) and closes nothing.
//
// Nothing is lost around Close: a Send racing it either takes its
// message in (it then ends like the others) or dead-letters it
// ("pipeline closed") and returns ErrClosed, and data sent to a stage's
// PID during or after Close is counted and dead-lettered "pipeline
// closed" too. Results a Chan sink has not taken once CloseWait has
// passed are dead-lettered "sink not read". When Close returns,
// PipelineStats holds Sent = Delivered + DeadLettered (InFlight 0), and
// stays so.
func (p *Pipeline) Close(ctx context.Context, drain bool) error {
	if err := ctxcheck.NotNil(ctx, "Pipeline.Close"); err != nil {
		return err
	}
	p.closeOnce.Do(func() {
		p.closing.Store(true)
		close(p.closingCh)
		if p.stopDog != nil {
			p.stopDog()
			<-p.dogDone
		}
		for _, s := range p.stages {
			s.ingress.Refuse() // senders waiting for room give up
		}
		for _, s := range p.stages {
			s.ingress.Close()
		}
		var errs []error
		f := p.faulted.Load()
		if drain && f == nil {
			errs = append(errs, activateToDrain(ctx, p.stages)...)
		}
		cutEgress := false // a stage cut off holds its egress open
		for _, s := range p.stages {
			faultedHere := f != nil && s.spec.Name == f.Stage
			if err := s.kernel.Terminate(ctx, drain && f == nil); err != nil {
				errs = append(errs, err)
			}
			if faultedHere || s.kernel.Abandoned() {
				// Cut off (faulted, or it did not stop within ctx: a stage
				// function that has not returned). The stages before it
				// have ended: what it holds is ours to count.
				if err := p.deadLetterAbandoned(s); err != nil {
					errs = append(errs, err)
				}
				cutEgress = cutEgress || s.egress != nil
				drain = false // the stages after it cannot drain: it will never close its out-links
			}
		}
		if cutEgress {
			p.stopPump() // deliver what is in the egress and stop
		}
		if !p.started.Load() {
			close(p.pumpDone)
		} else {
			select {
			case <-p.pumpDone:
			case <-ctx.Done():
				p.stopPump()
				<-p.pumpDone
				errs = append(errs, fmt.Errorf("ringactor: results not all delivered: %w", ctx.Err()))
			}
		}
		p.stopPump()
		for _, s := range p.stages {
			if f == nil || s.spec.Name != f.Stage { // a faulted stage's actor is already stopped
				p.rt.system.Root.StopFuture(s.pid).Wait()
			}
		}
		p.tele.close()
		p.freeLinks()
		for _, s := range p.stages {
			p.rt.retireStage(s)
		}
		p.rt.releaseName(p.spec.Name)
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// Wait blocks until the pipeline has delivered its last result (after
// Close, or once its stages ended by themselves) or ctx ends.
func (p *Pipeline) Wait(ctx context.Context) error {
	if err := ctxcheck.NotNil(ctx, "Pipeline.Wait"); err != nil {
		return err
	}
	select {
	case <-p.pumpDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PipelineStats is the pipeline's account: Sent + Copied = Delivered +
// DeadLettered + InFlight. Copied counts the extra copies RouteAll stages
// made (a result sent to k stages is k messages from there on: k-1
// copies); each copy ends delivered or dead-lettered like any message. A
// stage counts its copies after it has published them, so while messages
// move Copied may trail a copy's end by a moment (InFlight reads 0 then,
// never less); once the pipeline is still, the account is exact.
// Abandoned counts the outcomes (among Delivered and DeadLettered) of
// requests whose caller had given up.
type PipelineStats struct {
	Sent, Copied, Delivered, DeadLettered, InFlight uint64
	Abandoned                                       uint64
	Stages                                          []StageStats
}

// account is the pipeline's counters without the stages' status.
func (p *Pipeline) account() PipelineStats {
	return statsOf(p.acct.Read(func() uint64 { return p.copied(nil) }), nil)
}

// Stats reads the pipeline's counters and every stage's status.
func (p *Pipeline) Stats() PipelineStats {
	var stages []StageStats
	for _, s := range p.stages {
		stages = append(stages, s.stats())
	}
	return statsOf(p.acct.Read(func() uint64 { return p.copied(stages) }), stages)
}

func statsOf(t account.Totals, stages []StageStats) PipelineStats {
	return PipelineStats{Sent: t.Sent, Copied: t.Copied, Delivered: t.Delivered, DeadLettered: t.DeadLettered,
		InFlight: t.InFlight, Abandoned: t.Abandoned, Stages: stages}
}

// copied is the copies RouteAll stages made: each result they passed on
// went to len(To) stages. stats, when given, are the stages' status.
func (p *Pipeline) copied(stats []StageStats) uint64 {
	var n uint64
	for i, s := range p.stages {
		if s.fanout() < 2 {
			continue
		}
		var processed uint64
		if stats != nil {
			processed = stats[i].Processed
		} else {
			processed = s.kernel.Status().Processed
		}
		n += processed * uint64(s.fanout()-1)
	}
	return n
}

// Latency summarises each stage's sampled queue waits and service times.
func (p *Pipeline) Latency() []StageLatency {
	out := make([]StageLatency, len(p.stages))
	for i, s := range p.stages {
		out[i] = p.tele.latency(s)
	}
	return out
}

// Number is the pipeline's number in its process: the owner its links'
// LinkIDs name ("pipeline 7 stage 1 out 2"), printed by Describe.
func (p *Pipeline) Number() uint32 { return p.number }

// Describe shows the built pipeline: stages, devices, where each link
// lives, and where each stage's results go.
func (p *Pipeline) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pipeline %q (number %d) on %s backend, %d stages\n", p.spec.Name, p.number, p.rt.gpus.Name(), len(p.stages))
	for _, s := range p.stages {
		if s.dev.Kind == KindCPU {
			fmt.Fprintf(&b, "  (device %d is the CPU, run by goroutines beside the GPUs)\n", s.dev.ID)
			break
		}
	}
	for i, s := range p.stages {
		mode := fmt.Sprintf("stateless, %d worker(s)", max(s.spec.Workers, 1))
		if s.spec.Stateful {
			mode = "stateful"
		}
		fmt.Fprintf(&b, "  %d. %-10s op %s%v on device %d (%s), %s\n", i+1, s.spec.Name, s.spec.Op, s.spec.Params, s.spec.Device, s.dev.Name, mode)
		fmt.Fprintf(&b, "     ingress: %s, %d slots of %d B\n", s.inPlacement, s.ingressLink.Cap(), s.ingressLink.Config().SlotSize)
		for _, e := range s.ups {
			fmt.Fprintf(&b, "     from %s: %s over %s, %d slots of %d B\n", e.peer.spec.Name, e.pl, p.rt.reg.Connection(e.peer.spec.Device, s.spec.Device), e.link.Cap(), e.link.Config().SlotSize)
		}
		if len(s.outs) > 1 || s.spec.Route != RouteOne {
			to := make([]string, len(s.outs))
			for k, e := range s.outs {
				to[k] = e.peer.spec.Name
			}
			route := s.spec.Route.String()
			if s.spec.Route == RouteKey {
				route += fmt.Sprintf(" (u32 at byte %d)", s.spec.KeyOffset)
			}
			fmt.Fprintf(&b, "     to %s, route %s\n", strings.Join(to, ", "), route)
		}
		if e := s.egress; e != nil {
			fmt.Fprintf(&b, "     egress: %s, %d slots of %d B\n", e.pl, e.link.Cap(), e.link.Config().SlotSize)
		}
	}
	return b.String()
}
