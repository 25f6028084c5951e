package runtime_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
)

// Tests of the public API used wrongly, and raced against Close: every
// message ends delivered or dead-lettered, every mistake gets an error.

// Data sent to stage PIDs from several goroutines while Close runs: every
// message is counted in Sent and ends delivered or dead-lettered, also
// those that reach a PID after its actor stopped (protoactor hands them
// to its dead-letter process). 20 runs.
func TestPIDSendsRacingCloseLoseNothing(t *testing.T) {
	e := newEnv(t, "")
	for run := range 20 {
		var delivered, dead atomic.Uint64
		spec := guide("race-pid")
		spec.Deliver.Func = func(ra.Result) { delivered.Add(1) }
		spec.OnDeadLetter = func(d ra.DeadLetter) {
			dead.Add(1)
			if d.Reason != "pipeline closed" && d.Reason != "shutdown without drain" {
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
	e := newEnv(t, "")
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
	if d := got[0]; d.ID != 77 || d.Stage != "root" || d.Reason != "pipeline closed" || !errors.Is(d.Err, ra.ErrClosed) {
		t.Fatalf("dead letter %+v; want message 77 at root, pipeline closed, ErrClosed", d)
	}
}

// A nil ctx is refused by every call that takes one, with ErrNilContext;
// nothing panics, nothing is counted.
func TestNilContextIsRefused(t *testing.T) {
	e := newEnv(t, "")
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
	e := newEnv(t, "")
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
	e := newEnv(t, "")
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
	e := newEnv(t, "")
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
		wantErr, wantReason := error(ra.ErrMailboxFull), "mailbox full"
		if bp == ra.Block {
			wantErr, wantReason = context.DeadlineExceeded, "send cancelled"
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
