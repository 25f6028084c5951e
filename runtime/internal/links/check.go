package links

import (
	"fmt"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/devreg"
)

// Check refuses a stage's Capacity and SlotSize as the user gave them
// (not as the link's uint32 fields would hold them), and a link too big
// for the memory that would hold it: each of the stage's in-links lives
// in its device's memory or in host memory (the ingress, and on the
// simulator everything), so one link may need neither more than dev has
// nor more than the host has (hostBytes; 0 when unknown). defCapacity and
// defSlotSize are the defaults a zero field takes, which the errors name.
// It also refuses an unknown s.Path (Path.Check), and a SlotSize whose
// flagged links, of twice its size, would be over p2pqueue.MaxSlotSize.
func Check(s Stage, dev rk.Device, hostBytes uint64, defCapacity, defSlotSize int) error {
	if s.Capacity < p2pqueue.MinCapacity || s.Capacity > p2pqueue.MaxCapacity || s.Capacity&(s.Capacity-1) != 0 {
		return fmt.Errorf("stage %q: Capacity %d: %w; use a power of two from %d to %d (0 for the default, %d)",
			s.Name, s.Capacity, p2pqueue.ErrBadCapacity, p2pqueue.MinCapacity, p2pqueue.MaxCapacity, defCapacity)
	}
	if s.SlotSize < p2pqueue.MinSlotSize || s.SlotSize > p2pqueue.MaxSlotSize || s.SlotSize%p2pqueue.SlotAlign != 0 {
		return fmt.Errorf("stage %q: SlotSize %d: %w; use a multiple of %d from %d to %d bytes, the %d-byte slot header included (0 for the default, %d)",
			s.Name, s.SlotSize, p2pqueue.ErrBadSlotSize, p2pqueue.SlotAlign, p2pqueue.MinSlotSize, p2pqueue.MaxSlotSize, p2pqueue.SlotHeaderSize, defSlotSize)
	}
	if err := s.Path.Check(); err != nil {
		return fmt.Errorf("stage %q: %w", s.Name, err)
	}
	cfg := s.config(0)
	if s.Path.Links == p2pqueue.FormatFlagged && cfg.SlotSize > p2pqueue.MaxSlotSize {
		return fmt.Errorf("stage %q: SlotSize %d: %w: a flagged link (DataPath.Links) carries half its slot, so its links would need %d-byte slots, over the %d-byte limit; use a SlotSize of at most %d, or indexed links",
			s.Name, s.SlotSize, p2pqueue.ErrBadSlotSize, 2*s.SlotSize, p2pqueue.MaxSlotSize, p2pqueue.MaxSlotSize/2)
	}
	n, err := cfg.RegionSize()
	if err != nil {
		return fmt.Errorf("stage %q: %w", s.Name, err)
	}
	need := uint64(n)
	if (dev.MemoryBytes > 0 && need > dev.MemoryBytes) || (hostBytes > 0 && need > hostBytes) {
		hostSays := "unknown"
		if hostBytes > 0 {
			hostSays = devreg.GiB(hostBytes)
		}
		return fmt.Errorf("stage %q: %w: Capacity %d slots of SlotSize %d bytes need %s a link (%s), and a stage has at least two; device %d (%s) has %s and this host %s of memory; lower Capacity or SlotSize",
			s.Name, p2pqueue.ErrBadCapacity, s.Capacity, s.SlotSize, devreg.GiB(need), s.Path.Links, dev.ID, dev.Name, devreg.GiB(dev.MemoryBytes), hostSays)
	}
	return nil
}
