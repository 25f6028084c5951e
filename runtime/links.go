package runtime

import (
	"fmt"
	"sync"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/extid"
)

// A link's memory comes from its device's backend (on CUDA a fixed
// arena per device), so a service that builds pipelines for months must
// give every link back. A link belongs to whoever made it: a pipeline
// frees its own when it closes, a stage group its steal links. The
// memory is freed once every ring kernel given the link has ended: at
// once for a pipeline that closed cleanly; for a kernel the host cut
// off or abandoned (a stage function that has not returned, a GPU loop
// that did not stop), only when that loop ends, since it may still
// read or write the link. Until then the link stays allocated.

// links tracks the runtime's links and the kernels given each.
type links struct {
	mu    sync.Mutex
	users map[*p2pqueue.Link][]*rk.Kernel
}

// newLink allocates and formats a link from device from to device to (or
// p2pqueue.Host): where it lives is p2pqueue.Place's choice from the
// registry's topology. Pipelines make their own and free them when they
// close; a sub-package that makes one for pipelines to share (a stage
// group's steal links, through ext.Host) gives it back with freeLink once
// they have closed. id names the link in its header and in errors.
func (rt *Runtime) newLink(from, to int, capacity, slotSize int, id LinkID) (*p2pqueue.Link, p2pqueue.Placement, error) {
	pl, err := p2pqueue.Place(from, to, rt.reg)
	if err != nil {
		return nil, pl, err
	}
	cfg := p2pqueue.Config{Capacity: uint32(capacity), SlotSize: uint32(slotSize), LinkID: id}
	size, err := cfg.RegionSize()
	if err != nil {
		return nil, pl, err
	}
	r, err := rt.backend.Alloc(pl.Device, size, pl.Memory)
	if err != nil {
		return nil, pl, err
	}
	l, err := p2pqueue.Init(r, cfg)
	if err != nil {
		rt.backend.Free(r)
		return nil, pl, err
	}
	rt.links.mu.Lock()
	if rt.links.users == nil {
		rt.links.users = map[*p2pqueue.Link][]*rk.Kernel{}
	}
	rt.links.users[l] = nil
	rt.links.mu.Unlock()
	return l, pl, nil
}

// freeLink gives a link made with newLink back to its device's memory,
// once every ring kernel it was given to has ended (at once when they
// have; else when the last of them ends: a kernel cut off with its stage
// function still running may use the link until then). Free a link only
// when the pipelines that use it have closed. A second freeLink of the
// same link is refused with extid.ErrNotALink.
func (rt *Runtime) freeLink(l *p2pqueue.Link) error {
	rt.links.mu.Lock()
	ks, ok := rt.links.users[l]
	delete(rt.links.users, l)
	rt.links.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: link %v", extid.ErrNotALink, l.Config().LinkID)
	}
	free := func() { rt.backend.Free(l.Region()) }
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

// usesLinks records that kernel k was given these links.
func (rt *Runtime) usesLinks(k *rk.Kernel, sets ...[]*p2pqueue.Link) {
	rt.links.mu.Lock()
	defer rt.links.mu.Unlock()
	for _, set := range sets {
		for _, l := range set {
			if ks, ok := rt.links.users[l]; ok {
				rt.links.users[l] = append(ks, k)
			}
		}
	}
}

// liveLinks is how many links made with newLink have not been freed.
func (rt *Runtime) liveLinks() int {
	rt.links.mu.Lock()
	defer rt.links.mu.Unlock()
	return len(rt.links.users)
}

// freeLinks gives back the links the pipeline made (not a group's steal
// links, which the group frees), once its kernels are done with them.
func (p *Pipeline) freeLinks() {
	for _, s := range p.stages {
		if s.ingressLink != nil {
			p.rt.freeLink(s.ingressLink)
		}
		for _, e := range s.outs {
			p.rt.freeLink(e.link)
		}
		if s.egress != nil && s.egress.link != nil {
			p.rt.freeLink(s.egress.link)
		}
	}
}
