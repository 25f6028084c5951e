package cluster

import (
	"context"
	"errors"
	"testing"

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
	n, ctx := soloNode(t)
	spec := ra.PipelineSpec{Name: "slots", Stages: []ra.StageSpec{{Name: "a", Op: "identity"}},
		Deliver: ext.Of(n.rt).WithSlots(ra.Sink{}, func(context.Context, []p2pqueue.Header, [][]byte) {})}
	if cp, err := n.Build(ctx, spec, Options{}); !errors.Is(err, ra.ErrBadPipeline) {
		if cp != nil {
			cp.Close(ctx, false)
		}
		t.Fatalf("%v, want ErrBadPipeline", err)
	}
}
