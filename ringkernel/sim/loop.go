package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"

	"github.com/ringactor/ringactor/internal/gate"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

const (
	// spinSteps is how many empty steps a kernel yields through before it
	// parks: a busy producer usually publishes again within that.
	spinSteps = 16
	// parkMax bounds a park, so the heartbeat advances while idle.
	parkMax = 50 * time.Millisecond
	// fullMax bounds the backoff while the out-link is full, and pollMax
	// the backoff of a kernel whose in-link a device writes (no doorbell
	// rings for it).
	fullMax = time.Millisecond
	pollMax = 200 * time.Microsecond
)

// kernel is one ring kernel's loop on goroutines: the lead goroutine owns
// the links and the control block's device line; workers only run the
// stage function over messages the lead hands them.
type kernel struct {
	cb       *rk.ControlBlock
	op       kernels.Op
	params   []float32
	state    []float32
	bufs     [][]byte // the bound buffers' memory (Stage.Buffers)
	stageID  uint32
	live     []*p2pqueue.Consumer // in-links not yet closed and drained
	outLinks []*p2pqueue.Producer // none for a sink
	route    rk.Route
	keyOff   int
	rr       uint64               // results routed one at a time so far (round-robin's turn)
	stealTo  []*p2pqueue.Producer // links to thieves; closed once draining
	cost     time.Duration        // simulated service time per message
	trace    *p2pqueue.Producer
	bell     *p2pqueue.Doorbell
	done     chan struct{}
	next     int // in-link to try first, for fairness
	// polled: some in-link lives in memory a device writes (a GPU stage
	// feeding the CPU device), whose producer cannot ring the doorbell,
	// so idle waits are short sleeps instead of parks.
	polled bool

	life  rk.State
	ack   uint32
	drain bool

	// mu is held by the lead goroutine whenever it may write anything the
	// host reads (links, the trace ring, the control block's device
	// line): always, but while a stage function runs and while it waits.
	// Abandon takes it to cut the loop off between two such stretches.
	mu        sync.Mutex
	abandoned bool // under mu: write nothing more, end
	// gate, when set, holds the loop at the top of its next iteration
	// (Backend.Freeze: a stall of the whole process, for tests).
	gate *gate.Gate

	bar barrierState // CmdBarrier's (barrier.go)

	processed, dropped, errs, traced, stolen uint64
	busy                                     uint64 // ns spent in process

	// One batch, indexed by position in it. Payloads are bytes (inB,
	// outB); a float32 op sees them as floats (ins, outs).
	hdr       []p2pqueue.Header
	inB, outB [][]byte
	ins, outs [][]float32
	res       []int // result bytes
	otype     []uint32
	ports     []int
	codes     []rk.ErrorCode
	causes    []error
	t0, t1    []uint64
	scratch   [][]float32 // in payloads that are not 4-byte aligned
	sink      []byte      // results of a stage with no out-link
	routed    []byte      // results of a routing stage, before they are routed
	events    []p2pqueue.Message
	workers   *workerPool
	outFull   bool
	outCap    int // bytes a result may take

	// kept holds, by message id, the whole error of each dead letter
	// whose record text was cut (a stage panic's value and stack), until
	// the host's pump takes it (rk.CauseKeeper).
	keptMu sync.Mutex
	kept   map[uint64][]error
}

