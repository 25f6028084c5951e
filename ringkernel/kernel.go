package ringkernel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
)

// Kernel is the host's handle on a launched ring kernel. Its methods are
// safe for concurrent use; commands are applied one at a time.
type Kernel struct {
	spec    Spec
	op      kernels.Op
	backend Backend
	cb      *ControlBlock
	trace   *p2pqueue.Link
	loop    Loop

	cmdMu    sync.Mutex // one command in flight
	pumpDone chan struct{}
	stopPump context.CancelFunc

	lastText atomic.Pointer[string]
	freeOnce sync.Once

	// The control block is returned to the backend when the kernel ends,
	// and its memory may then serve anything else (a calibration buffer,
	// another kernel's control block): cbMu orders reads of it before the
	// free, and final is what it said last, read instead afterwards.
	cbMu  sync.RWMutex
	final *cbFinal

	// hostFault is set by Fault: the host has taken the kernel's account
	// over, and what the loop reports afterwards is not delivered.
	hostFault atomic.Pointer[KernelError]
	// cut is set once Fault has cut an Abandoner loop off: the records in
	// the trace ring are all from before the cut, and are delivered.
	cut atomic.Bool

	bar *kernelBarrier // under cmdMu: the barrier ArriveAt last posted
}

// ErrLaunch: the kernel could not be launched.
var ErrLaunch = errors.New("ringkernel: launch failed")

// ErrHung: the kernel did not end when told to.
var ErrHung = errors.New("ringkernel: kernel did not stop")

// Launch starts a ring kernel for spec on backend b. The kernel starts in
// state Launched: it runs but takes no messages until Activate. Launch
// claims the consumer of each in-link and the producer of the out-link.
func Launch(ctx context.Context, b Backend, spec Spec) (*Kernel, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: no backend", ErrLaunch)
	}
	spec.defaults()
	op, err := spec.check()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: stage %q: %w", ErrLaunch, spec.Stage.Name, err)
	}
	k := &Kernel{spec: spec, op: op, backend: b, pumpDone: make(chan struct{})}
	job := &Job{Spec: spec, Op: op}
	fail := func(err error) (*Kernel, error) {
		for _, c := range job.In {
			c.Detach()
		}
		for _, p := range job.Out {
			p.Detach()
		}
		for _, p := range job.StealTo {
			p.Detach()
		}
		k.free()
		return nil, fmt.Errorf("%w: stage %q on %s device %d: %w", ErrLaunch, spec.Stage.Name, b.Name(), spec.Device, err)
	}
	cbr, err := b.Alloc(spec.Device, CtrlSize, p2pqueue.MappedPinnedMemory)
	if err != nil {
		return fail(err)
	}
	k.cb, err = InitControlBlock(cbr, spec.ID)
	if err != nil {
		b.Free(cbr)
		return fail(err)
	}
	job.Control = k.cb
	tcfg := p2pqueue.Config{Capacity: uint32(spec.TraceCapacity), SlotSize: TraceSlotSize, LinkID: p2pqueue.NewLinkID(spec.ID, p2pqueue.RoleTrace, 0, 0)}
	tsize, err := tcfg.RegionSize()
	if err != nil {
		return fail(err)
	}
	tr, err := b.Alloc(spec.Device, tsize, p2pqueue.MappedPinnedMemory)
	if err != nil {
		return fail(err)
	}
	k.trace, err = p2pqueue.Init(tr, tcfg)
	if err != nil {
		b.Free(tr)
		return fail(err)
	}
	job.Trace = k.trace
	for i, l := range spec.In {
		c, err := l.Consumer()
		if err != nil {
			return fail(fmt.Errorf("in-link %d: %w", i, err))
		}
		job.In = append(job.In, c)
	}
	for i, l := range spec.Out {
		p, err := l.Producer()
		if err != nil {
			return fail(fmt.Errorf("out-link %d: %w", i, err))
		}
		job.Out = append(job.Out, p)
	}
	for i, l := range spec.StealTo {
		if l == nil {
			return fail(fmt.Errorf("steal link %d is nil", i))
		}
		p, err := l.Producer()
		if err != nil {
			return fail(fmt.Errorf("steal link %d: %w", i, err))
		}
		job.StealTo = append(job.StealTo, p)
	}
	pumpCtx, stop := context.WithCancel(context.Background())
	k.stopPump = stop
	tc, err := k.trace.Consumer()
	if err != nil {
		stop()
		return fail(err)
	}
	k.trace.SetDoorbell(p2pqueue.NewDoorbell())
	if k.loop, err = b.Start(job); err != nil {
		stop()
		return fail(err)
	}
	go k.pump(pumpCtx, tc)
	return k, nil
}

