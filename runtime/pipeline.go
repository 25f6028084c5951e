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
	"github.com/ringactor/ringactor/runtime/internal/buffers"
	"github.com/ringactor/ringactor/runtime/internal/describe"
	"github.com/ringactor/ringactor/runtime/internal/fanout"
	"github.com/ringactor/ringactor/runtime/internal/graph"
	"github.com/ringactor/ringactor/runtime/internal/lanes"
	"github.com/ringactor/ringactor/runtime/internal/lifecycle"
	"github.com/ringactor/ringactor/runtime/internal/links"
	"github.com/ringactor/ringactor/runtime/internal/msgtype"
	"github.com/ringactor/ringactor/runtime/internal/requests"
	"github.com/ringactor/ringactor/runtime/internal/speccheck"
	"github.com/ringactor/ringactor/runtime/internal/telemetry"
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
	// DataPath picks the format of the pipeline's links and the device
	// loop of its kernels; the zero value is the default (see DataPath).
	DataPath DataPath

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
	// Func is called in the egress pumps' goroutines, one per exit stage:
	// calls for one exit come one at a time, in the order its results
	// left it, while calls for different exits may run at once (serialize
	// Func itself for a graph of several exits). A panic in it is
	// recovered: that result is dead-lettered "stage panic" (stage
	// "egress", ErrStagePanic), not delivered, and the pump goes on.
	Func func(Result)
	Chan chan<- Result
	PID  *actor.PID
	// Batch is Func for a batch of an exit's results at a time, lent: the
	// slice and its results' Floats and Bytes (views of the egress link's
	// slots, which then go back to the kernel) are valid only until Batch
	// returns: copy what you keep. A panic dead-letters the whole batch; a
	// result a Request waits for goes to it instead. Not for stage groups.
	Batch func([]Result)
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
	tele   *telemetry.Pipeline
	links  links.Set           // the links it made, which it frees when it closes
	spread *lanes.Spread[Data] // sends go into the first stage's lanes (package lanes)
	unbind func()              // lets go of the buffers its stages bind

	next  [][]int  // stage i's results go to stages next[i]; none: an exit
	takes []uint32 // the message type stage i takes (kernels.TypeAny: any)
	gives []uint32 // the type stage i's results have
	exits []*stage // the stages whose results leave, in stage order

	acct        *account.Account // the message account (docs/ARCHITECTURE.md §6)
	sinks       *deadSinks       // the name and dead-letter subscribers, also for late sends (retireStage)
	sampleEvery uint64

	reqs requests.Table[outcome] // in flight, by message id

	faulted  atomic.Pointer[StageFaulted]
	dog      *lifecycle.Dog
	dogLooks atomic.Uint64 // the watchdog's looks at the stages so far

	startOnce, closeOnce sync.Once
	pumpCtx              context.Context
	stopPump             context.CancelFunc
	pumpDone             chan struct{}
	started              atomic.Bool
	launched             atomic.Bool   // every stage's kernel is launched: the metric callbacks may read them
	closing              atomic.Bool   // Close has begun
	closingCh            chan struct{} // closed when Close begins
	closeErr             error
}

