package inmem

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clustertest "github.com/asynkron/protoactor-go/cluster/clusterproviders/test"

	"github.com/ringactor/ringactor/internal/demo"
	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// TestOneNodeInMemory joins one node through the in-memory test provider
// and checks what a node says about itself, the errors that name a fix,
// and a pipeline whose stages name this node (built and run locally).
func TestOneNodeInMemory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := rttest.Devices(t, ra.DeviceOptions{SimDevices: 2}) // the backend under test (rttest.BackendEnv)
	rt := e.RT
	guide := func(name string) ra.PipelineSpec {
		return demo.Guide(name, [3]int{e.Device(0), e.Device(1), e.Device(0)})
	}
	if _, err := cluster.Join(ctx, rt, cluster.NodeConfig{Name: "bad name"}); !errors.Is(err, cluster.ErrNode) {
		t.Errorf("a name with a space: %v, want ErrNode", err)
	}
	if _, err := cluster.Join(ctx, rt, cluster.NodeConfig{Name: "x"}); err == nil || !strings.Contains(err.Error(), "ManagePort") {
		t.Errorf("no provider and no peers: %v, want an error naming ManagePort and Peers", err)
	}
	node, err := cluster.Join(ctx, rt, cluster.NodeConfig{Name: "solo", Provider: clustertest.NewTestProvider(clustertest.NewInMemAgent())})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		lctx, lcancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer lcancel()
		if err := node.Leave(lctx); err != nil {
			t.Error(err)
		}
	}()
	if _, err := cluster.Join(ctx, rt, cluster.NodeConfig{Name: "again", Provider: clustertest.NewTestProvider(clustertest.NewInMemAgent())}); !errors.Is(err, cluster.ErrNode) {
		t.Errorf("second Join: %v, want ErrNode", err)
	}
	if got := node.Members(); len(got) != 1 || got[0] != "solo" {
		t.Errorf("Members = %v, want [solo]", got)
	}
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = node.WaitFor(wctx, "solo", "ghost")
	wcancel()
	if !errors.Is(err, cluster.ErrNode) || !strings.Contains(err.Error(), "ghost") || strings.Contains(err.Error(), "solo,") {
		t.Errorf("WaitFor a node that never comes: %v, want ErrNode naming ghost only", err)
	}

	// A stage on a node that is not there: refused, naming the node and the fix.
	spec := guide("absent")
	spec.Stages[1].Node = "ghost"
	if _, err := node.Build(ctx, spec, cluster.Options{Timeout: time.Second}); !errors.Is(err, cluster.ErrNode) || !strings.Contains(err.Error(), `"ghost"`) {
		t.Errorf("stage on an absent node: %v, want ErrNode naming it", err)
	}
	// Runtime.Build refuses a stage that names a node.
	if _, err := rt.Build(ctx, spec); !errors.Is(err, ra.ErrBadPipeline) || !strings.Contains(err.Error(), "Node.Build") {
		t.Errorf("Runtime.Build with a Node: %v, want ErrBadPipeline naming Node.Build", err)
	}

	// Stages that name this node run here.
	results := make(chan ra.Result, 100)
	spec = guide("self")
	for i := range spec.Stages {
		spec.Stages[i].Node = "solo"
	}
	spec.Deliver = ra.Sink{Chan: results}
	cp, err := node.Build(ctx, spec, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cp.Describe(); !strings.Contains(d, "1 segments") || !strings.Contains(d, "on this node") {
		t.Errorf("Describe:\n%s", d)
	}
	for i := range 100 {
		if err := cp.Send(ctx, ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	// The runtime.Flow calls on local segments: Start does nothing on a
	// built pipeline, a request's result (or dead letter) goes to its
	// caller and not to the sink, PID names a stage's actor here, Idle
	// waits for what was sent.
	var f ra.Flow = cp
	if err := f.Start(ctx); err != nil {
		t.Fatalf("Start of a built cluster pipeline: %v", err)
	}
	if r, err := f.Request(ctx, ra.Data{Floats: []float32{8}}); err != nil || len(r.Floats) != 1 || r.Floats[0] != 5 {
		t.Fatalf("Request(8) = %+v, %v; want 5", r, err)
	}
	if got, err := ra.RequestAs[[]float32](ctx, f, ra.Data{Floats: []float32{32}}); err != nil || len(got) != 1 || got[0] != 9 {
		t.Fatalf("RequestAs(32) = %v, %v; want 9", got, err)
	}
	if _, err := f.Request(ctx, ra.Data{Floats: []float32{-1}}); !errors.Is(err, ra.ErrDeadLettered) {
		t.Fatalf("Request(-1) = %v; want ErrDeadLettered (sqrt of a negative)", err)
	}
	if pid, err := f.PID("sqrt"); err != nil || pid == nil {
		t.Fatalf("PID(sqrt) = %v, %v", pid, err)
	}
	if err := f.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cp.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	if st := cp.Stats(); st.Sent != 103 || st.Delivered != 102 || st.DeadLettered != 1 || len(results) != 100 {
		t.Errorf("stats %+v, %d results; want 103 sent, 102 delivered (100 to the sink), 1 dead-lettered", st, len(results))
	}
	if err := f.Start(ctx); !errors.Is(err, ra.ErrClosed) {
		t.Errorf("Start after Close = %v; want ErrClosed", err)
	}
}