// Stage is the kernel's stage definition, ID its stage id, and Variant
// the device loop it was launched with (Spec.Variant).
func (k *Kernel) Stage() Stage         { return k.spec.Stage }
func (k *Kernel) ID() uint32           { return k.spec.ID }
func (k *Kernel) Variant() LoopVariant { return k.spec.Variant }

// Done is closed when the loop has ended and every trace record and dead
// letter it wrote has been delivered (for a kernel Fault cut off: when
// every record it wrote before the cut has been delivered).
func (k *Kernel) Done() <-chan struct{} { return k.pumpDone }

// Ended is closed when the loop itself has ended: for a faulted kernel,
// once its stage function has returned (if it ever does) and the loop
// has seen that it was abandoned. Memory the loop may still write (its
// links) is safe to reuse only after Ended.
func (k *Kernel) Ended() <-chan struct{} { return k.loop.Done() }

// Activate lets the kernel take messages.
func (k *Kernel) Activate(ctx context.Context) error { return k.command(ctx, CmdActivate) }

// Deactivate stops the kernel taking messages; they queue in its in-links
// until Activate. The loop keeps running.
func (k *Kernel) Deactivate(ctx context.Context) error { return k.command(ctx, CmdDeactivate) }

// ErrBadSteal: a steal request the kernel cannot carry out.
var ErrBadSteal = errors.New("ringkernel: bad steal request")

// Steal asks the kernel to forward up to n of its queued messages to the
// thief behind Spec.StealTo[to], and returns how many it moved: fewer when
// fewer are queued or the steal link is full. The kernel moves them itself,
// so it remains the only consumer of its in-links; order across the two
// kernels is not kept.
func (k *Kernel) Steal(ctx context.Context, n, to int) (int, error) {
	if to < 0 || to >= len(k.spec.StealTo) {
		return 0, fmt.Errorf("%w: stage %q has %d steal links, no link %d", ErrBadSteal, k.spec.Stage.Name, len(k.spec.StealTo), to)
	}
	if n <= 0 || n > 1<<30 {
		return 0, fmt.Errorf("%w: stage %q: %d messages", ErrBadSteal, k.spec.Stage.Name, n)
	}
	k.cmdMu.Lock()
	defer k.cmdMu.Unlock()
	before := k.Counters().Stolen
	if err := k.commandLocked(ctx, CmdSteal, uint64(n)|uint64(to)<<32); err != nil {
		return 0, err
	}
	return int(k.Counters().Stolen - before), nil
}

// command posts c and waits until the kernel has applied it.
func (k *Kernel) command(ctx context.Context, c Command) error {
	k.cmdMu.Lock()
	defer k.cmdMu.Unlock()
	return k.commandLocked(ctx, c, 0)
}

func (k *Kernel) commandLocked(ctx context.Context, c Command, arg uint64) error {
	if err := k.faulted(); err != nil {
		return err
	}
	s := k.state()
	if _, err := Next(s, c); err != nil {
		return fmt.Errorf("stage %q: %w", k.spec.Stage.Name, err)
	}
	seq, ok := k.post(c, arg)
	if !ok {
		return fmt.Errorf("stage %q: %s: %w: the loop ended %s", k.spec.Stage.Name, c, ErrTransition, k.state())
	}
	k.loop.Wake()
	return k.awaitAck(ctx, seq, c)
}

func (k *Kernel) awaitAck(ctx context.Context, seq uint32, c Command) error {
	d := time.Microsecond
	for k.acked() != seq {
		if err := k.faulted(); err != nil {
			k.postAbandon()
			return err
		}
		select {
		case <-k.loop.Done():
			if k.acked() == seq {
				return nil
			}
			return fmt.Errorf("stage %q: %s: %w: the loop ended %s", k.spec.Stage.Name, c, ErrTransition, k.state())
		case <-ctx.Done():
			return fmt.Errorf("stage %q: %s not acknowledged: %w", k.spec.Stage.Name, c, ctx.Err())
		case <-time.After(d):
		}
		d = min(2*d, time.Millisecond)
	}
	return nil
}