// aligned is n bytes of 8-byte aligned memory: a float op views results
// there as floats, a typed op's fixed-layout struct is aligned as in a slot.
func aligned(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

func newKernel(job *rk.Job) (*kernel, error) {
	tp, err := job.Trace.Producer()
	if err != nil {
		return nil, err
	}
	b := job.Spec.Batch
	k := &kernel{
		cb: job.Control, op: job.Op, stageID: job.Spec.ID,
		params:   append([]float32(nil), job.Spec.Stage.Params...),
		state:    make([]float32, job.Op.StateFloats),
		live:     append([]*p2pqueue.Consumer(nil), job.In...),
		bar:      barrierState{ins: job.In},
		outLinks: job.Out, route: job.Spec.Route, keyOff: job.Spec.KeyOffset,
		stealTo: job.StealTo, trace: tp, bell: p2pqueue.NewDoorbell(), done: make(chan struct{}),
		life: rk.Launched,
		hdr:  make([]p2pqueue.Header, b), ins: make([][]float32, b), outs: make([][]float32, b),
		inB: make([][]byte, b), outB: make([][]byte, b), otype: make([]uint32, b),
		res: make([]int, b), ports: make([]int, b), codes: make([]rk.ErrorCode, b), causes: make([]error, b),
		t0: make([]uint64, b), t1: make([]uint64, b), scratch: make([][]float32, b),
	}
	maxIn := 0
	for _, l := range job.Spec.In {
		l.SetDoorbell(k.bell)
		k.polled = k.polled || l.Region().Kind != p2pqueue.HostMemory
		maxIn = max(maxIn, l.Config().PayloadCap())
	}
	if len(k.outLinks) > 0 {
		// The least any out-slot holds: a routed result fits wherever it goes.
		k.outCap = k.outLinks[0].Link().Config().PayloadCap()
		for _, o := range k.outLinks[1:] {
			k.outCap = min(k.outCap, o.Link().Config().PayloadCap())
		}
		if k.route != rk.RouteOne {
			k.routed = aligned(b * k.outCap)
		}
	} else {
		k.outCap = maxIn
		k.sink = aligned(b * maxIn)
	}
	if w := job.Spec.Stage.Workers; w > 1 && !job.Spec.Stage.Stateful {
		k.workers = newWorkerPool(w-1, k.runOne)
	}
	return k, nil
}

// ---- ringkernel.Loop ----

func (k *kernel) Done() <-chan struct{}        { return k.done }
func (k *kernel) Wake()                        { k.bell.Ring() }
func (k *kernel) HostTime(ns uint64) time.Time { return hostTime(ns) }

// Abandon cuts the loop off (ringkernel.Abandoner): it waits for the
// lead goroutine to finish what it is writing, if anything (never for a
// stage function), and from then on the loop writes nothing and ends
// at its next look, leaving what it had taken without publishing in its
// in-links for the host to count.
func (k *kernel) Abandon() {
	k.mu.Lock()
	k.abandoned = true
	k.mu.Unlock()
	k.bell.Ring()
}

// TakeCause implements rk.CauseKeeper.
func (k *kernel) TakeCause(id uint64) error {
	k.keptMu.Lock()
	defer k.keptMu.Unlock()
	errs := k.kept[id]
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		delete(k.kept, id)
	} else {
		k.kept[id] = errs[1:]
	}
	return errs[0]
}

// keep keeps the whole error of message id's dead letter, whose record
// carries only its cut text; it is kept before the record is written, so
// the pump finds it.
func (k *kernel) keep(id uint64, err error) {
	k.keptMu.Lock()
	defer k.keptMu.Unlock()
	if k.kept == nil {
		k.kept = map[uint64][]error{}
	}
	k.kept[id] = append(k.kept[id], err)
}

// run is the persistent loop: commands, then a step of work, then backoff.
// Every path through it re-reads the control block, so Terminate always
// ends it (unless the stage function itself never returns).
func (k *kernel) run() {
	defer close(k.done)
	if k.workers != nil {
		defer k.workers.stop()
	}
	idle := 0
	for {
		k.gate.Pass()
		k.mu.Lock()
		worked, end := k.iterate()
		k.mu.Unlock()
		if end {
			return
		}
		if worked {
			idle = 0
			continue
		}
		k.wait(&idle)
	}
}

// iterate is one round of the loop, with mu held: it reports whether it
// did any work and whether the loop has ended.
func (k *kernel) iterate() (worked, end bool) {
	if k.abandoned {
		return false, true
	}
	k.cb.Beat(nowNanos())
	k.commands()
	if k.barrierHeld() {
		return false, false // at a barrier: no message until every participant arrives
	}
	switch k.life {
	case rk.Active:
		worked = k.step()
	case rk.Terminating:
		if !k.drain {
			k.deadLetterQueued()
			k.finish(rk.Terminated)
			return false, true
		}
		worked = k.step()
	}
	if k.abandoned {
		return false, true // cut off while the stage function ran: nothing was published
	}
	if k.life == rk.Faulted {
		k.finish(rk.Faulted)
		return false, true
	}
	if len(k.live) == 0 && (k.life == rk.Active || k.life == rk.Terminating) {
		// Every in-link is closed and drained: nothing will ever come.
		k.finish(rk.Terminated)
		return false, true
	}
	return worked, false
}

