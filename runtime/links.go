package runtime

import "github.com/ringactor/ringactor/runtime/internal/links"

// A link belongs to whoever made it: a pipeline frees its own when it
// closes (freeLinks), a stage group its steal links (ext.Host's FreeLink).
// The runtime's links.Ledger allocates them from its backend, tracks the
// ring kernels given each, and frees a link's memory once all of them
// have ended (package links).

// linkStage is what stage s's links need of it.
func (s *StageSpec) linkStage() links.Stage {
	return links.Stage{Name: s.Name, Device: s.Device, Capacity: s.Capacity, SlotSize: s.SlotSize}
}

// freeLinks gives back the links the pipeline made (not a group's steal
// links, which the group frees), once its kernels are done with them.
func (p *Pipeline) freeLinks() { p.rt.links.FreeSet(p.links) }
