package inmem

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	clustertest "github.com/asynkron/protoactor-go/cluster/clusterproviders/test"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// A cluster pipeline's origin hands results on one at a time, decoded:
// Node.Build refuses a Deliver naming two sinks, as Runtime.Build does (and
// a slots sink, runtime's hook for a segment's raw egress, which would drop
// every result: runtime/cluster's TestBuildRefusesASlotsSink, since only
// runtime's sub-packages can make one).
func TestClusterBuildRefusesSinksItCannotFeed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: io.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
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
	for name, sink := range map[string]ra.Sink{
		"two": {Func: func(ra.Result) {}, Chan: make(chan ra.Result)},
	} {
		spec := ra.PipelineSpec{Name: name, Stages: []ra.StageSpec{{Name: "a", Op: "identity"}}, Deliver: sink}
		if cp, err := node.Build(ctx, spec, cluster.Options{}); !errors.Is(err, ra.ErrBadPipeline) {
			if cp != nil {
				cp.Close(ctx, false)
			}
			t.Errorf("%s: %v, want ErrBadPipeline", name, err)
		}
	}
}