// commands applies a pending command per the lifecycle table; an invalid
// one is acknowledged and ignored (the host checks before posting).
func (k *kernel) commands() {
	cmd, seq, ok := k.cb.Pending(k.ack)
	if !ok {
		return
	}
	k.ack = seq
	next, err := rk.Next(k.life, cmd)
	if err == nil {
		k.life = next
		switch cmd {
		case rk.CmdTerminate:
			k.drain = false
			k.closeSteal()
		case rk.CmdTerminateDrain:
			k.drain = true
			// No steals once stopping: closing the steal links now lets
			// thieves that drain wait for them end without waiting for us.
			k.closeSteal()
		case rk.CmdSteal:
			arg := k.cb.Arg()
			k.steal(int(uint32(arg)), int(arg>>32))
		case rk.CmdBarrier:
			k.barrierPost()
		}
	}
	k.cb.Apply(k.life, seq)
}

// steal forwards up to n queued messages, slot by slot as they are, to the
// thief behind stealTo[to]; stolen counts them before the command is
// acknowledged, so the host's Steal sees the count.
func (k *kernel) steal(n, to int) {
	if to < 0 || to >= len(k.stealTo) || k.bar.pending || k.bar.waiting {
		return // no steals across a barrier's mark: a phase's messages stay with their kernel
	}
	p := k.stealTo[to]
	var m p2pqueue.Message
	for moved := 0; moved < n; {
		if r, err := p.Reserve(1); err != nil || r == 0 {
			break // the thief's link is full (or closed): it has enough
		}
		took := false
		for i, c := range k.live {
			if err := c.TryDequeue(&m); err != nil {
				if errors.Is(err, p2pqueue.ErrClosed) {
					k.live = append(k.live[:i], k.live[i+1:]...)
					break
				}
				continue
			}
			took = true
			break
		}
		if !took {
			break
		}
		if err := p.Write(0, &m); err != nil {
			// Cannot happen for a slot that fitted the victim's link unless
			// the thief's slots are smaller: the message is not lost.
			k.deadLetter(&m.Header, rk.CodeBadResult, fmt.Errorf("steal: %w", err), nowNanos())
			k.flush()
			continue
		}
		p.Commit(1)
		moved++
		k.stolen++
		k.cb.StoreStolen(k.stolen)
	}
}

func (k *kernel) closeSteal() {
	for _, p := range k.stealTo {
		p.Close()
	}
}

// wait backs off after a step without work: yield a few times (a busy
// producer is about to publish), then park until a publish or a command.
func (k *kernel) wait(idle *int) {
	*idle++
	if *idle <= spinSteps {
		runtime.Gosched()
		return
	}
	if polled := k.polled || k.bar.waiting; k.outFull || polled {
		// Our in-links have messages and the consumer downstream must free
		// room, or a device may publish to us without ringing: sleep a
		// little, waking early for a command.
		d := min(time.Duration(*idle-spinSteps)*20*time.Microsecond, fullMax)
		if polled && !k.outFull {
			d = min(d, pollMax)
		}
		p2pqueue.ParkAll(context.Background(), k.bell, d)
		return
	}
	var cs []*p2pqueue.Consumer
	if k.life == rk.Active || k.life == rk.Terminating {
		cs = k.live
	}
	p2pqueue.ParkAll(context.Background(), k.bell, parkMax, cs...)
}

// step takes one batch from the next in-link that has messages, runs the
// stage over it, and publishes the results. It reports whether anything
// changed.
func (k *kernel) step() bool {
	k.outFull = false
	for tries := range len(k.live) {
		i := (k.next + tries) % len(k.live)
		c := k.live[i]
		want := k.barrierRoom(c, len(k.hdr))
		if want == 0 {
			continue
		}
		n, err := c.Peek(want)
		switch {
		case err == nil:
		case errors.Is(err, p2pqueue.ErrEmpty):
			continue
		case errors.Is(err, p2pqueue.ErrClosed):
			k.live = append(k.live[:i], k.live[i+1:]...)
			return true
		default:
			k.fault(err)
			return true
		}
		// Room for the whole batch on every out-link: a routed batch
		// may send all of it down any one.
		m := n
		for _, o := range k.outLinks {
			r, err := o.Reserve(m)
			if errors.Is(err, p2pqueue.ErrFull) {
				k.outFull = true
				return false
			}
			if err != nil {
				k.fault(err)
				return true
			}
			m = r
		}
		t := nowNanos()
		k.process(c, m)
		k.busy += nowNanos() - t
		k.cb.StoreBusy(k.busy)
		k.next = i + 1
		return true
	}
	return false
}

