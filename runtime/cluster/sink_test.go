package cluster

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/ext"
)

// The origin hands results on one at a time, decoded: Node.Build refuses a
// slots sink (a segment's raw egress), which would drop every result. The
// check comes before Build touches the cluster, so a node that never
// joined one shows it (internal/nodeproc/inmem checks a Deliver naming two
// sinks on a joined node).
func TestBuildRefusesASlotsSink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: io.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	n := &Node{rt: rt, cfg: NodeConfig{Name: "solo"}}
	spec := ra.PipelineSpec{Name: "slots", Stages: []ra.StageSpec{{Name: "a", Op: "identity"}},
		Deliver: ext.Of(rt).WithSlots(ra.Sink{}, func(context.Context, []p2pqueue.Header, [][]byte) {})}
	if cp, err := n.Build(ctx, spec, Options{}); !errors.Is(err, ra.ErrBadPipeline) {
		if cp != nil {
			cp.Close(ctx, false)
		}
		t.Fatalf("%v, want ErrBadPipeline", err)
	}
}