// Terminate ends the loop. With drain, the kernel first processes every
// message until its in-links are closed and empty; without, it
// dead-letters what is queued (reason "shutdown without drain"). If ctx
// ends before a drain finishes, Terminate stops the kernel without drain
// and returns ctx's error. It returns once the loop has ended and its
// dead letters are delivered; a loop that does not end (a stage function
// that never returns) is reported as ErrHung. Terminating an ended kernel
// returns nil, or the fault that ended it.
func (k *Kernel) Terminate(ctx context.Context, drain bool) error {
	if err := k.faulted(); err != nil {
		if k.cut.Load() {
			// Cut off: it writes nothing more. Deliver what it wrote
			// before the cut; its control block and trace ring are ours.
			<-k.pumpDone
			k.free()
		}
		// Else abandoned: its memory stays with the loop, which may still run.
		return err
	}
	c := CmdTerminate
	if drain {
		c = CmdTerminateDrain
	}
	err := k.command(ctx, c)
	if err != nil && !errors.Is(err, ErrTransition) {
		return k.stopNow(err)
	}
	if errors.Is(err, ErrTransition) && k.state().Running() {
		return err
	}
	select {
	case <-k.loop.Done():
	case <-ctx.Done():
		return k.stopNow(fmt.Errorf("stage %q: drain did not finish, terminated without drain: %w", k.spec.Stage.Name, ctx.Err()))
	}
	return k.finish()
}

// ErrFaulted: the host declared the kernel faulted (Kernel.Fault).
var ErrFaulted = errors.New("ringkernel: kernel faulted")

// Fault declares the kernel faulted from the host, for a loop that stopped
// beating with work queued (a stage function that never returns): a loop
// cannot be killed, only abandoned. From now on Status reports Faulted
// with cause as its last error, and the host owns the account of every
// message still in its in-links (see p2pqueue.Link.Queued).
//
// A loop that is an Abandoner (the sim backend's, and so the CPU's) is
// cut off exactly: once Fault returns it writes nothing more, the records
// it wrote before the cut are still delivered (Done closes once they
// are), and what it had taken without publishing is still queued, so
// every message ends once: by the loop before the cut, or by the host
// from the queue. Its control block and trace ring are freed by
// Terminate, which then returns at once with the fault.
//
// Any other loop (a GPU's) is told to terminate without drain, so that
// it ends if it ever comes back, and the records it writes from now on
// are not delivered; records it wrote just before the fault and a batch
// it publishes as it comes back can then be counted twice or not at
// all. Terminate returns at once. Fault is idempotent; the first cause
// stays.
func (k *Kernel) Fault(cause string) {
	f := &KernelError{Code: CodeHung, Text: cause}
	if _, ok := k.loop.(Abandoner); ok {
		k.cutOff(f)
		return
	}
	if !k.hostFault.CompareAndSwap(nil, f) {
		return
	}
	if k.cmdMu.TryLock() {
		k.postAbandon()
		k.cmdMu.Unlock()
	} // else the command in flight sees the fault and posts it (awaitAck)
}

// postAbandon tells an abandoned loop to end if it comes back. No wait:
// it may never read it. Called with cmdMu held.
func (k *Kernel) postAbandon() {
	k.post(CmdTerminate, 0)
	k.loop.Wake()
}

// faulted is the host-declared fault, or nil.
func (k *Kernel) faulted() error {
	if f := k.hostFault.Load(); f != nil {
		return fmt.Errorf("stage %q: %w: %s", k.spec.Stage.Name, ErrFaulted, f.Text)
	}
	return nil
}

// hangGrace is how long a loop told to stop now may take before it is
// reported hung: one stage function call and one step of the loop.
// cutGrace is the same for a loop the host can cut off exactly
// (Abandoner): past it the loop is cut off and its messages are the
// host's to count, so Terminate does not outlast its ctx by much.
const (
	hangGrace = 2 * time.Second
	cutGrace  = 200 * time.Millisecond
)

