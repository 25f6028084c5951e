package runtime

import "github.com/ringactor/ringactor/runtime/internal/links"

// DataPath is how a pipeline's messages move (PipelineSpec.DataPath): Links,
// the format of every link Build makes for it (p2pqueue.FormatIndexed, the
// default, or FormatFlagged, made with twice each stage's SlotSize so a
// message's limit stays the same), and Loop, the device loop of every kernel
// (ringkernel.LoopClassic, the default, LoopWarp or LoopWarpPrefetch). Flagged
// links and the warp loops are EXPERIMENTAL until measured on a GPU; Describe shows a choice that is not the default.
type DataPath = links.Path

// linkStage is what stage s's links need of it, in a pipeline of path p.
func (s *StageSpec) linkStage(p DataPath) links.Stage {
	return links.Stage{Name: s.Name, Device: s.Device, Capacity: s.Capacity, SlotSize: s.SlotSize, Path: p}
}
