package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
)

// Tests of the public API used wrongly, and raced against Close: every
// message ends delivered or dead-lettered, every mistake gets an error.

// Data sent to stage PIDs from several goroutines while Close runs: every
// message is counted in Sent and ends delivered or dead-lettered, also
// those that reach a PID after its actor stopped (protoactor hands them
// to its dead-letter process). 20 runs.
func TestPIDSendsRacingCloseLoseNothing(t *testing.T) {
	e := deviceEnv(t)
	for run := range 20 {
		var delivered, dead atomic.Uint64
		spec := guide("race-pid")
		spec.Deliver.Func = func(ra.Result) { delivered.Add(1) }
		spec.OnDeadLetter = func(d ra.DeadLetter) {
			dead.Add(1)
			if d.Reason != ra.ReasonPipelineClosed && d.Reason != ra.ReasonShutdown {
				t.Errorf("run %d: dead letter %v; want pipeline closed or shutdown without drain", run, d)
			}
		}
		p := buildStarted(t, e.RT, spec)
		// Each sender sends until Close has returned, and 50 more after.
		const senders = 4
		var wg sync.WaitGroup
		var sent atomic.Uint64
		started, closed := make(chan struct{}, senders), make(chan struct{})
		for g := range senders {
			pid, _ := p.PID(p.StageNames()[g%3]) // any stage takes data
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := &ra.Data{Floats: []float32{1}}
				after := -1
				for i := 0; after != 0; i++ {
					if i == 100 {
						started <- struct{}{}
					}
					e.RT.System().Root.Send(pid, d)
					sent.Add(1)
					select {
					case <-closed:
						if after < 0 {
							after = 50
						}
						after--
					default:
					}
				}
			}()
		}
		for range senders {
			<-started
		}
		if err := p.Close(ctxT(t), false); err != nil {
			t.Fatalf("run %d: close: %v", run, err)
		}
		close(closed)
		wg.Wait()
		st := p.Stats()
		if st.Sent != sent.Load() || st.InFlight != 0 || st.Delivered+st.DeadLettered != st.Sent ||
			st.Delivered != delivered.Load() || st.DeadLettered != dead.Load() {
			t.Fatalf("run %d: %d sent to PIDs; account %+v, callbacks saw %d delivered, %d dead", run, sent.Load(), st, delivered.Load(), dead.Load())
		}
	}
}

// One Data sent to a stage PID after Close has returned is counted and
// dead-lettered "pipeline closed" before Send returns.
func TestPIDSendAfterCloseIsDeadLettered(t *testing.T) {
	e := deviceEnv(t)
	var got []ra.DeadLetter
	var mu sync.Mutex
	spec := guide("after-close")
	spec.OnDeadLetter = func(d ra.DeadLetter) { mu.Lock(); got = append(got, d); mu.Unlock() }
	p := buildStarted(t, e.RT, spec)
	pid, _ := p.PID("root")
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	e.RT.System().Root.Send(pid, ra.Data{ID: 77, Floats: []float32{4}})
	st := p.Stats()
	mu.Lock()
	defer mu.Unlock()
	if st.Sent != 1 || st.DeadLettered != 1 || st.InFlight != 0 || len(got) != 1 {
		t.Fatalf("after a send to a closed PID: %+v, dead letters %v", st, got)
	}
	if d := got[0]; d.ID != 77 || d.Stage != "root" || d.Reason != ra.ReasonPipelineClosed || !errors.Is(d.Err, ra.ErrClosed) {
		t.Fatalf("dead letter %+v; want message 77 at root, pipeline closed, ErrClosed", d)
	}
}

