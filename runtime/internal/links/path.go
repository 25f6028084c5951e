package links

import (
	"fmt"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Path is a pipeline's data path (runtime.DataPath): the format of every
// link Make makes for it and the device loop every kernel it launches
// runs. The zero value is the default: indexed links, the classic loop.
// Flagged links and the warp loop are EXPERIMENTAL until measured on a
// GPU (docs/ARCHITECTURE.md §2.4, §4.1).
type Path struct {
	// Links is the format of the pipeline's links: p2pqueue.FormatIndexed
	// (the default) or FormatFlagged, whose slots carry half their bytes
	// as message bytes: a stage's links are then made with twice its
	// SlotSize, so the largest message it takes stays the same.
	Links p2pqueue.Format
	// Loop is the device loop of the pipeline's kernels:
	// ringkernel.LoopClassic (the default), LoopWarp or LoopWarpPrefetch
	// (the warp loop with a pipelined ingress). The sim backend
	// (and the CPU device) runs its one Go loop for either.
	Loop rk.LoopVariant
}

// String names the path as Describe shows it ("indexed links, classic
// loop").
func (p Path) String() string { return fmt.Sprintf("%s links, %s loop", p.Links, LoopName(p.Loop)) }

// LoopName names a device loop ("classic", "warp").
func LoopName(v rk.LoopVariant) string {
	switch v {
	case rk.LoopClassic:
		return "classic"
	case rk.LoopWarp:
		return "warp"
	case rk.LoopWarpPrefetch:
		return "warp-prefetch"
	}
	return fmt.Sprintf("LoopVariant(%d)", uint32(v))
}

// Check refuses a format or loop this build does not know, naming the
// fix (the format's error wraps p2pqueue.ErrBadFormat).
func (p Path) Check() error {
	if p.Links > p2pqueue.FormatFlagged {
		return fmt.Errorf("DataPath.Links %s: %w; use p2pqueue.FormatIndexed (the default) or FormatFlagged", p.Links, p2pqueue.ErrBadFormat)
	}
	if p.Loop > rk.LoopWarpPrefetch {
		return fmt.Errorf("DataPath.Loop %s: unknown device loop; use ringkernel.LoopClassic (the default), LoopWarp or LoopWarpPrefetch", LoopName(p.Loop))
	}
	return nil
}

// config is the Config of a link into stage s (its consumer) in s's
// pipeline's format: a flagged link gets the slots that hold the payload
// an indexed slot of s.SlotSize holds (p2pqueue.ConfigForFormat).
func (s Stage) config(id p2pqueue.LinkID) p2pqueue.Config {
	c := p2pqueue.ConfigForFormat(uint32(s.Capacity), s.SlotSize-p2pqueue.SlotHeaderSize, s.Path.Links)
	c.LinkID = id
	return c
}