// process runs the stage over the first m peeked messages of c, writing
// results in place into reserved out slots, then commits and releases.
func (k *kernel) process(c *p2pqueue.Consumer, m int) {
	deq := nowNanos()
	for i := range m {
		k.codes[i], k.causes[i], k.res[i], k.otype[i] = rk.CodeNone, nil, 0, kernels.TypeFloats
		h, p, err := c.Read(i)
		k.hdr[i] = h
		if err != nil {
			k.codes[i], k.causes[i] = rk.CodeCorruptSlot, err
			continue
		}
		k.inB[i] = p
		switch {
		case k.routed != nil:
			k.outB[i] = k.routed[i*k.outCap : (i+1)*k.outCap]
		case len(k.outLinks) > 0:
			buf, _ := k.outLinks[0].Slot(i)
			k.outB[i] = buf[:k.outCap]
		default:
			k.outB[i] = k.sink[i*k.outCap : (i+1)*k.outCap]
		}
		k.t0[i] = deq
		if want := k.op.In; want != kernels.TypeAny && h.Type != want {
			k.codes[i], k.causes[i] = rk.CodeWrongType, fmt.Errorf("message %d: %w: type %d, op %s takes type %d", h.ID, kernels.ErrWrongType, h.Type, k.op.Name, want)
			continue
		}
		if k.op.Typed != nil {
			continue
		}
		in, err := kernels.ViewFloats(p, k.scratch[i])
		if err != nil {
			k.codes[i], k.causes[i] = rk.CodeNotFloats, fmt.Errorf("message %d: %w", h.ID, err)
			continue
		}
		k.ins[i] = in
		k.outs[i], _ = kernels.ViewFloats(k.outB[i], nil) // aligned, a whole number of floats
	}
	// The stage function runs with mu released: a function that never
	// returns must not keep the host from cutting the loop off (Abandon).
	k.mu.Unlock()
	if k.workers != nil && m >= 2*(k.workers.n+1) {
		k.workers.run(m)
	} else {
		for i := range m {
			k.runOne(i)
		}
	}
	if k.cost > 0 {
		time.Sleep(time.Duration(m) * k.cost) // a slower device, simulated
	}
	k.mu.Lock()
	if k.abandoned {
		return // cut off: the batch stays queued, the host counts it
	}
	if k.routed != nil {
		k.publishRouted(m, deq)
	} else {
		k.publish(m, deq)
	}
	// The counters before head, as the device loop: a host that reads
	// head and then the counters (ringkernel.Kernel.Status) finds every
	// message below head counted.
	k.cb.StoreCounters(k.processed, k.dropped, k.errs, k.traced)
	if err := c.Release(m); err != nil {
		k.fault(err)
	}
	k.flush()
}

// publish sends the batch's results down the one out-link (or counts
// them, for a sink), in order, closing the gaps dead letters left.
func (k *kernel) publish(m int, deq uint64) {
	j := 0
	for i := range m {
		h := &k.hdr[i]
		if code := k.codes[i]; code != rk.CodeNone {
			k.deadLetter(h, code, k.causes[i], deq)
			continue
		}
		n := k.res[i]
		if len(k.outLinks) > 0 {
			if j != i {
				copy(k.outB[j], k.outB[i][:n]) // close the gap a dead letter left
			}
			oh := k.outHeader(i)
			k.outLinks[0].WriteHeader(j, &oh, n) // n is within the slot: runOne checked
			j++
		}
		k.processed++
		k.traceOne(i)
	}
	if len(k.outLinks) > 0 {
		if err := k.outLinks[0].Commit(j); err != nil {
			k.fault(err)
		}
	}
}

