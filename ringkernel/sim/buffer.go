package sim

import (
	"context"
	"fmt"
	"sync"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

// buffers are a backend's buffers: Go memory, counted against each
// simulated device's memory (the CPU's: the host's free memory).
type buffers struct {
	mu   sync.Mutex
	next uint64
	used map[int]uint64
	mem  map[uint64][]byte // by Buffer.Addr
}

// bufBase is where sim buffer addresses start (they are keys, not
// pointers).
const bufBase = 0x7e00_0000_0000

// copyChunk is how much a copy moves between looks at its ctx.
const copyChunk = 1 << 20

// memoryOf is device d's memory size and name, and whether its peer matrix
// row says it can write each other device's memory.
func (b *Backend) memoryOf(d int) (total uint64, name string, p2p []bool, err error) {
	devs, err := b.ListDevices()
	if err != nil {
		return 0, "", nil, err
	}
	if b.Kind == rk.KindCPU {
		_, free := hostMemory()
		return free, rk.KindCPU, devs[0].P2P, nil
	}
	if d < len(devs) {
		return devs[d].MemoryBytes, devs[d].Name, devs[d].P2P, nil
	}
	return 16 << 30, fmt.Sprintf("sim-%d", d), nil, nil
}

// AllocBuffer returns size zeroed bytes of Go memory standing for memory
// of kind on device, refused (*devmem.OutOfMemoryError) beyond the
// device's memory: a simulated GPU's MemoryBytes less the buffers it
// holds, the host's free memory for the CPU.
func (b *Backend) AllocBuffer(ctx context.Context, device, size int, kind devmem.Kind) (devmem.Buffer, error) {
	if err := devmem.CheckAlloc(ctx, b.Name(), b.Devices, device, size, kind); err != nil {
		return devmem.Buffer{}, err
	}
	total, name, _, err := b.memoryOf(device)
	if err != nil {
		return devmem.Buffer{}, err
	}
	s := &b.bufs
	s.mu.Lock()
	defer s.mu.Unlock()
	free := total - min(total, s.used[device])
	if b.Kind == rk.KindCPU {
		free = total // the host's free memory already counts what it holds
	}
	if uint64(size) > free {
		return devmem.Buffer{}, &devmem.OutOfMemoryError{Device: device, Name: name, Free: free, Asked: uint64(size)}
	}
	if s.mem == nil {
		s.mem, s.used = map[uint64][]byte{}, map[int]uint64{}
	}
	mem := make([]byte, size)
	addr := bufBase + s.next
	s.next += (uint64(size) + p2pqueue.RegionAlign - 1) / p2pqueue.RegionAlign * p2pqueue.RegionAlign
	s.mem[addr] = mem
	s.used[device] += uint64(size)
	buf := devmem.Buffer{Device: device, Size: size, Kind: kind, Addr: addr}
	if kind == devmem.Managed {
		buf.Bytes = mem
	}
	return buf, nil
}

// memory is buf's bytes, or an error if b did not allocate it or freed it.
func (b *Backend) memory(buf devmem.Buffer) ([]byte, error) {
	b.bufs.mu.Lock()
	defer b.bufs.mu.Unlock()
	m, ok := b.bufs.mem[buf.Addr]
	if !ok || len(m) != buf.Size {
		return nil, fmt.Errorf("%s: buffer at %#x on device %d was not allocated by this backend, or was freed", b.Name(), buf.Addr, buf.Device)
	}
	return m, nil
}

// copyCtx copies src into dst a chunk at a time, looking at ctx between.
func copyCtx(ctx context.Context, dst, src []byte) error {
	for len(src) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := copy(dst, src[:min(len(src), copyChunk)])
		dst, src = dst[n:], src[n:]
	}
	return ctx.Err()
}

// Write copies src into buf at off.
func (b *Backend) Write(ctx context.Context, buf devmem.Buffer, off int, src []byte) error {
	m, err := b.memory(buf)
	if err == nil {
		err = devmem.CheckRange("write", buf, off, len(src))
	}
	if err != nil {
		return err
	}
	return copyCtx(ctx, m[off:], src)
}

