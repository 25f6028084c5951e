package runtime_test

import (
	"sync/atomic"
	"testing"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
)

// A drained close behind a deactivated stage activates it and finishes:
// every message delivered, no error (before, it waited for its whole ctx
// and reported the drain as unfinished).
func TestDrainedCloseActivatesADeactivatedStage(t *testing.T) {
	e := newEnv(t, "")
	var delivered atomic.Int64
	p := startCounting(t, e.rt, "deactivated", &delivered)
	pid, _ := p.PID("root") // the middle stage
	if _, err := e.rt.System().Root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	const n = 1500 // more than one link holds, less than two
	for i := range n {
		if err := p.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatalf("drained close behind a deactivated stage: %v", err)
	}
	if st := p.Stats(); st.Delivered != n || delivered.Load() != n || st.InFlight != 0 {
		t.Fatalf("account %+v, %d delivered", st, delivered.Load())
	}
}

// The same with a stage group, one of whose instances was deactivated.
func TestDrainedCloseActivatesADeactivatedGroupInstance(t *testing.T) {
	rt := groupEnv(t, nil, nil)
	var delivered atomic.Int64
	g, err := rt.Group(ctxT(t), ra.GroupSpec{Name: "g", Devices: []int{0, 1},
		Stage:   ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}, Capacity: 256},
		Deliver: ra.Sink{Func: func(ra.Result) { delivered.Add(1) }}})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := g.InstancePID(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.System().Root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	const n = 400 // the deactivated instance's share fits in its link
	for i := range n {
		if err := g.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(ctxT(t), true); err != nil {
		t.Fatalf("drained close of a group with a deactivated instance: %v", err)
	}
	if st := g.Stats(); st.Delivered != n || delivered.Load() != n || st.InFlight != 0 {
		t.Fatalf("account %+v, %d delivered", st, delivered.Load())
	}
}