// publishRouted sends each result down the out-link(s) its route picks
// (rk.ResultRoute), in order per link.
func (k *kernel) publishRouted(m int, deq uint64) {
	var cnt [rk.MaxDeviceOutLinks]int
	for i := range m {
		h := &k.hdr[i]
		if k.codes[i] == rk.CodeNone && k.route != rk.RouteAll {
			d, code := rk.ResultRoute(k.route, len(k.outLinks), k.rr, k.outB[i][:k.res[i]], k.keyOff, k.ports[i])
			if code != rk.CodeNone {
				k.codes[i], k.causes[i] = code, fmt.Errorf("message %d: %s (route %s over %d out-links)", h.ID, code, k.route, len(k.outLinks))
			}
			k.ports[i] = d // from here on: the out-link it goes down
		}
		if code := k.codes[i]; code != rk.CodeNone {
			k.deadLetter(h, code, k.causes[i], deq)
			continue
		}
		n, oh := k.res[i], k.outHeader(i)
		for d, o := range k.outLinks {
			if k.route != rk.RouteAll && d != k.ports[i] {
				continue
			}
			buf, _ := o.Slot(cnt[d])
			copy(buf, k.outB[i][:n])
			o.WriteHeader(cnt[d], &oh, n)
			cnt[d]++
		}
		if k.route != rk.RouteAll {
			k.rr++
		}
		k.processed++
		k.traceOne(i)
	}
	for d, o := range k.outLinks {
		if err := o.Commit(cnt[d]); err != nil {
			k.fault(err)
		}
	}
}

// outHeader is the header of message i's result (a value: a pointer
// would cost an allocation per message).
func (k *kernel) outHeader(i int) p2pqueue.Header {
	h := &k.hdr[i]
	oh := p2pqueue.Header{ID: h.ID, Type: k.otype[i], Flags: h.Flags, Origin: k.stageID}
	if h.Flags&p2pqueue.FlagSampled != 0 {
		oh.Enqueued = k.t1[i]
	}
	return oh
}

// traceOne records message i's pass, if it is sampled.
func (k *kernel) traceOne(i int) {
	if h := &k.hdr[i]; h.Flags&p2pqueue.FlagSampled != 0 {
		k.record(rk.RecordTrace, h, k.t0[i], k.t1[i], rk.CodeNone, "")
	}
}

// runOne runs the stage function on message i of the batch. A panic in
// it is that message's dead letter (rk.CodePanic, the value and stack in
// its error), and the loop goes on: the function runs on this backend's
// goroutines, where its caller could not recover it.
func (k *kernel) runOne(i int) {
	if k.codes[i] != rk.CodeNone {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			k.codes[i], k.causes[i] = rk.CodePanic, panicError(k.op.Name, k.hdr[i].ID, v, debug.Stack())
		}
	}()
	sampled := k.hdr[i].Flags&p2pqueue.FlagSampled != 0
	if sampled {
		k.t0[i] = nowNanos()
	}
	var n, port, room int
	var err error
	unit := "bytes"
	if k.op.Typed != nil {
		k.otype[i], n, port, err = k.op.Typed(k.params, k.state, k.hdr[i].Type, k.inB[i], k.outB[i])
		room = len(k.outB[i])
	} else {
		n, port, err = k.op.RunBuf(k.params, k.state, k.bufs, k.ins[i], k.outs[i])
		room, unit = len(k.outs[i]), "floats"
	}
	k.ports[i] = port
	if sampled {
		k.t1[i] = nowNanos()
	}
	switch {
	case err != nil:
		k.codes[i], k.causes[i] = rk.CodeOf(err), err
	case n < 0 || n > room:
		k.codes[i], k.causes[i] = rk.CodeBadResult, fmt.Errorf("stage returned %d %s, the out slot holds %d", n, unit, room)
	case k.op.Typed != nil:
		k.res[i] = n
	default:
		k.res[i] = 4 * n
	}
}

// deadLetter counts message h as dropped and reports it.
func (k *kernel) deadLetter(h *p2pqueue.Header, code rk.ErrorCode, cause error, deq uint64) {
	k.dropped++
	switch code {
	case rk.CodeShutdown, rk.CodeCorruptSlot, rk.CodeNotFloats, rk.CodeNoKey, rk.CodeBadPort, rk.CodeWrongType:
	default:
		k.errs++ // the stage function failed on it
	}
	k.cb.StoreLastError(code, h.ID)
	text := ""
	if cause != nil {
		var cut bool
		if text, cut = rk.CutText(cause.Error()); cut {
			k.keep(h.ID, cause)
		}
	}
	k.record(rk.RecordDeadLetter, h, deq, nowNanos(), code, text)
}

// panicError is the error of a stage function's panic with value v on
// message id: it wraps rk.ErrStagePanic (and v, when v is an error) and
// ends with the panicking goroutine's stack.
func panicError(op string, id uint64, v any, stack []byte) error {
	if err, ok := v.(error); ok {
		return fmt.Errorf("%w: op %s, message %d: %w\n\n%s", rk.ErrStagePanic, op, id, err, stack)
	}
	return fmt.Errorf("%w: op %s, message %d: %v\n\n%s", rk.ErrStagePanic, op, id, v, stack)
}

