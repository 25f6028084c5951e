package group_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/group"
	"github.com/ringactor/ringactor/runtime/internal/ext"
)

// A group hands its results on one at a time, decoded: a Slots sink (raw
// egress batches, a pipeline's alone) cannot take them, so New refuses it.
// It used to accept it, count every result delivered, and drop it.
func TestGroupRefusesASlotsSink(t *testing.T) {
	rt := groupEnv(t, nil, nil)
	var got atomic.Int64
	spec := group.Spec{Name: "slots", Devices: []int{0, 1}, Stage: ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}},
		Deliver: ext.Of(rt).WithSlots(ra.Sink{}, func(_ context.Context, hs []p2pqueue.Header, _ [][]byte) { got.Add(int64(len(hs))) })}
	g, err := group.New(ctxT(t), rt, spec)
	if err == nil {
		ds := make([]ra.Data, 10)
		for i := range ds {
			ds[i].Floats = []float32{1}
		}
		_, err := g.SendBatch(ctxT(t), ds)
		cerr := g.Close(ctxT(t), true)
		t.Fatalf("New took a Slots sink; 10 sent (%v), close %v: Slots given %d, Stats %+v", err, cerr, got.Load(), g.Stats())
	}
	if !errors.Is(err, group.ErrBadSpec) {
		t.Fatalf("New: %v, want ErrBadSpec", err)
	}
}
