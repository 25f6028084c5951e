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
	if _, err := node.Build(ctx, spec, cluster.ClusterOptions{Timeout: time.Second}); !errors.Is(err, cluster.ErrNode) || !strings.Contains(err.Error(), `"ghost"`) {
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
	cp, err := node.Build(ctx, spec, cluster.ClusterOptions{})
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
	if err := cp.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	if st := cp.Stats(); st.Sent != 100 || st.Delivered != 100 || len(results) != 100 {
		t.Errorf("stats %+v, %d results; want 100 delivered", st, len(results))
	}
}
