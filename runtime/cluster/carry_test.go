package cluster

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
)

// soloNode is a node over a runtime of two simulated devices that never
// joined a cluster (enough for Build's refusals and for a pipeline all on
// it), closed when the test ends, and a context of a minute.
func soloNode(t *testing.T) (*Node, context.Context) {
	t.Helper()
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: io.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return &Node{rt: rt, cfg: NodeConfig{Name: "solo"}}, ctx
}

// Node.Build refuses what a pipeline across nodes cannot carry, before it
// touches the cluster (so a node that never joined one shows it), rather
// than build a chain without the graph, a remote stage without its lanes
// or buffers, or segments on the default data path.
func TestBuildRefusesWhatOtherNodesCannotCarry(t *testing.T) {
	n, ctx := soloNode(t)
	flagged := ra.DataPath{Links: p2pqueue.FormatFlagged}
	for _, c := range []struct {
		name, want string
		path       ra.DataPath
		near, far  ra.StageSpec
	}{
		{"data path", "DataPath", flagged, ra.StageSpec{}, ra.StageSpec{}},
		{"warp loop", "DataPath", ra.DataPath{Loop: rk.LoopWarp}, ra.StageSpec{}, ra.StageSpec{}},
		{"graph", "To", ra.DataPath{}, ra.StageSpec{To: []string{"far"}}, ra.StageSpec{}},
		{"route", "Route", ra.DataPath{}, ra.StageSpec{Route: ra.RouteAll}, ra.StageSpec{}},
		{"key offset", "KeyOffset", ra.DataPath{}, ra.StageSpec{}, ra.StageSpec{KeyOffset: 4}},
		{"lanes far", "lanes", ra.DataPath{}, ra.StageSpec{}, ra.StageSpec{Lanes: 2}},
		{"keyed lanes far", "lanes", ra.DataPath{}, ra.StageSpec{}, ra.StageSpec{KeyedLanes: true}},
		{"lane key far", "lanes", ra.DataPath{}, ra.StageSpec{}, ra.StageSpec{LaneKey: 4}},
		{"buffers far", "buffer", ra.DataPath{}, ra.StageSpec{}, ra.StageSpec{Buffers: []ra.BufferUse{{}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			near, far := c.near, c.far
			near.Name, near.Op = "near", "identity"
			far.Name, far.Op, far.Node = "far", "identity", "other"
			spec := ra.PipelineSpec{Name: "carry", Stages: []ra.StageSpec{near, far}, DataPath: c.path}
			cp, err := n.Build(ctx, spec, Options{})
			if cp != nil {
				cp.Close(ctx, false)
			}
			if !errors.Is(err, ra.ErrBadPipeline) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nodes") {
				t.Fatalf("%v, want ErrBadPipeline naming %s and other nodes", err, c.want)
			}
		})
	}
	// What a chain across nodes does carry passes: lanes and a graph's
	// fields are refused only where they would be lost.
	ok := &Pipeline{spec: ra.PipelineSpec{Name: "ok"}, segs: []*segment{
		{stages: []ra.StageSpec{{Name: "near", Lanes: 4, KeyedLanes: true, LaneKey: 4}}},
		{node: "other", stages: []ra.StageSpec{{Name: "far", Workers: 2, Stateful: false, SlotSize: 512, Capacity: 64}}},
	}}
	if err := ok.checkCarried(); err != nil {
		t.Fatalf("a chain with lanes on this node's stage: %v", err)
	}
}

// A pipeline all on this node is one local segment, built as
// Runtime.Build builds it: its DataPath reaches the segment's links and
// kernels, and messages go through.
func TestBuildCarriesTheDataPathToALocalSegment(t *testing.T) {
	n, ctx := soloNode(t)
	results := make(chan ra.Result, 16)
	spec := ra.PipelineSpec{Name: "local-path", Stages: []ra.StageSpec{{Name: "a", Op: "identity"}, {Name: "b", Op: "identity", Device: 1}},
		DataPath: ra.DataPath{Links: p2pqueue.FormatFlagged, Loop: rk.LoopWarp}, Deliver: ra.Sink{Chan: results}}
	cp, err := n.Build(ctx, spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close(ctx, false)
	if d := cp.segs[0].local.Describe(); !strings.Contains(d, "flagged") || !strings.Contains(d, "warp loop") {
		t.Fatalf("the local segment does not run the pipeline's data path:\n%s", d)
	}
	for i := uint64(1); i <= 8; i++ {
		if err := cp.Send(ctx, ra.Data{ID: i, Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 8 {
		select {
		case r := <-results:
			if len(r.Floats) != 1 || r.Floats[0] != float32(r.ID) {
				t.Fatalf("result %+v", r)
			}
		case <-ctx.Done():
			t.Fatal("results did not come back")
		}
	}
}
