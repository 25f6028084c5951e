package cluster

import (
	"fmt"

	ra "github.com/ringactor/ringactor/runtime"
)

// checkCarried refuses, before anything is placed, what a pipeline with
// segments on other nodes cannot carry, rather than build something else:
// a Build message (internal/wire) carries a remote stage's name, op,
// params, device, statefulness, workers, slot size, capacity and
// backpressure, and nothing of a graph, lanes, buffers or the data path;
// segments are joined in the order of the stages, so the pipeline is a
// chain. A pipeline all on this node is one local segment, built as
// Runtime.Build builds it (graph, lanes, buffers, data path and all).
func (cp *Pipeline) checkCarried() error {
	if len(cp.segs) == 1 && cp.segs[0].node == "" {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ra.ErrBadPipeline, cp.spec.Name, fmt.Sprintf(format, args...))
	}
	var zero ra.DataPath
	if cp.spec.DataPath != zero {
		return bad("a DataPath is not carried to other nodes (every segment runs the default); leave it zero, or build the pipeline on one node")
	}
	for _, seg := range cp.segs {
		for _, s := range seg.stages {
			switch {
			case len(s.To) != 0 || s.Route != ra.RouteOne || s.KeyOffset != 0:
				return bad("stage %q: a pipeline across nodes is a chain of its stages in order; leave To, Route and KeyOffset unset, or build the graph on one node", s.Name)
			case seg.node == "":
			case s.Lanes > 1 || s.KeyedLanes || s.LaneKey != 0:
				return bad("stage %q on node %q: lanes are not carried to other nodes; leave Lanes, KeyedLanes and LaneKey unset there, or run the stage on this node", s.Name, seg.node)
			case len(s.Buffers) != 0:
				return bad("stage %q on node %q: a buffer is memory of this process, not carried to other nodes; bind buffers only to stages on this node", s.Name, seg.node)
			}
		}
	}
	return nil
}