// Build places the pipeline's links, launches a ring kernel per stage (in
// state Launched) and spawns its actors. Start activates it.
//
// Build refuses, with an error wrapping ErrBadPipeline and naming the fix,
// a spec that cannot be built: no stages, an unknown op, a device that
// does not exist (also ErrNoDevice), duplicate names, a Capacity or
// SlotSize out of range or too big for the memory that would hold the
// link (p2pqueue.ErrBadCapacity, ErrBadSlotSize), an unknown DataPath
// (p2pqueue.ErrBadFormat), a bad graph. A DataPath the device's backend
// cannot run fails with its error (ringkernel.ErrUnsupported). It
// refuses a nil or ended ctx (ErrNilContext, ctx's error) and a closed
// runtime (ErrRuntimeClosed). Nothing is left running after an error.
func (rt *Runtime) Build(ctx context.Context, spec PipelineSpec) (*Pipeline, error) {
	if err := ctxcheck.Live(ctx, "Runtime.Build"); err != nil {
		return nil, err
	}
	if rt.closed.Load() {
		return nil, fmt.Errorf("%w: cannot build pipeline %q; make a new Runtime", ErrRuntimeClosed, spec.Name)
	}
	first, err := expandLanes(&spec)
	if err != nil {
		return nil, err
	}
	g, unbind, err := rt.check(&spec, first.N > 1)
	if err != nil {
		return nil, err
	}
	if err = rt.openDevices(ctx, &spec); err == nil {
		err = rt.claimName(spec.Name)
	}
	if err != nil {
		unbind()
		return nil, err
	}
	p := &Pipeline{rt: rt, spec: spec, unbind: unbind, acct: &account.Account{}, next: g.Next, takes: g.In, gives: g.Out, byName: map[string]*stage{}, pumpDone: make(chan struct{}), dog: lifecycle.NewDog(), closingCh: make(chan struct{})}
	p.number = rt.newLinkOwner()
	p.sinks = deadSinksOf(&spec)
	p.spread = lanes.Over(first, spec.Stages[0].SlotSize, func(d *Data) { d.ID = p.idOf(d.ID) },
		func(ctx context.Context, l int, ds []Data, ids []uint64) (int, error) {
			return p.stages[l].ingress.Send(ctx, ds, ids)
		},
		func(d Data, b []byte) ([]byte, bool) {
			_, n, _, err := msgtype.Encode(d.Floats, d.Value, p.takes[0], "", b)
			return b[:n], err == nil
		},
		func(ds []Data, ids []uint64, cause error) {
			p.stages[0].ingress.DeadLetter(ds, ids, ReasonRouteError, cause)
		})
	p.pumpCtx, p.stopPump = context.WithCancel(context.Background())
	if spec.SampleRatio > 0 {
		p.sampleEvery = uint64(math.Max(1, math.Round(1/spec.SampleRatio)))
	}
	if err = p.build(ctx); err == nil {
		err = rt.built(p)
	}
	if err != nil {
		p.teardown()
		rt.releaseName(spec.Name)
		return nil, err
	}
	return p, nil
}

// check validates spec (package speccheck), fills in its defaults,
// resolves its graph (package graph: where each stage's results go) and
// holds the buffers its stages bind until unbind.
func (rt *Runtime) check(spec *PipelineSpec, laned bool) (g graph.Graph, unbind func(), err error) {
	ss, bs := make([]speccheck.Stage, len(spec.Stages)), make([]buffers.Binding, len(spec.Stages))
	for i := range spec.Stages {
		s := &spec.Stages[i]
		*s = s.WithDefaults()
		s.Device = rt.reg.Resolve(s.Device) // CPU: the CPU's real id
		ss[i] = speccheck.Stage{Node: s.Node, Graph: graph.Stage{Name: s.Name, To: s.To, Route: s.Route, KeyOffset: s.KeyOffset, Exit: laned},
			Kernel: s.kernelStage(), Link: s.linkStage(spec.DataPath), BackpressureOK: s.Backpressure == Block || s.Backpressure == Reject, Backpressure: int(s.Backpressure)}
		bs[i] = buffers.Binding{Stage: s.Name, Device: s.Device, Uses: s.Buffers}
	}
	g, err = speccheck.Check(speccheck.Pipeline{Name: spec.Name, SampleRatio: spec.SampleRatio, Sinks: spec.Deliver.sink().Count(spec.Deliver.slots != nil),
		StealIn: len(spec.stealIn), Stages: ss, Reg: rt.reg, DefCapacity: DefaultCapacity, DefSlot: DefaultSlotSize, Supports: rt.supports, TypeName: typeName, Bad: ErrBadPipeline})
	if err != nil {
		return g, nil, err
	}
	if unbind, err = rt.bufs.Pin(bs); err != nil {
		return g, nil, fmt.Errorf("%w %q: %w", ErrBadPipeline, spec.Name, err)
	}
	return g, unbind, nil
}