// A nil ctx is refused by every call that takes one, with ErrNilContext;
// nothing panics, nothing is counted.
func TestNilContextIsRefused(t *testing.T) {
	e := deviceEnv(t)
	var none context.Context
	if _, err := e.RT.Build(none, guide("nil-ctx")); !errors.Is(err, ra.ErrNilContext) || !strings.Contains(err.Error(), "Runtime.Build") {
		t.Fatalf("Build(nil ctx) = %v; want ErrNilContext naming Runtime.Build", err)
	}
	p, err := e.RT.Build(ctxT(t), guide("nil-ctx"))
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{"Start": p.Start(none), "Send": p.Send(none, ra.Data{Floats: []float32{1}})}
	_, checks["SendBatch"] = p.SendBatch(none, []ra.Data{{Floats: []float32{1}}})
	_, checks["Request"] = p.Request(none, ra.Data{Floats: []float32{1}})
	checks["Wait"] = p.Wait(none)
	checks["Close"] = p.Close(none, true)
	for call, err := range checks {
		if !errors.Is(err, ra.ErrNilContext) {
			t.Errorf("%s(nil ctx) = %v; want ErrNilContext", call, err)
		}
	}
	if st := p.Stats(); st.Sent != 0 {
		t.Fatalf("nil-ctx sends were counted: %+v", st)
	}
	if err := p.Close(ctxT(t), true); err != nil { // the nil-ctx Close did not close it
		t.Fatal(err)
	}
}