// stopNow forces an immediate terminate after cause. A loop that does not
// end within cutGrace is cut off if it is an Abandoner (Abandoned then
// reports true: what it held is still in its in-links, for the host to
// count); any other is reported hung after hangGrace.
func (k *Kernel) stopNow(cause error) error {
	k.cmdMu.Lock()
	if k.state().Running() {
		k.post(CmdTerminate, 0)
		k.loop.Wake()
	}
	k.cmdMu.Unlock()
	_, cuttable := k.loop.(Abandoner)
	grace := hangGrace
	if cuttable {
		grace = cutGrace
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-k.loop.Done():
		if err := k.finish(); err != nil {
			return errors.Join(cause, err)
		}
		return cause
	case <-t.C:
	}
	age := k.Status().HeartbeatAge.Round(time.Millisecond)
	if cuttable {
		text := fmt.Sprintf("did not stop within %v of terminate (heartbeat %v old): cut off, its stage function has not returned", grace, age)
		k.cutOff(&KernelError{Code: CodeHung, Text: text})
		<-k.pumpDone
		k.free()
		return errors.Join(cause, fmt.Errorf("stage %q: %w: %s", k.spec.Stage.Name, ErrHung, text))
	}
	k.stopPump()
	return errors.Join(cause, fmt.Errorf("stage %q: %w within %v of terminate; its heartbeat is %v old",
		k.spec.Stage.Name, ErrHung, grace, age))
}

// cutOff cuts an Abandoner loop off with fault f, unless a fault came
// first: from now on the host counts what it held.
func (k *Kernel) cutOff(f *KernelError) {
	if !k.hostFault.CompareAndSwap(nil, f) {
		return
	}
	k.loop.(Abandoner).Abandon()
	k.cut.Store(true)
	k.stopPump() // the ring holds all it ever will: drain it and end
}

// Abandoned reports whether the host cut the loop off (Fault, or a
// Terminate it did not answer in time, on a loop that is an Abandoner):
// it writes nothing more, and every message still in its in-links is the
// host's to count (p2pqueue.Link.Queued), once the loops feeding them
// have ended.
func (k *Kernel) Abandoned() bool { return k.cut.Load() }

// finish waits for the pump to deliver the rest, frees the kernel's memory,
// and reports a fault.
func (k *Kernel) finish() error {
	select {
	case <-k.pumpDone:
	case <-time.After(hangGrace):
		k.stopPump() // the loop ended without closing its trace link
		<-k.pumpDone
	}
	k.free()
	if st := k.Status(); st.State == Faulted {
		return fmt.Errorf("stage %q faulted: %w", k.spec.Stage.Name, st.LastError)
	}
	return nil
}

// free returns the control block and trace ring to the backend, once,
// after the loop and the pump are done with them (or before a launch
// started the loop), keeping what the control block said last.
func (k *Kernel) free() {
	k.freeOnce.Do(func() {
		if k.cb != nil {
			k.cbMu.Lock()
			k.final = &cbFinal{state: k.cb.State(), counters: k.cb.Counters(), acked: k.cb.Acked()}
			// The links are their owner's to free once the loop has
			// ended: Status reads what they said last from now on.
			for _, l := range k.spec.In {
				ls := l.Stats()
				k.final.inQueued = append(k.final.inQueued, ls.InFlight)
				k.final.inPublished = append(k.final.inPublished, ls.Published)
			}
			for _, l := range k.spec.Out {
				k.final.outQueued += l.Len()
			}
			k.backend.Free(k.cb.Region())
			k.cbMu.Unlock()
		}
		if k.trace != nil {
			k.backend.Free(k.trace.Region())
		}
	})
}

// cbFinal is a freed control block's last word.
type cbFinal struct {
	state    State
	counters Counters
	acked    uint32
	// the links' readings when the kernel was freed
	inQueued    []int
	inPublished []uint64
	outQueued   int
}

// state, Counters and acked read the control block, or its last word once
// it was freed.
func (k *Kernel) state() State {
	k.cbMu.RLock()
	defer k.cbMu.RUnlock()
	if k.final != nil {
		return k.final.state
	}
	return k.cb.State()
}

// Counters reads the kernel's counters from its control block alone (host
// memory on every backend): cheap enough to poll, unlike Status, which
// also reads its links.
func (k *Kernel) Counters() Counters {
	k.cbMu.RLock()
	defer k.cbMu.RUnlock()
	if k.final != nil {
		return k.final.counters
	}
	return k.cb.Counters()
}

