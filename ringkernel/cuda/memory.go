package cuda

import (
	"fmt"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/p2pqueue"
)

// deviceArena is device memory taken from the driver once.
type deviceArena struct {
	ctx  *drv.Context
	base drv.DevicePtr
	a    *arena
}

func newDeviceArena(ctx *drv.Context, size int) (*deviceArena, error) {
	p, err := ctx.Alloc(size)
	if err != nil {
		return nil, fmt.Errorf("device arena of %d bytes: %w", size, err)
	}
	return &deviceArena{ctx: ctx, base: p, a: newArena(size, p2pqueue.RegionAlign)}, nil
}

func (a *deviceArena) alloc(n int) (drv.DevicePtr, int, error) {
	off, err := a.a.alloc(n)
	if err != nil {
		return 0, 0, fmt.Errorf("device arena: %w; raise Options.DeviceArena", err)
	}
	// Zeroed: a stale queue header must never look valid.
	if err := a.ctx.Memset(a.base+drv.DevicePtr(off), 0, n); err != nil {
		a.a.release(off)
		return 0, 0, err
	}
	return a.base + drv.DevicePtr(off), off, nil
}

func (a *deviceArena) close() error { return a.ctx.Free(a.base) }

// pinnedArena is page-locked host memory mapped into the device (and into
// every device when portable), taken from the driver once.
type pinnedArena struct {
	ctx *drv.Context
	mem *drv.HostMemory
	a   *arena
}

// mapped is one allocation from a pinned arena: the host's view and the
// device address of the same bytes.
type mapped struct {
	Bytes  []byte
	Device drv.DevicePtr
}

func newPinnedArena(ctx *drv.Context, size int, portable bool) (*pinnedArena, error) {
	m, err := ctx.AllocHost(size, portable)
	if err != nil {
		return nil, fmt.Errorf("pinned arena of %d bytes: %w", size, err)
	}
	return &pinnedArena{ctx: ctx, mem: m, a: newArena(size, p2pqueue.RegionAlign)}, nil
}

func (a *pinnedArena) alloc(n int) (mapped, int, error) {
	off, err := a.a.alloc(n)
	if err != nil {
		return mapped{}, 0, fmt.Errorf("pinned arena: %w; raise Options.PinnedArena", err)
	}
	b := a.mem.Bytes[off : off+n : off+n]
	clear(b)
	return mapped{Bytes: b, Device: a.mem.Device + drv.DevicePtr(off)}, off, nil
}

func (a *pinnedArena) release(off int) error { return a.a.release(off) }

func (a *pinnedArena) close() error { return a.ctx.FreeHost(a.mem) }

// deviceAccess lets p2pqueue format and observe a queue in device memory.
type deviceAccess struct {
	ctx  *drv.Context
	base drv.DevicePtr
	size int
}

func (a deviceAccess) CopyIn(off int, p []byte) error {
	if off < 0 || off+len(p) > a.size {
		return fmt.Errorf("ringkernel/cuda: copy of %d bytes at %d outside a %d-byte region", len(p), off, a.size)
	}
	return a.ctx.CopyToDevice(a.base+drv.DevicePtr(off), p)
}

func (a deviceAccess) CopyOut(p []byte, off int) error {
	if off < 0 || off+len(p) > a.size {
		return fmt.Errorf("ringkernel/cuda: copy of %d bytes at %d outside a %d-byte region", len(p), off, a.size)
	}
	return a.ctx.CopyFromDevice(p, a.base+drv.DevicePtr(off))
}

// allocation remembers where a region came from, for Free.
type allocation struct {
	dev  *device
	kind p2pqueue.MemoryKind
	off  int
}

// Alloc returns zeroed memory of kind on device: device memory for links
// between kernels (formatted and observed through the region's Access),
// mapped pinned memory for control blocks, trace rings and host-facing
// links, portable pinned memory for links between GPUs without peer access.
// Host memory is served as mapped pinned memory: whatever a kernel may
// touch must be page-locked.
func (b *Backend) Alloc(device, size int, kind p2pqueue.MemoryKind) (p2pqueue.Region, error) {
	d, err := b.device(device)
	if err != nil {
		return p2pqueue.Region{}, err
	}
	switch kind {
	case p2pqueue.DeviceMemory:
		p, off, err := d.devArena.alloc(size)
		if err != nil {
			return p2pqueue.Region{}, fmt.Errorf("ringkernel/cuda: device %d: %w", device, err)
		}
		b.remember(uint64(p), allocation{dev: d, kind: kind, off: off})
		return p2pqueue.Region{DeviceAddr: uint64(p), Kind: kind, Device: device, Size: size,
			Access: deviceAccess{ctx: d.ctx, base: p, size: size}}, nil
	case p2pqueue.PortablePinnedMemory:
		pa, err := b.portable(d)
		if err != nil {
			return p2pqueue.Region{}, err
		}
		m, off, err := pa.alloc(size)
		if err != nil {
			return p2pqueue.Region{}, fmt.Errorf("ringkernel/cuda: portable memory: %w", err)
		}
		b.remember(uint64(m.Device), allocation{dev: nil, kind: kind, off: off})
		return p2pqueue.Region{Bytes: m.Bytes, DeviceAddr: uint64(m.Device), Kind: kind, Device: device, Size: size}, nil
	default:
		m, off, err := d.pinArena.alloc(size)
		if err != nil {
			return p2pqueue.Region{}, fmt.Errorf("ringkernel/cuda: device %d: %w", device, err)
		}
		b.remember(uint64(m.Device), allocation{dev: d, kind: p2pqueue.MappedPinnedMemory, off: off})
		return p2pqueue.Region{Bytes: m.Bytes, DeviceAddr: uint64(m.Device), Kind: p2pqueue.MappedPinnedMemory, Device: device, Size: size}, nil
	}
}

// portable returns the backend's portable arena, made at first use in d's
// context (portable memory is mapped into every context).
func (b *Backend) portable(d *device) (*pinnedArena, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.portArn == nil {
		pa, err := newPinnedArena(d.ctx, b.opts.PinnedArena, true)
		if err != nil {
			return nil, fmt.Errorf("ringkernel/cuda: %w", err)
		}
		b.portArn = pa
	}
	return b.portArn, nil
}

func (b *Backend) remember(addr uint64, a allocation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.allocs == nil {
		b.allocs = map[uint64]allocation{}
	}
	b.allocs[addr] = a
}

// Free returns a region from Alloc to its arena. Arena memory stays with
// the backend until Close, so no driver call runs under live kernels.
func (b *Backend) Free(r p2pqueue.Region) error {
	b.mu.Lock()
	a, ok := b.allocs[r.DeviceAddr]
	if ok {
		delete(b.allocs, r.DeviceAddr)
	}
	port := b.portArn
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("ringkernel/cuda: free of a region at %#x this backend did not allocate", r.DeviceAddr)
	}
	switch a.kind {
	case p2pqueue.DeviceMemory:
		return a.dev.devArena.a.release(a.off)
	case p2pqueue.PortablePinnedMemory:
		if port == nil { // closed: the arena went with it
			return fmt.Errorf("ringkernel/cuda: free of portable memory at %#x after the backend closed", r.DeviceAddr)
		}
		return port.release(a.off)
	default:
		return a.dev.pinArena.release(a.off)
	}
}