// Read copies len(dst) bytes of buf at off into dst.
func (b *Backend) Read(ctx context.Context, buf devmem.Buffer, off int, dst []byte) error {
	m, err := b.memory(buf)
	if err == nil {
		err = devmem.CheckRange("read", buf, off, len(dst))
	}
	if err != nil {
		return err
	}
	return copyCtx(ctx, dst, m[off:off+len(dst)])
}

// Copy copies n bytes between two buffers on the path the simulated
// topology gives the pair (p2pqueue.PathOf): directly for a local or peer
// copy, through a host staging buffer for a staged one.
func (b *Backend) Copy(ctx context.Context, dst devmem.Buffer, dstOff int, src devmem.Buffer, srcOff, n int) (p2pqueue.Path, error) {
	dm, err := b.memory(dst)
	if err != nil {
		return 0, err
	}
	sm, err := b.memory(src)
	if err != nil {
		return 0, err
	}
	if err := devmem.CheckCopy(dst, dstOff, src, srcOff, n); err != nil {
		return 0, err
	}
	_, _, p2p, err := b.memoryOf(src.Device)
	if err != nil {
		return 0, err
	}
	path := p2pqueue.PathOf(src.Device, dst.Device, p2pqueue.PeerFunc(func(a, c int) bool { return c < len(p2p) && p2p[c] }))
	if path == p2pqueue.PathStaged {
		stage := staging(n)
		defer stagingPool.Put(stage)
		if err := copyCtx(ctx, (*stage)[:n], sm[srcOff:srcOff+n]); err != nil {
			return path, err
		}
		return path, copyCtx(ctx, dm[dstOff:], (*stage)[:n])
	}
	return path, copyCtx(ctx, dm[dstOff:], sm[srcOff:srcOff+n])
}

// stagingPool holds staged copies' host buffers for the next copy: a
// fresh one each time would make its page faults, not the copies, what a
// staged copy costs.
var stagingPool sync.Pool

// staging is a staging buffer of at least n bytes.
func staging(n int) *[]byte {
	if b, ok := stagingPool.Get().(*[]byte); ok && len(*b) >= n {
		return b
	}
	b := make([]byte, n)
	return &b
}

// FreeBuffer gives buf's memory back to its device.
func (b *Backend) FreeBuffer(buf devmem.Buffer) error {
	b.bufs.mu.Lock()
	defer b.bufs.mu.Unlock()
	if m, ok := b.bufs.mem[buf.Addr]; !ok || len(m) != buf.Size {
		return fmt.Errorf("%s: free of a buffer at %#x on device %d that this backend did not allocate, or freed already", b.Name(), buf.Addr, buf.Device)
	}
	delete(b.bufs.mem, buf.Addr)
	b.bufs.used[buf.Device] -= uint64(buf.Size)
	return nil
}

// bound is the memory of the buffers job's stage binds, in its order: each
// must be a live buffer of this backend (a buffer of another backend has
// no Go memory here) on the kernel's device or on one it reaches by peer
// access (p2pqueue.PathOf over the simulated peer matrix).
func (b *Backend) bound(job *rk.Job) ([][]byte, error) {
	binds, name, dev := job.Spec.Stage.Buffers, job.Spec.Stage.Name, job.Spec.Device
	if len(binds) == 0 {
		return nil, nil
	}
	_, _, p2p, err := b.memoryOf(dev)
	if err != nil {
		return nil, err
	}
	peer := p2pqueue.PeerFunc(func(_, c int) bool { return c < len(p2p) && p2p[c] })
	mem := make([][]byte, len(binds))
	for i, bd := range binds {
		if mem[i], err = b.memory(bd.Buf); err != nil {
			return nil, fmt.Errorf("%w %q: bound buffer %d: %w; bind buffers allocated by this backend (%s.AllocBuffer)", rk.ErrBadStage, name, i, err, b.Name())
		}
		if p := p2pqueue.PathOf(dev, bd.Buf.Device, peer); p != p2pqueue.PathLocal && p != p2pqueue.PathPeer {
			return nil, fmt.Errorf("%w %q: bound buffer %d is on device %d, which device %d reaches only by a %v copy, not by peer access; allocate it on device %[5]d or on a peer of it, or copy it there", rk.ErrBadStage, name, i, bd.Buf.Device, dev, p)
		}
	}
	return mem, nil
}
