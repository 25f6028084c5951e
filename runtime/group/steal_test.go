package group_test

import (
	"context"
	"errors"
	"testing"
	"time"

	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/group"
)

// A *Steal sent to a stage is answered as the value Steal is (it used to
// be swallowed: no answer, nothing stolen); a nil one with an error.
func TestStealPointerIsAnswered(t *testing.T) {
	rt := groupEnv(t, map[int]time.Duration{0: time.Millisecond}, nil)
	g, err := group.New(ctxT(t), rt, group.Spec{Name: "ptr", Devices: []int{0, 1}, Policy: group.Static, Steal: true, StealEvery: time.Hour,
		Stage: ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background(), false)
	pid, err := g.InstancePID(0)
	if err != nil {
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