// A ctx that has already ended is answered with its error before any
// work: the message is not sent and not counted.
func TestEndedContextSendsNothing(t *testing.T) {
	e := deviceEnv(t)
	var delivered atomic.Int64
	p := startCounting(t, e.RT, "ended-ctx", &delivered)
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	if err := p.Send(ctx, ra.Data{Floats: []float32{1}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send(cancelled) = %v; want context.Canceled", err)
	}
	if n, err := p.SendBatch(ctx, []ra.Data{{Floats: []float32{1}}, {Floats: []float32{2}}}); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("SendBatch(cancelled) = %d, %v; want 0, context.Canceled", n, err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Sent != 0 || st.DeadLettered != 0 || delivered.Load() != 0 {
		t.Fatalf("sends with an ended ctx did something: %+v, %d delivered", st, delivered.Load())
	}
}

// Closed objects refuse work with errors wrapping a sentinel, and
// Runtime.Close ends the pipelines still open without losing a message.
func TestClosedRuntimeAndPipelineRefuseWork(t *testing.T) {
	e := deviceEnv(t)
	var delivered atomic.Int64
	closed := startCounting(t, e.RT, "closed-first", &delivered)
	if err := closed.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if err := closed.Start(ctxT(t)); !errors.Is(err, ra.ErrClosed) {
		t.Fatalf("Start after Close = %v; want ErrClosed", err)
	}
	open := startCounting(t, e.RT, "left-open", &delivered)
	for i := range 500 {
		if err := open.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.RT.Close(); err != nil {
		t.Fatal(err)
	}
	if st := open.Stats(); st.Sent != 500 || st.InFlight != 0 || st.Delivered+st.DeadLettered != 500 {
		t.Fatalf("a pipeline left open at Runtime.Close: %+v", st)
	}
	if err := open.Send(ctxT(t), ra.Data{Floats: []float32{1}}); !errors.Is(err, ra.ErrClosed) {
		t.Fatalf("Send after Runtime.Close = %v; want ErrClosed", err)
	}
	if _, err := e.RT.Build(ctxT(t), guide("too-late")); !errors.Is(err, ra.ErrRuntimeClosed) {
		t.Fatalf("Build after Runtime.Close = %v; want ErrRuntimeClosed", err)
	}
	if err := e.RT.Close(); err != nil {
		t.Fatalf("a second Runtime.Close = %v; want nil", err)
	}
}

// Dead letters carry the error of their class: "mailbox full" wraps
// ErrMailboxFull and "send cancelled" ctx's error, never ErrClosed while
// the pipeline is open.
func TestDeadLetterErrorsMatchTheirReason(t *testing.T) {
	e := deviceEnv(t)
	var mu sync.Mutex
	var dead []ra.DeadLetter
	for _, bp := range []ra.Backpressure{ra.Reject, ra.Block} {
		spec := ra.PipelineSpec{Name: "classes", Stages: []ra.StageSpec{{Name: "only", Op: "identity", Capacity: 2, Backpressure: bp}},
			OnDeadLetter: func(d ra.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }}
		p := buildStarted(t, e.RT, spec)
		pid, _ := p.PID("only")
		if _, err := e.RT.System().Root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(ctxT(t), 20*time.Millisecond) // the stage is deactivated: it can only end
		_, err := p.SendBatch(ctx, make([]ra.Data, 5))
		cancel()
		wantErr, wantReason := error(ra.ErrMailboxFull), ra.ReasonMailboxFull
		if bp == ra.Block {
			wantErr, wantReason = context.DeadlineExceeded, ra.ReasonSendCancelled
		}
		if !errors.Is(err, wantErr) || errors.Is(err, ra.ErrClosed) {
			t.Fatalf("%v: SendBatch into a full stage = %v; want %v", bp, err, wantErr)
		}
		mu.Lock()
		if len(dead) != 3 {
			t.Fatalf("%v: %d dead letters, want 3 (5 sent to 2 slots): %v", bp, len(dead), dead)
		}
		for _, d := range dead {
			if d.Reason != wantReason || !errors.Is(d.Err, wantErr) || errors.Is(d.Err, ra.ErrClosed) {
				t.Fatalf("%v: dead letter %v (err %#v); want %q wrapping %v", bp, d, d.Err, wantReason, wantErr)
			}
		}
		dead = dead[:0]
		mu.Unlock()
		if err := p.Close(ctxT(t), true); err != nil {
			t.Fatal(err)
		}
	}
}

// Stop{} to the middle stage: it is answered; the stage and the one
// feeding it end, what they held is dead-lettered "stage stopped", and so
// is everything sent to them afterwards (Send returns ErrStageStopped);
// the stage after them still works; the account reaches InFlight 0
// before Close.
func TestStopMiddleStageThenSend(t *testing.T) {
	for _, drain := range []bool{false, true} {
		e := deviceEnv(t)
		a := newAccount()
		spec := guide("stop-middle")
		spec.Deliver.Func, spec.OnDeadLetter = a.result, a.deadLetter
		p := buildStarted(t, e.RT, spec)
		const before, after = 2000, 100
		ds := make([]ra.Data, before)
		for i := range ds {
			ds[i] = ra.Data{ID: uint64(i + 1), Floats: []float32{float32(i)}}
		}
		if n, err := p.SendBatch(ctxT(t), ds); n != before || err != nil {
			t.Fatalf("SendBatch: %d, %v", n, err)
		}
		root := e.RT.System().Root
		mid, _ := p.PID("root")
		ans, err := root.RequestFuture(mid, ra.Stop{Drain: drain}, 15*time.Second).Result()
		if st, ok := ans.(ra.StageStats); err != nil || !ok || st.State.String() != "terminated" {
			t.Fatalf("drain %v: Stop answered %v, %v; want the stage's stats, terminated", drain, ans, err)
		}
		first, _ := p.PID("double")
		last, _ := p.PID("inc")
		for i := range after {
			id := uint64(before + 1 + 3*i)
			if err := p.Send(ctxT(t), ra.Data{ID: id, Floats: []float32{1}}); !errors.Is(err, ra.ErrStageStopped) {
				t.Fatalf("drain %v: Send after Stop = %v; want ErrStageStopped", drain, err)
			}
			root.Send(mid, ra.Data{ID: id + 1, Floats: []float32{1}})
			root.Send(last, ra.Data{ID: id + 2, Floats: []float32{1}}) // downstream of the stop: still running
		}
		if err := p.Idle(ctxT(t)); err != nil {
			t.Fatalf("drain %v: Idle after Stop: %v", drain, err)
		}
		if _, err := root.RequestFuture(first, ra.Stats{}, 5*time.Second).Result(); err != nil {
			t.Fatalf("drain %v: Stats to a stopped stage not answered: %v", drain, err)
		}
		if err := p.Close(ctxT(t), true); err != nil {
			t.Fatal(err)
		}
		reasons := a.check(t, before+3*after, p.Stats())
		a.mu.Lock()
		for i := range after {
			id := uint64(before + 3 + 3*i)
			if a.delivered[id] != 1 {
				t.Fatalf("drain %v: message %d sent to the stage after the stopped one was not delivered", drain, id)
			}
		}
		for id := uint64(1); id <= before && drain; id++ {
			if a.delivered[id] != 1 {
				t.Fatalf("drain %v: message %d, sent before the drained stop, was %v", drain, id, a.dead[id])
			}
		}
		a.mu.Unlock()
		if len(reasons) != 1 || reasons["stage stopped"] < 2*after {
			t.Fatalf("drain %v: dead letters by reason %v; want only stage stopped, at least %d", drain, reasons, 2*after)
		}
	}
}

// A drained close behind a deactivated stage whose queues are full, with
// a ctx that never ends (as the README closes): it returns, and every
// message taken is delivered.
func TestDrainedCloseBehindAFullDeactivatedStageReturns(t *testing.T) {
	e := deviceEnv(t)
	a := newAccount()
	spec := guide("full-behind")
	for i := range spec.Stages {
		spec.Stages[i].Capacity = 16
	}
	spec.Deliver.Func, spec.OnDeadLetter = a.result, a.deadLetter
	p := buildStarted(t, e.RT, spec)
	mid, _ := p.PID("root")
	if _, err := e.RT.System().Root.RequestFuture(mid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	for { // until the pipeline before the deactivated stage is full
		ctx, cancel := context.WithTimeout(ctxT(t), 20*time.Millisecond)
		n++
		err := p.Send(ctx, ra.Data{ID: n, Floats: []float32{1}})
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	closeUnbounded(t, p, "behind a full deactivated stage")
	reasons := a.check(t, n, p.Stats())
	if len(reasons) != 1 || reasons["send cancelled"] != 1 || len(a.delivered) != int(n-1) {
		t.Fatalf("dead letters by reason %v, %d delivered of %d; want every taken message delivered", reasons, len(a.delivered), n)
	}
}

// Idle waits for the messages sent so far, and gives up with ctx.
func TestIdleWaitsForWhatWasSent(t *testing.T) {
	e := deviceEnv(t)
	var delivered atomic.Int64
	p := startCounting(t, e.RT, "idle", &delivered)
	for i := range 3000 {
		if err := p.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Idle(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.InFlight != 0 || st.Delivered != 3000 || delivered.Load() != 3000 {
		t.Fatalf("after Idle: %+v, %d delivered", st, delivered.Load())
	}
	mid, _ := p.PID("root")
	if _, err := e.RT.System().Root.RequestFuture(mid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(ctxT(t), ra.Data{Floats: []float32{1}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 20*time.Millisecond) // the message waits behind a deactivated stage: Idle can only time out
	defer cancel()
	if err := p.Idle(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 messages in flight") {
		t.Fatalf("Idle with a message held = %v; want DeadlineExceeded naming 1 in flight", err)
	}
	var none context.Context
	if err := p.Idle(none); !errors.Is(err, ra.ErrNilContext) {
		t.Fatalf("Idle(nil) = %v", err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
}

// A Chan sink nobody reads: Close (with a ctx that never ends) returns
// after Sink.CloseWait, and what the channel never took is dead-lettered
// "sink not read", not counted as delivered.
func TestUnreadSinkChanIsDeadLettered(t *testing.T) {
	e := deviceEnv(t)
	for _, buffered := range []int{0, 10} {
		res := make(chan ra.Result, buffered)
		a := newAccount()
		spec := guide("unread")
		spec.Deliver = ra.Sink{Chan: res, CloseWait: 50 * time.Millisecond}
		spec.OnDeadLetter = a.deadLetter
		p := buildStarted(t, e.RT, spec)
		const n = 100
		for i := range n {
			if err := p.Send(ctxT(t), ra.Data{ID: uint64(i + 1), Floats: []float32{1}}); err != nil {
				t.Fatal(err)
			}
		}
		closeUnbounded(t, p, "with an unread Chan sink")
		close(res)
		for r := range res {
			a.result(r)
		}
		reasons := a.check(t, n, p.Stats())
		if len(a.delivered) != buffered || reasons["sink not read"] != n-buffered {
			t.Fatalf("buffer %d: %d delivered, dead letters %v; want the buffer's worth delivered, the rest sink not read", buffered, len(a.delivered), reasons)
		}
		for _, d := range a.dead {
			if !errors.Is(d.Err, ra.ErrSinkNotRead) {
				t.Fatalf("dead letter %v; want ErrSinkNotRead", d)
			}
		}
	}
}

// Every sampled message that dies has its root span, ended with the
// error status and the reason, whether the host refused it (mailbox full,
// oversize, pipeline closed) or a kernel dropped it (shutdown without
// drain); and no root span ends before its stage spans.
func TestDeadSampledMessagesHaveRootSpans(t *testing.T) {
	e := deviceEnv(t)
	a := newAccount()
	spec := guide("dead-traces")
	spec.SampleRatio = 1
	spec.Stages[0].Capacity, spec.Stages[0].Backpressure = 4, ra.Reject
	spec.Stages[0].SlotSize = 64
	spec.Deliver.Func, spec.OnDeadLetter = a.result, a.deadLetter
	p := buildStarted(t, e.RT, spec)
	id := uint64(0)
	next := func() uint64 { id++; return id }
	for range 50 { // delivered (one at a time: the first stage rejects a fifth)
		if err := p.Send(ctxT(t), ra.Data{ID: next(), Floats: []float32{2}}); err != nil {
			t.Fatal(err)
		}
		if err := p.Idle(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	p.Send(ctxT(t), ra.Data{ID: next(), Floats: make([]float32, 100)}) // oversize
	mid, _ := p.PID("root")
	if _, err := e.RT.System().Root.RequestFuture(mid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	first, _ := p.PID("double")
	if _, err := e.RT.System().Root.RequestFuture(first, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	for range 10 { // 4 fit, then mailbox full
		p.Send(ctxT(t), ra.Data{ID: next(), Floats: []float32{1}})
	}
	if err := p.Close(ctxT(t), false); err != nil { // the 4 queued: shutdown without drain
		t.Fatal(err)
	}
	p.Send(ctxT(t), ra.Data{ID: next(), Floats: []float32{1}}) // pipeline closed
	reasons := a.check(t, id, p.Stats())
	for _, r := range []string{"oversize payload", "mailbox full", "shutdown without drain", "pipeline closed"} {
		if reasons[r] == 0 {
			t.Fatalf("dead letters by reason %v: none %q", reasons, r)
		}
	}
	roots := map[uint64]sdktrace.ReadOnlySpan{}
	stageEnd := map[string]time.Time{} // by trace id
	for _, sp := range e.Spans.Ended() {
		if sp.Name() == "send dead-traces" {
			for _, kv := range sp.Attributes() {
				if kv.Key == "messaging.message.id" {
					id, err := strconv.ParseUint(kv.Value.AsString(), 10, 64)
					if err != nil {
						t.Fatalf("messaging.message.id %v: %v", kv.Value.Emit(), err)
					}
					roots[id] = sp
				}
			}
		} else if end := stageEnd[sp.SpanContext().TraceID().String()]; sp.EndTime().After(end) {
			stageEnd[sp.SpanContext().TraceID().String()] = sp.EndTime()
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for mid, d := range a.dead {
		sp, ok := roots[mid]
		if !ok {
			t.Fatalf("dead message %d (%s) has no root span", mid, d.Reason)
		}
		reason := ""
		for _, kv := range sp.Attributes() {
			if kv.Key == "ringactor.dead_letter.reason" {
				reason = kv.Value.AsString()
			}
		}
		if sp.Status().Code != codes.Error || reason != d.Reason.String() {
			t.Fatalf("dead message %d: root status %v, reason %q; want Error, %q", mid, sp.Status(), reason, d.Reason)
		}
	}
	for mid := range a.delivered {
		sp, ok := roots[mid]
		if !ok {
			t.Fatalf("delivered message %d has no root span", mid)
		}
		if end := stageEnd[sp.SpanContext().TraceID().String()]; end.IsZero() || sp.EndTime().Before(end) {
			t.Fatalf("message %d: root ends %v, its last stage span %v", mid, sp.EndTime(), end)
		}
	}
}

// Sizes are refused as the user wrote them, and a link bigger than the
// device's or the host's memory is refused up front (it used to end the
// process with Go's fatal "out of memory"); an unknown device matches
// ErrNoDevice.
func TestSizesAndDevicesAreRefusedWithTheUsersValues(t *testing.T) {
	e := newEnv(t, "") // sim: the error names its 16 GiB devices
	one := func(s ra.StageSpec) error {
		if s.Name == "" {
			s.Name = "s"
		}
		if s.Op == "" {
			s.Op = "identity"
		}
		p, err := e.RT.Build(ctxT(t), ra.PipelineSpec{Name: "sizes", Stages: []ra.StageSpec{s}})
		if err == nil {
			p.Close(ctxT(t), false)
		}
		return err
	}
	for _, c := range []struct {
		s    ra.StageSpec
		is   error
		says []string
	}{
		{ra.StageSpec{Capacity: -4}, p2pqueue.ErrBadCapacity, []string{"Capacity -4", "power of two"}},
		{ra.StageSpec{Capacity: 3}, p2pqueue.ErrBadCapacity, []string{"Capacity 3"}},
		{ra.StageSpec{SlotSize: -64}, p2pqueue.ErrBadSlotSize, []string{"SlotSize -64", "multiple of 64"}},
		{ra.StageSpec{SlotSize: 100}, p2pqueue.ErrBadSlotSize, []string{"SlotSize 100"}},
		{ra.StageSpec{Capacity: 1 << 30}, p2pqueue.ErrBadCapacity, []string{"Capacity 1073741824", "device 0", "16.0 GiB", "this host", "lower Capacity or SlotSize"}},
		{ra.StageSpec{Device: 99}, ra.ErrNoDevice, []string{"99"}},
		{ra.StageSpec{Device: -1}, ra.ErrNoDevice, []string{"-1"}},
	} {
		err := one(c.s)
		if !errors.Is(err, c.is) || !errors.Is(err, ra.ErrBadPipeline) {
			t.Errorf("%+v: %v; want %v and ErrBadPipeline", c.s, err, c.is)
			continue
		}
		for _, w := range c.says {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %q does not say %q", c.s, err, w)
			}
		}
		if strings.Contains(err.Error(), "ringactor: ringactor:") {
			t.Errorf("%+v: %q repeats its prefix", c.s, err)
		}
	}
}

// Callers learn the ids assigned to ID 0, auto ids keep clear of
// explicit ones, and a duplicate explicit id travels as given.
func TestAssignedIDsAreReportedAndClearOfExplicitOnes(t *testing.T) {
	e := deviceEnv(t)
	a := newAccount()
	spec := guide("ids")
	spec.Deliver.Func, spec.OnDeadLetter = a.result, a.deadLetter
	spec.Stages[0].SlotSize = 64
	p := buildStarted(t, e.RT, spec)
	id, err := p.SendID(ctxT(t), ra.Data{Floats: []float32{1}})
	if err != nil || id != 1 {
		t.Fatalf("first auto id: %d, %v; want 1", id, err)
	}
	if id, err := p.SendID(ctxT(t), ra.Data{ID: 100, Floats: []float32{1}}); err != nil || id != 100 {
		t.Fatalf("explicit id: %d, %v; want 100", id, err)
	}
	ids := make([]uint64, 4)
	n, err := p.SendBatchIDs(ctxT(t), []ra.Data{{Floats: []float32{1}}, {ID: 7, Floats: []float32{1}}, {Floats: make([]float32, 100)}, {Floats: []float32{1}}}, ids)
	if n != 3 || err == nil { // the third is oversize: dead-lettered, and not taken
		t.Fatalf("SendBatchIDs: %d, %v; want 3 taken and the oversize error", n, err)
	}
	if want := []uint64{101, 7, 102, 103}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v; want %v (auto ids after the explicit 100)", ids, want)
	}
	if err := p.Send(ctxT(t), ra.Data{ID: 7, Floats: []float32{2}}); err != nil { // a duplicate: the caller's
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.delivered[7] != 2 || a.delivered[101] != 1 || a.delivered[103] != 1 || a.dead[102].Reason != ra.ReasonOversize {
		t.Fatalf("delivered %v, dead %v", a.delivered, a.dead)
	}
}

// The kernels' reasons are all in the one list of dead-letter reasons.
func TestKernelReasonsAreInTheList(t *testing.T) {
	for r := rk.ReasonStageError; r <= rk.ReasonPanic; r++ {
		h := ra.ReasonOf(r)
		if !slices.Contains(ra.Reasons, h) || h.String() != r.String() && !(r == rk.ReasonDecode || r == rk.ReasonFaulted || r == rk.ReasonRoute) {
			t.Errorf("kernel reason %q maps to %q", r, h)
		}
		if r != rk.ReasonStageError && h == ra.ReasonStageError {
			t.Errorf("kernel reason %q has no entry in the table (it falls back to stage error)", r)
		}
	}
}

// Reasons are a closed set that reads and writes by name.
func TestReasonsAreNamedAndParsed(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range ra.Reasons {
		name := r.String()
		if seen[name] || strings.HasPrefix(name, "Reason(") {
			t.Fatalf("reason %d: name %q", r, name)
		}
		seen[name] = true
		back, err := ra.ParseReason(name)
		if err != nil || back != r {
			t.Fatalf("ParseReason(%q) = %v, %v", name, back, err)
		}
		b, err := json.Marshal(r)
		if err != nil || string(b) != strconv.Quote(name) {
			t.Fatalf("json %s, %v", b, err)
		}
	}
	if _, err := ra.ParseReason("stage faultd"); err == nil {
		t.Fatal("a misspelt reason parsed")
	}
	var zero ra.Reason
	if zero.Valid() {
		t.Fatal("the zero Reason is valid")
	}
}

// closeUnbounded closes p with drain under a ctx that never ends, as the
// README does, and fails the test if that does not return within the
// test's own deadline (30 s).
func closeUnbounded(t *testing.T, p *ra.Pipeline, what string) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- p.Close(context.Background(), true) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctxT(t).Done():
		t.Fatalf("a drained close with context.Background() %s did not return in 30 s", what)
	}
}

// A caller tells "not sent" from "dead-lettered": a send refused before it
// did anything wraps ErrNotSent and counts nothing; a send whose message
// was counted and dead-lettered does not wrap it.
func TestNotSentIsToldFromDeadLettered(t *testing.T) {
	e := deviceEnv(t)
	spec := guide("notsent")
	spec.Stages[0].Capacity, spec.Stages[0].Backpressure = 2, ra.Reject
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	//lint:ignore SA1012 a nil context is the input under test
	var none context.Context
	for name, f := range map[string]func(ctx context.Context) error{
		"Send": func(ctx context.Context) error { return p.Send(ctx, ra.Data{Floats: []float32{1}}) },
		"SendBatch": func(ctx context.Context) error {
			_, err := p.SendBatch(ctx, []ra.Data{{Floats: []float32{1}}})
			return err
		},
		"Request": func(ctx context.Context) error { _, err := p.Request(ctx, ra.Data{Floats: []float32{1}}); return err },
	} {
		for _, ctx := range []context.Context{ended, none} {
			if err := f(ctx); !errors.Is(err, ra.ErrNotSent) {
				t.Fatalf("%s with a nil or ended ctx: %v; want ErrNotSent", name, err)
			}
		}
	}
	if st := p.Stats(); st.Sent != 0 {
		t.Fatalf("refused sends were counted: %+v", st)
	}
	// Not started: the stage takes 2, then Reject dead-letters the rest.
	_, err = p.SendBatch(ctxT(t), []ra.Data{{Floats: []float32{1}}, {Floats: []float32{2}}, {Floats: []float32{3}}})
	if !errors.Is(err, ra.ErrMailboxFull) || errors.Is(err, ra.ErrNotSent) {
		t.Fatalf("a dead-lettered send: %v; want ErrMailboxFull, not ErrNotSent", err)
	}
	if st := p.Stats(); st.Sent != 3 || st.DeadLettered != 1 {
		t.Fatalf("%+v", st)
	}
	p.Close(ctxT(t), false)
}