// record queues a trace-ring record; flush writes them.
func (k *kernel) record(kind uint32, h *p2pqueue.Header, deq, done uint64, code rk.ErrorCode, text string) {
	if len(k.events) == cap(k.events) {
		k.events = append(k.events, p2pqueue.Message{})
	} else {
		k.events = k.events[:len(k.events)+1]
	}
	e := &k.events[len(k.events)-1]
	if cap(e.Payload) < rk.TraceSlotSize {
		e.Payload = make([]byte, rk.TraceSlotSize) // once per event buffer: reused after
	}
	e.Header = p2pqueue.Header{ID: h.ID, Type: kind, Flags: h.Flags, Origin: k.stageID, Enqueued: h.Enqueued}
	e.Payload = e.Payload[:rk.TraceSlotSize-p2pqueue.SlotHeaderSize]
	e.Payload = e.Payload[:rk.EncodeRecord(e.Payload, deq, done, code, h.Origin, text)]
	if kind == rk.RecordTrace {
		k.traced++
	}
}

// flush writes the queued records, waiting while the trace ring is full
// (the host pump always drains it while the loop runs: records are never
// dropped), then publishes the counters.
func (k *kernel) flush() {
	if len(k.events) > 0 {
		k.trace.EnqueueBatch(context.Background(), k.events)
		k.events = k.events[:0]
	}
	k.cb.StoreCounters(k.processed, k.dropped, k.errs, k.traced)
}

// deadLetterQueued consumes and dead-letters everything queued in the
// in-links (terminate without drain).
func (k *kernel) deadLetterQueued() {
	now := nowNanos()
	for _, c := range k.live {
		for {
			n, err := c.Peek(len(k.hdr))
			if err != nil {
				if !errors.Is(err, p2pqueue.ErrEmpty) && !errors.Is(err, p2pqueue.ErrClosed) {
					k.fault(err)
				}
				break
			}
			for i := range n {
				h, _, _ := c.Read(i) // a corrupt slot still has an id to report
				k.deadLetter(&h, rk.CodeShutdown, errors.New("terminated without drain while queued"), now)
			}
			k.cb.StoreCounters(k.processed, k.dropped, k.errs, k.traced) // before head, as above
			if err := c.Release(n); err != nil {
				k.fault(err)
				break
			}
			k.flush()
		}
	}
	k.live = nil
}

// fault records a corrupt link: the kernel stops with state Faulted.
func (k *kernel) fault(err error) {
	k.life = rk.Faulted
	k.cb.StoreLastError(rk.CodeCorruptQueue, 0)
	k.record(rk.RecordFault, &p2pqueue.Header{}, nowNanos(), nowNanos(), rk.CodeCorruptQueue, err.Error())
}

// finish ends the loop: the out-link is closed after the last publish, the
// final state and counters are stored, and the trace ring is closed last so
// that a drained pump means the kernel's account is complete.
func (k *kernel) finish(s rk.State) {
	for _, o := range k.outLinks {
		o.Close()
	}
	k.closeSteal()
	k.flush()
	k.life = s
	k.cb.SetState(s)
	k.trace.Close()
}

// workerPool runs the stage function over parts of a batch in parallel.
type workerPool struct {
	n    int
	f    func(int)
	work []chan [2]int
	wg   sync.WaitGroup
}

func newWorkerPool(n int, f func(int)) *workerPool {
	p := &workerPool{n: n, f: f}
	for range n {
		ch := make(chan [2]int, 1)
		p.work = append(p.work, ch)
		go func() {
			for r := range ch {
				for i := r[0]; i < r[1]; i++ {
					p.f(i)
				}
				p.wg.Done()
			}
		}()
	}
	return p
}

// run splits [0, m) among the workers and the calling goroutine.
func (p *workerPool) run(m int) {
	parts := p.n + 1
	per := (m + parts - 1) / parts
	p.wg.Add(p.n)
	for w := range p.n {
		lo := min((w+1)*per, m)
		p.work[w] <- [2]int{lo, min(lo+per, m)}
	}
	for i := 0; i < min(per, m); i++ {
		p.f(i)
	}
	p.wg.Wait()
}

func (p *workerPool) stop() {
	for _, ch := range p.work {
		close(ch)
	}
}