func (k *Kernel) acked() uint32 {
	k.cbMu.RLock()
	defer k.cbMu.RUnlock()
	if k.final != nil {
		return k.final.acked
	}
	return k.cb.Acked()
}

// post posts c (with arg) unless the control block was freed: a command
// to an ended kernel must not write into memory that serves something
// else now. ok is false then.
func (k *Kernel) post(c Command, arg uint64) (seq uint32, ok bool) {
	k.cbMu.RLock()
	defer k.cbMu.RUnlock()
	if k.final != nil {
		return 0, false
	}
	return k.cb.PostArg(c, arg), true
}

// pump delivers the trace ring's records until the loop closes it.
func (k *Kernel) pump(ctx context.Context, c *p2pqueue.Consumer) {
	defer close(k.pumpDone)
	defer k.stopPump()
	msgs := make([]p2pqueue.Message, 64)
	for i := range msgs {
		msgs[i].Payload = make([]byte, 0, TraceSlotSize)
	}
	for {
		n, err := c.DequeueBatch(ctx, msgs)
		for i := range n {
			k.deliver(&msgs[i])
		}
		if err != nil && !errors.Is(err, p2pqueue.ErrCorruptSlot) {
			if ctx.Err() != nil {
				k.drain(c, msgs) // told to stop: what is there still counts
			}
			return // closed and drained, or told to stop
		}
	}
}

// drain delivers what is in the trace ring now, without waiting.
func (k *Kernel) drain(c *p2pqueue.Consumer, msgs []p2pqueue.Message) {
	for {
		n, err := c.TryDequeueBatch(msgs)
		for i := range n {
			k.deliver(&msgs[i])
		}
		if n == 0 || (err != nil && !errors.Is(err, p2pqueue.ErrCorruptSlot)) {
			return
		}
	}
}

func (k *Kernel) deliver(m *p2pqueue.Message) {
	if k.hostFault.Load() != nil && !k.cut.Load() {
		return // the host has accounted for this kernel's messages
	}
	deq, done, code, from, text, err := decodeRecord(m.Payload)
	if err != nil {
		text = err.Error()
		k.lastText.Store(&text)
		if m.Type != RecordDeadLetter {
			return // a trace or fault record: the message itself went on
		}
		code = CodeCorruptSlot
	}
	switch {
	case m.Type == RecordDeadLetter:
		if text != "" {
			k.lastText.Store(&text)
		}
		if text == "" {
			text = code.String()
		}
		cause := k.cause(m.ID, code, text) // taken even if nobody listens: the loop keeps it until then
		if k.spec.OnDeadLetter != nil {
			k.spec.OnDeadLetter(DeadLetter{ID: m.ID, Stage: m.Origin, StageName: k.spec.Stage.Name, From: from,
				Reason: reasonOf(code), Code: code, Err: cause})
		}
	case m.Type == RecordFault:
		if text == "" {
			text = code.String() // device loops write codes, not text
		}
		k.lastText.Store(&text)
	case m.Type == RecordTrace:
		if k.spec.OnTrace != nil {
			var enq time.Time
			if m.Enqueued != 0 {
				enq = k.loop.HostTime(m.Enqueued)
			}
			k.spec.OnTrace(TraceRecord{ID: m.ID, Stage: m.Origin, From: from, Flags: m.Flags, Enqueued: enq,
				Dequeued: k.loop.HostTime(deq), Done: k.loop.HostTime(done)})
		}
	}
}

// cause is a dead letter's error: the whole one the loop kept when the
// record's text was cut (CauseKeeper), otherwise the record's text; a
// stage panic's wraps ErrStagePanic either way.
func (k *Kernel) cause(id uint64, code ErrorCode, text string) error {
	if strings.HasSuffix(text, textCut) {
		if ck, ok := k.loop.(CauseKeeper); ok {
			if err := ck.TakeCause(id); err != nil {
				return err
			}
		}
	}
	if code == CodePanic {
		// Without the kept error: still one a caller can match.
		return fmt.Errorf("%w: %s", ErrStagePanic, strings.TrimPrefix(text, ErrStagePanic.Error()+": "))
	}
	return errors.New(text)
}
