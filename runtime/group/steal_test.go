package group_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ringactor/ringactor/internal/rttest"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/group"
)

// A *Steal sent to a stage is answered as the value Steal is (it used to
// be swallowed: no answer, nothing stolen); a nil one with an error.
func TestStealPointerIsAnswered(t *testing.T) {
	rt := groupEnv(t, nil, nil)
	g, err := group.New(ctxT(t), rt, group.Spec{Name: "ptr", Devices: devices(t, 2), Policy: group.Static, Steal: true, StealEvery: time.Hour,
		Stage: ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background(), false)
	pid, err := g.InstancePID(0)
	if err != nil {
		t.Fatal(err)
	}
	// Deactivated, instance 0 keeps its share queued for the steal.
	if _, err := rt.System().Root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	ds := make([]ra.Data, 200)
	for i := range ds {
		ds[i].Floats = []float32{1}
	}
	if _, err := g.SendBatch(ctxT(t), ds); err != nil {
		t.Fatal(err)
	}
	res, err := rt.System().Root.RequestFuture(pid, &ra.Steal{N: 20, To: 0}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("*Steal: %v", err)
	}
	if s, ok := res.(ra.Stolen); !ok || s.Err != nil || s.Moved == 0 {
		t.Fatalf("*Steal answered %#v", res)
	}
	res, err = rt.System().Root.RequestFuture(pid, (*ra.Steal)(nil), 5*time.Second).Result()
	if s, ok := res.(ra.Stolen); err != nil || !ok || !errors.Is(s.Err, rk.ErrBadSteal) {
		t.Fatalf("nil *Steal answered %#v, %v; want Stolen with ErrBadSteal", res, err)
	}
}

// The coordinator moves work off an instance that does not take it (here
// deactivated, so the case needs no simulated service times and runs on
// every backend with two devices): every message still ends exactly once,
// and the account balances over the group.
func TestGroupStealsFromADeactivatedInstance(t *testing.T) {
	rttest.Need(t, rttest.Steal)
	rt := groupEnv(t, nil, nil)
	c := &collector{seen: map[uint64]int{}}
	g, err := group.New(ctxT(t), rt, group.Spec{Name: "idle", Devices: devices(t, 2), Policy: group.Static, Steal: true,
		Stage:   ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}, Capacity: 256},
		Deliver: ra.Sink{Func: c.result}, OnDeadLetter: c.deadLetter})
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
	const n = 400 // instance 1's share, 200, fits its link
	ds := make([]ra.Data, n)
	for i := range ds {
		ds[i] = ra.Data{ID: uint64(i + 1), Floats: []float32{float32(i + 1)}}
	}
	if _, err := g.SendBatch(ctxT(t), ds); err != nil {
		t.Fatal(err)
	}
	// Instance 0 drains its share and sits empty beside instance 1's queue:
	// the coordinator steals; wait (bounded by the test's context) until
	// some has moved.
	ctx := ctxT(t)
	for g.Stats().Instances[1].Stolen == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("nothing stolen from the deactivated instance: %+v", g.Stats())
		case <-time.After(time.Millisecond):
		}
	}
	if err := g.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	st := g.Stats()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bad) > 0 || len(c.dead) > 0 {
		t.Fatalf("%d wrong results, dead letters %v", len(c.bad), c.dead)
	}
	for i := 1; i <= n; i++ {
		if c.seen[uint64(i)] != 1 {
			t.Fatalf("message %d delivered %d times", i, c.seen[uint64(i)])
		}
	}
	in0, in1 := st.Instances[0], st.Instances[1]
	if st.Delivered != n || st.InFlight != 0 || in0.Processed+in1.Processed != n || in1.Stolen == 0 || in0.Processed <= in0.Assigned ||
		in1.Processed+in1.Stolen != in1.Assigned {
		t.Fatalf("account %+v", st)
	}
	t.Logf("deactivated instance: assigned %d, stolen %d, processed %d after activation", in1.Assigned, in1.Stolen, in1.Processed)
}