func (p *Pipeline) build(ctx context.Context) error {
	ls := make([]links.Stage, len(p.spec.Stages))
	for i := range p.spec.Stages {
		ls[i] = p.spec.Stages[i].linkStage(p.spec.DataPath)
	}
	var err error
	if p.links, err = p.rt.links.Make(p.number, ls, p.next); err != nil {
		return err
	}
	for i, ss := range p.spec.Stages {
		dev, _ := p.rt.reg.Device(ss.Device)
		s := &stage{p: p, idx: i, spec: ss, dev: dev, in: p.takes[i], ingressLink: p.links.In[i].Link, inPlacement: p.links.In[i].At}
		q, err := s.ingressLink.Producer()
		if err != nil {
			return err
		}
		s.ingress = s.newIngress(q)
		p.stages = append(p.stages, s)
		p.byName[ss.Name] = s
	}
	// Each edge as both its ends see it; an exit's egress to the host.
	for i, s := range p.stages {
		for k, j := range p.next[i] {
			t, l := p.stages[j], p.links.Out[i][k]
			s.outs = append(s.outs, edge{peer: t, link: l.Link, pl: l.At})
			t.ups = append(t.ups, edge{peer: s, link: l.Link, pl: l.At})
		}
		if len(p.next[i]) > 0 {
			continue
		}
		e := &egress{link: p.links.Egress[i].Link, pl: p.links.Egress[i].At}
		if e.c, err = e.link.Consumer(); err != nil {
			return err
		}
		s.egress = e
		p.exits = append(p.exits, s)
	}
	if p.tele, err = p.newTelemetry(); err != nil {
		return fmt.Errorf("ringactor: telemetry: %w", err)
	}
	for i, s := range p.stages {
		in, out := p.links.Kernel(i)
		var stealTo []*p2pqueue.Link
		if i == 0 {
			in = append(in, p.spec.stealIn...)
			stealTo = p.spec.stealTo
		}
		s := s
		if s.kernel, err = rk.Launch(ctx, p.rt.backend, rk.Spec{
			Stage: s.spec.kernelStage(), ID: s.id(), Device: s.spec.Device, In: in, Out: out, StealTo: stealTo,
			Route: s.spec.Route, KeyOffset: s.spec.KeyOffset, Variant: p.spec.DataPath.Loop,
			OnTrace: func(r rk.TraceRecord) { p.tele.Record(s.idx, r) },
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
		p.rt.links.Uses(s.kernel, in, out, stealTo)
		pid, err := p.rt.stages.Spawn(p.spec.Name+"/"+s.spec.Name, s, s.kernel)
		if err != nil { // pid may be another actor's, holding the name: not ours to stop
			return fmt.Errorf("ringactor: stage %q actor: %w", s.spec.Name, err)
		}
		s.pid = pid
	}
	p.launched.Store(true)
	return nil
}

// teardown ends whatever build made, after a failed build: the stage
// actors it spawned (and their entries among the runtime's stage PIDs),
// the kernels, the telemetry and the links.
func (p *Pipeline) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range p.stages {
		if s.pid != nil {
			p.rt.system.Root.StopFuture(s.pid).Wait()
			p.rt.stages.Forget(s.pid, s)
		}
		if s.kernel != nil {
			s.kernel.Terminate(ctx, false)
		}
	}
	if p.tele != nil {
		p.tele.Close(ReasonPipelineClosed.String())
	}
	p.rt.links.FreeSet(p.links) // not a group's steal links: the group frees them
	p.unbind()
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
		p.dog.Start(p.spec.HangAfter >= 0, p.watchdog)
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
	_, err := p.spread.Send(ctx, []Data{d}, id[:])
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
	return p.spread.Send(ctx, ds, ids)
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

// tellDead ends a dead message's trace, answers its request, and tells
// the spec's subscribers; the account has counted it.
func (p *Pipeline) tellDead(from uint32, d DeadLetter) {
	p.traceEnd(d.ID, from, time.Now(), &d)
	if p.reqs.Pending() {
		dd := d
		p.answer(d.ID, outcome{dead: &dd}) // after the count: an answered request is in the account
	}
	p.rt.tell(p.sinks, d)
}

// tellDeadLetter hands a dead letter to every subscriber spec names (rt
// sends to its PID), as a pipeline does its own; a sub-package that ends
// messages of a spec outside a Pipeline (a cluster pipeline's origin)
// uses it through ext.Host.
func (rt *Runtime) tellDeadLetter(spec *PipelineSpec, d DeadLetter) {
	rt.tell(deadSinksOf(spec), d)
}

// deadSinks is a pipeline's name and dead-letter subscribers.
type deadSinks = fanout.Fanout[DeadLetter]

// deadSinksOf is the dead-letter subscribers spec names.
func deadSinksOf(spec *PipelineSpec) *deadSinks {
	return &deadSinks{Name: spec.Name, On: spec.OnDeadLetter, Chan: spec.DeadLetterChan, PID: spec.DeadLetterPID}
}

// tell hands d to the subscribers f (rt sends to its PID, and publishes
// a panic of its OnDeadLetter).
func (rt *Runtime) tell(f *deadSinks, d DeadLetter) {
	f.Tell(d, rt.system.Root.Send, func(v any, stack []byte) { rt.callbackPanicked(f.Name, "OnDeadLetter", d.ID, v, stack) })
}

// ErrSinkNotRead: a result the pipeline's Chan sink did not take by the
// end of Close.
var ErrSinkNotRead = errors.New("ringactor: sink not read")

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
		p.dog.Stop()
		f, faulted := p.faulted.Load(), ""
		if f != nil {
			faulted = f.Stage
		}
		p.startOnce.Do(func() { p.startPumps(); p.started.Store(true) }) // never started: what it drains still leaves
		cutExit, errs := p.ending().Close(ctx, drain, faulted, p.deadLetterAbandoned)
		if cutExit {
			p.stopPump() // a stage cut off holds its egress open: deliver what is in it and stop
		}
		if err := lifecycle.AwaitPump(ctx, p.pumpDone, p.stopPump); err != nil {
			errs = append(errs, err)
		}
		p.stopPump()
		for _, s := range p.stages {
			if f == nil || s.spec.Name != f.Stage { // a faulted stage's actor is already stopped
				p.rt.system.Root.StopFuture(s.pid).Wait()
			}
		}
		p.tele.Close(ReasonPipelineClosed.String())
		p.rt.links.FreeSet(p.links) // not a group's steal links: the group frees them
		p.unbind()
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

// account is the pipeline's counters without the stages' status. Before
// the build has launched every kernel (a metric collection may come
// then) no copies can have been made.
func (p *Pipeline) account() account.Totals {
	return p.acct.Read(func() uint64 {
		if !p.launched.Load() {
			return 0
		}
		return p.copied(nil)
	})
}

// Stats reads the pipeline's counters and every stage's status.
func (p *Pipeline) Stats() PipelineStats {
	var stages []StageStats
	for _, s := range p.stages {
		stages = append(stages, s.stats())
	}
	t := p.acct.Read(func() uint64 { return p.copied(stages) })
	return PipelineStats{Sent: t.Sent, Copied: t.Copied, Delivered: t.Delivered, DeadLettered: t.DeadLettered,
		InFlight: t.InFlight, Abandoned: t.Abandoned, Stages: stages}
}

// copied is the copies RouteAll stages made: each result they passed on
// went to len(To) stages. stats, when given, are the stages' status.
func (p *Pipeline) copied(stats []StageStats) uint64 {
	return account.Copies(len(p.stages), func(i int) int { return p.stages[i].fanout() }, func(i int) uint64 {
		if stats != nil {
			return stats[i].Processed
		}
		return p.stages[i].kernel.Status().Processed
	})
}

// Latency summarises each stage's sampled queue waits and service times.
func (p *Pipeline) Latency() []StageLatency { return p.tele.Latency() }

// Number is the pipeline's number in its process: the owner its links'
// LinkIDs name ("pipeline 7 stage 1 out 2"), printed by Describe.
func (p *Pipeline) Number() uint32 { return p.number }

// Describe shows the built pipeline: stages, devices, where each link
// lives, and where each stage's results go.
func (p *Pipeline) Describe() string {
	ds := make([]describe.Stage, len(p.stages))
	for i, s := range p.stages {
		ss := s.spec
		d := describe.Stage{Name: ss.Name, Op: ss.Op, Params: ss.Params, Device: ss.Device, DeviceName: s.dev.Name, CPU: s.dev.Kind == KindCPU,
			Workers: ss.Workers, Stateful: ss.Stateful, In: describe.Link{At: s.inPlacement, L: s.ingressLink},
			Route: ss.Route.String(), Routed: ss.Route != RouteOne, Keyed: ss.Route == RouteKey, KeyOffset: ss.KeyOffset, Loop: s.kernel.Variant()}
		for _, e := range s.ups {
			d.From = append(d.From, describe.Link{Peer: e.peer.spec.Name, At: e.pl, Over: p.rt.reg.Connection(e.peer.spec.Device, ss.Device), L: e.link})
		}
		for _, e := range s.outs {
			d.To = append(d.To, e.peer.spec.Name)
		}
		if e := s.egress; e != nil {
			d.Egress = &describe.Link{At: e.pl, L: e.link}
		}
		ds[i] = d
	}
	return describe.Pipeline(p.spec.Name, p.number, p.rt.gpus.Name(), ds)
}
