package links

import (
	"fmt"
	"sync"

	"github.com/ringactor/ringactor/p2pqueue"
	"github.com/ringactor/ringactor/runtime/internal/extid"
)

// Memory is where links' memory comes from: the backend's Alloc and Free
// (a ringkernel.Backend has both).
type Memory interface {
	Alloc(device, size int, kind p2pqueue.MemoryKind) (p2pqueue.Region, error)
	Free(p2pqueue.Region) error
}

// Kernel is a user of links: a ring kernel (*ringkernel.Kernel), whose
// Ended is closed once its loop has ended.
type Kernel interface {
	Ended() <-chan struct{}
}

// Ledger tracks the links made and not yet freed, and the kernels given
// each.
type Ledger struct {
	mem  Memory
	topo p2pqueue.Topology

	mu    sync.Mutex
	users map[*p2pqueue.Link][]Kernel
}

// NewLedger returns a ledger that allocates from mem and places links by
// topo.
func NewLedger(mem Memory, topo p2pqueue.Topology) *Ledger {
	return &Ledger{mem: mem, topo: topo, users: map[*p2pqueue.Link][]Kernel{}}
}

// New allocates and formats a link from device from to device to (or
// p2pqueue.Host): where it lives is p2pqueue.Place's choice from the
// topology. id names the link in its header and in errors. The link is
// indexed (p2pqueue.FormatIndexed). Give it back with Free.
func (lg *Ledger) New(from, to int, capacity, slotSize int, id p2pqueue.LinkID) (*p2pqueue.Link, p2pqueue.Placement, error) {
	return lg.make(from, to, p2pqueue.Config{Capacity: uint32(capacity), SlotSize: uint32(slotSize), LinkID: id})
}

// make is New for a link of cfg, in its format.
func (lg *Ledger) make(from, to int, cfg p2pqueue.Config) (*p2pqueue.Link, p2pqueue.Placement, error) {
	pl, err := p2pqueue.Place(from, to, lg.topo)
	if err != nil {
		return nil, pl, err
	}
	size, err := cfg.RegionSize()
	if err != nil {
		return nil, pl, err
	}
	r, err := lg.mem.Alloc(pl.Device, size, pl.Memory)
	if err != nil {
		return nil, pl, err
	}
	l, err := p2pqueue.Init(r, cfg)
	if err != nil {
		lg.mem.Free(r)
		return nil, pl, err
	}
	lg.mu.Lock()
	lg.users[l] = nil
	lg.mu.Unlock()
	return l, pl, nil
}

// Free gives a link made with New back to its device's memory, once every
// kernel it was given to has ended (at once when they have; else when the
// last of them ends: a kernel cut off with its stage function still
// running may use the link until then). Free a link only when the
// pipelines that use it have closed. A link the ledger did not make, or
// one already freed, is refused with extid.ErrNotALink.
func (lg *Ledger) Free(l *p2pqueue.Link) error {
	lg.mu.Lock()
	ks, ok := lg.users[l]
	delete(lg.users, l)
	lg.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: link %v", extid.ErrNotALink, l.Config().LinkID)
	}
	free := func() { lg.mem.Free(l.Region()) }
	for i, k := range ks {
		select {
		case <-k.Ended():
			continue
		default:
		}
		rest := ks[i:]
		go func() { // a loop that has not ended yet may still use it
			for _, k := range rest {
				<-k.Ended()
			}
			free()
		}()
		return nil
	}
	free()
	return nil
}

// Uses records that kernel k was given these links (those the ledger did
// not make, or has freed, are passed over).
func (lg *Ledger) Uses(k Kernel, sets ...[]*p2pqueue.Link) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	for _, set := range sets {
		for _, l := range set {
			if ks, ok := lg.users[l]; ok {
				lg.users[l] = append(ks, k)
			}
		}
	}
}

// Live is how many links made with New have not been freed.
func (lg *Ledger) Live() int {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	return len(lg.users)
}
