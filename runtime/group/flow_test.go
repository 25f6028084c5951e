package group_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/group"
)

// A group is a runtime.Flow through Flow: Start does nothing on a group
// New started; a request's result goes to its caller, not the sink, and
// a dead letter comes back as a RequestError; a request given up on is
// counted Abandoned when it ends; Idle waits for what is in flight; PID
// names the group's stage; Stats and Latency list each instance.
func TestGroupIsAFlow(t *testing.T) {
	rt := groupEnv(t, nil, nil)
	var sunk, dead atomic.Int64
	g, err := group.New(ctxT(t), rt, group.Spec{Name: "flow", Devices: devices(t, 2), Policy: group.Static,
		Stage:        ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}, Capacity: 256, SlotSize: 64},
		Deliver:      ra.Sink{Func: func(ra.Result) { sunk.Add(1) }},
		OnDeadLetter: func(ra.DeadLetter) { dead.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	f := g.Flow()
	if err := f.Start(ctxT(t)); err != nil {
		t.Fatalf("Start of a started group: %v", err)
	}
	for i := range 2 { // one on each instance (Static)
		if r, err := f.Request(ctxT(t), ra.Data{Floats: []float32{float32(i + 2)}}); err != nil || len(r.Floats) != 1 || r.Floats[0] != float32(3*(i+2)) {
			t.Fatalf("Request(%d) = %+v, %v", i+2, r, err)
		}
	}
	var re *ra.RequestError
	if _, err := f.Request(ctxT(t), ra.Data{Floats: make([]float32, 100)}); !errors.As(err, &re) || re.Dead.Reason != ra.ReasonOversize {
		t.Fatalf("Request of an oversize message = %v; want a RequestError, oversize", err)
	}
	if err := f.Send(ctxT(t), ra.Data{Floats: []float32{1}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Idle(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// Idle returns once the account is still: a result is counted
	// delivered just before the sink's Func runs, so wait for the calls.
	for ctx := ctxT(t); sunk.Load() < 1 || dead.Load() < 1; {
		select {
		case <-ctx.Done():
			t.Fatalf("sink got %d results, subscribers %d dead letters: %v", sunk.Load(), dead.Load(), ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	if sunk.Load() != 1 || dead.Load() != 1 {
		t.Fatalf("sink got %d results, subscribers %d dead letters; want 1 and 1 (the requests' results go to their callers)", sunk.Load(), dead.Load())
	}

	// Held behind deactivated instances, a request is given up on; Idle
	// waits for it; the drained Close ends it, counted Abandoned.
	for i := range 2 {
		pid, _ := g.InstancePID(i)
		if _, err := rt.System().Root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
			t.Fatal(err)
		}
	}
	rctx, cancel := context.WithCancel(ctxT(t))
	go func() { // gives up once the request is in flight
		for f.Stats().InFlight == 0 && rctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := f.Request(rctx, ra.Data{Floats: []float32{7}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Request given up on = %v; want context.Canceled", err)
	}
	ictx, icancel := context.WithTimeout(ctxT(t), 20*time.Millisecond) // a message is held: Idle can only time out
	if err := f.Idle(ictx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Idle with a message held = %v; want DeadlineExceeded", err)
	}
	icancel()
	if pid, err := f.PID("x3"); err != nil || !pid.Equal(g.PID()) {
		t.Fatalf("PID(x3) = %v, %v; want the group's %v", pid, err, g.PID())
	}
	if _, err := f.PID("other"); err == nil {
		t.Fatal("PID of a stage the group does not run: no error")
	}
	if err := f.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	st := f.Stats()
	if st.Sent != 5 || st.Delivered != 4 || st.DeadLettered != 1 || st.InFlight != 0 || st.Abandoned != 1 || len(st.Stages) != 2 || len(f.Latency()) != 2 {
		t.Fatalf("account %+v, %d latencies; want 5 sent, 4 delivered, 1 dead, 1 abandoned, 2 stages", st, len(f.Latency()))
	}
	if sunk.Load() != 1 {
		t.Fatalf("sink got %d results; an abandoned request's result is dropped", sunk.Load())
	}
	if err := f.Start(ctxT(t)); !errors.Is(err, ra.ErrClosed) {
		t.Fatalf("Start after Close = %v; want ErrClosed", err)
	}
}
