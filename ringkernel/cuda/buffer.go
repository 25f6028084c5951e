package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

// Buffers (devmem.Backend) are device memory from the driver, one
// cuMemAlloc each, not from the device arena (links' memory): a buffer
// may be large. A cuMemAlloc does not wait for running kernels, but a
// cuMemFree synchronizes the device (and the emulated driver refuses it
// while ring kernels run), so FreeBuffer frees at once only while no ring
// kernel runs on the device; else it parks the memory, and the device
// frees it at the next buffer call that finds no ring kernel running, or
// when it closes. Copies run on the device's own non-blocking copy
// stream, made at open, and are waited for by polling the stream
// (cuStreamQuery), never by a synchronize behind a ring kernel; host
// bytes pass through a staging chunk of the portable pinned arena.

// bufferState is a device's buffers.
type bufferState struct {
	stream *drv.Stream // buffer copies' stream, made at open
	copyMu sync.Mutex  // one copy at a time on the stream (and its staging)
	mu     sync.Mutex
	live   map[drv.DevicePtr]int // size by address
	parked []drv.DevicePtr       // freed while ring kernels ran
	held   uint64                // bytes of live buffers
}

// stagingChunk is the most a copy moves through host memory at once.
const stagingChunk = 1 << 20

// AllocBuffer allocates size zeroed bytes of device memory on device.
// Managed memory is refused (devmem.ErrNoManaged): the backend does not
// offer it yet.
func (b *Backend) AllocBuffer(ctx context.Context, device, size int, kind devmem.Kind) (devmem.Buffer, error) {
	if err := ctx.Err(); err != nil {
		return devmem.Buffer{}, err
	}
	if kind != devmem.DeviceMemory {
		return devmem.Buffer{}, fmt.Errorf("ringkernel/cuda: device %d: %w: the CUDA backend offers device memory buffers only; use devmem.DeviceMemory", device, devmem.ErrNoManaged)
	}
	if size <= 0 {
		return devmem.Buffer{}, fmt.Errorf("ringkernel/cuda: a buffer of %d bytes; ask for at least 1", size)
	}
	d, err := b.deviceCtx(ctx, device)
	if err != nil {
		return devmem.Buffer{}, err
	}
	_ = d.reapBuffers() // a parked buffer the driver would not free stays its problem, not this allocation's
	p, err := d.ctx.Alloc(size)
	if errors.Is(err, &drv.Error{Result: drv.ErrorOutOfMemory}) {
		return devmem.Buffer{}, fmt.Errorf("%w (%w)", b.outOfMemory(d, size), err)
	}
	if err != nil {
		return devmem.Buffer{}, fmt.Errorf("ringkernel/cuda: device %d: %w", device, err)
	}
	buf := devmem.Buffer{Device: device, Size: size, Kind: kind, Addr: uint64(p)}
	d.buf.mu.Lock()
	if d.buf.live == nil {
		d.buf.live = map[drv.DevicePtr]int{}
	}
	d.buf.live[p], d.buf.held = size, d.buf.held+uint64(size)
	d.buf.mu.Unlock()
	zero := func(ctx context.Context, h []byte, _ int) error { clear(h); return nil }
	if err := b.staged(context.WithoutCancel(ctx), d, p, size, true, zero); err != nil {
		_ = b.FreeBuffer(buf)
		return devmem.Buffer{}, err
	}
	return buf, nil
}

// outOfMemory is the error for size bytes d has not: its free memory as
// NVML reads it, else its total less what this backend holds there.
func (b *Backend) outOfMemory(d *device, size int) *devmem.OutOfMemoryError {
	e := &devmem.OutOfMemoryError{Device: d.id, Name: fmt.Sprintf("cuda-%d", d.id), Asked: uint64(size)}
	if gpus, err := b.listed(); err == nil && d.id < len(gpus) {
		g := gpus[d.id]
		e.Name = g.Name
		d.buf.mu.Lock()
		held := d.buf.held + uint64(b.opts.DeviceArena)
		d.buf.mu.Unlock()
		e.Free = g.MemoryBytes - min(held, g.MemoryBytes)
	}
	if s := b.Sample(); d.id < len(s) && s[d.id].TotalBytes > 0 {
		e.Free = s[d.id].TotalBytes - min(s[d.id].UsedBytes, s[d.id].TotalBytes)
	}
	return e
}

// buffer checks that buf is a live buffer of this backend.
func (b *Backend) buffer(buf devmem.Buffer) (*device, error) {
	d, err := b.device(buf.Device)
	if err != nil {
		return nil, err
	}
	d.buf.mu.Lock()
	n, ok := d.buf.live[drv.DevicePtr(buf.Addr)]
	d.buf.mu.Unlock()
	if !ok || n != buf.Size {
		return nil, fmt.Errorf("ringkernel/cuda: buffer at %#x on device %d was not allocated by this backend, or was freed", buf.Addr, buf.Device)
	}
	return d, nil
}

// staged moves n bytes between device memory at p and the host, a chunk
// at a time through the portable pinned arena: toDevice, host fills each
// chunk (its bytes, and the offset from p) and it is copied in; else each
// chunk is copied out and handed to host. ctx is looked at between
// chunks; a chunk under way is waited for.
func (b *Backend) staged(ctx context.Context, d *device, p drv.DevicePtr, n int, toDevice bool, host func(context.Context, []byte, int) error) error {
	pa, err := b.portable(d)
	if err != nil {
		return err
	}
	d.buf.copyMu.Lock() // before the staging: one chunk per device at a time
	defer d.buf.copyMu.Unlock()
	chunk := min(n, stagingChunk)
	m, off, err := pa.alloc(chunk)
	if err != nil {
		return fmt.Errorf("ringkernel/cuda: staging for a buffer copy: %w", err)
	}
	defer pa.release(off)
	for done := 0; done < n; done += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(chunk, n-done)
		if toDevice {
			if err := host(ctx, m.Bytes[:k], done); err != nil {
				return err
			}
			err = d.ctx.CopyToDeviceAsync(p+drv.DevicePtr(done), pa.mem, off, k, d.buf.stream)
		} else {
			err = d.ctx.CopyFromDeviceAsync(pa.mem, off, p+drv.DevicePtr(done), k, d.buf.stream)
		}
		if err == nil {
			err = awaitStream(d.buf.stream)
		}
		if err != nil {
			return fmt.Errorf("ringkernel/cuda: device %d: buffer copy: %w", d.id, err)
		}
		if !toDevice {
			if err := host(ctx, m.Bytes[:k], done); err != nil {
				return err
			}
		}
	}
	return nil
}

// awaitStream polls st until its work is done (backoff 20 µs to 1 ms).
// Only buffer copies run on it, which end on their own.
func awaitStream(st *drv.Stream) error {
	for wait := 20 * time.Microsecond; ; wait = min(2*wait, time.Millisecond) {
		done, err := st.Query()
		if err != nil || done {
			return err
		}
		time.Sleep(wait)
	}
}

// Write copies src into buf at off (host → device).
func (b *Backend) Write(ctx context.Context, buf devmem.Buffer, off int, src []byte) error {
	d, err := b.buffer(buf)
	if err == nil {
		err = devmem.CheckRange("write", buf, off, len(src))
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil || len(src) == 0 {
		return err
	}
	return b.staged(ctx, d, drv.DevicePtr(buf.Addr)+drv.DevicePtr(off), len(src), true,
		func(_ context.Context, h []byte, at int) error { copy(h, src[at:]); return nil })
}

// Read copies len(dst) bytes of buf at off into dst (device → host).
func (b *Backend) Read(ctx context.Context, buf devmem.Buffer, off int, dst []byte) error {
	d, err := b.buffer(buf)
	if err == nil {
		err = devmem.CheckRange("read", buf, off, len(dst))
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil || len(dst) == 0 {
		return err
	}
	return b.staged(ctx, d, drv.DevicePtr(buf.Addr)+drv.DevicePtr(off), len(dst), false,
		func(_ context.Context, h []byte, at int) error { copy(dst[at:], h); return nil })
}

// Copy copies n bytes of src at srcOff to dst at dstOff on the pair's
// path (p2pqueue.PathOf by the driver's peer matrix, for which the
// backend enabled peer access at open): on one device cuMemcpyDtoDAsync,
// between peers cuMemcpyPeerAsync on the destination's copy stream, else
// staged, a chunk at a time, out of the source into pinned memory and in
// from there.
func (b *Backend) Copy(ctx context.Context, dst devmem.Buffer, dstOff int, src devmem.Buffer, srcOff, n int) (p2pqueue.Path, error) {
	dd, err := b.buffer(dst)
	if err != nil {
		return 0, err
	}
	sd, err := b.buffer(src)
	if err != nil {
		return 0, err
	}
	if err := devmem.CheckRange("copy source", src, srcOff, n); err != nil {
		return 0, err
	}
	if err := devmem.CheckRange("copy destination", dst, dstOff, n); err != nil {
		return 0, err
	}
	gpus, err := b.listed()
	if err != nil {
		return 0, err
	}
	path := p2pqueue.PathOf(src.Device, dst.Device, p2pqueue.PeerFunc(func(a, c int) bool {
		return a < len(gpus) && c < len(gpus[a].P2P) && gpus[a].P2P[c]
	}))
	if err := ctx.Err(); err != nil || n == 0 {
		return path, err
	}
	dp, sp := drv.DevicePtr(dst.Addr)+drv.DevicePtr(dstOff), drv.DevicePtr(src.Addr)+drv.DevicePtr(srcOff)
	switch path {
	case p2pqueue.PathLocal, p2pqueue.PathPeer:
		dd.buf.copyMu.Lock()
		defer dd.buf.copyMu.Unlock()
		if path == p2pqueue.PathLocal {
			err = dd.ctx.CopyDeviceAsync(dp, sp, n, dd.buf.stream)
		} else {
			err = dd.ctx.CopyPeerAsync(dp, sd.ctx, sp, n, dd.buf.stream)
		}
		if err == nil {
			err = awaitStream(dd.buf.stream)
		}
		if err != nil {
			return path, fmt.Errorf("ringkernel/cuda: %v copy from device %d to %d: %w", path, src.Device, dst.Device, err)
		}
		return path, nil
	}
	// Staged: a chunk out of the source, then the same bytes into the
	// destination (each device's copy stream in turn).
	for done := 0; done < n; done += stagingChunk {
		k := min(stagingChunk, n-done)
		stage := make([]byte, k)
		if err := b.Read(ctx, src, srcOff+done, stage); err != nil {
			return path, err
		}
		if err := b.Write(ctx, dst, dstOff+done, stage); err != nil {
			return path, err
		}
	}
	return path, nil
}

// FreeBuffer gives buf back: to the driver now if no ring kernel runs on
// its device, else once none does (parked).
func (b *Backend) FreeBuffer(buf devmem.Buffer) error {
	d, err := b.device(buf.Device)
	if err != nil {
		return err
	}
	p := drv.DevicePtr(buf.Addr)
	d.buf.mu.Lock()
	n, ok := d.buf.live[p]
	if ok && n == buf.Size {
		delete(d.buf.live, p)
		d.buf.parked, d.buf.held = append(d.buf.parked, p), d.buf.held-uint64(n)
	}
	d.buf.mu.Unlock()
	if !ok || n != buf.Size {
		return fmt.Errorf("ringkernel/cuda: free of a buffer at %#x on device %d that this backend did not allocate, or freed already", buf.Addr, buf.Device)
	}
	return d.reapBuffers()
}

// reapBuffers frees the parked buffers if no kernel runs on d: no ring
// kernel, and no clock kernel (a calibration under way, or a late one's
// kernel not yet ended: cuMemFree would wait for it too; make flake-load
// saw one). The device's lock and the clock's are held throughout, so
// neither starts meanwhile; a calibration holding the clock's makes this
// call leave them parked for the next.
func (d *device) reapBuffers() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.blocks > 0 || !d.clockMu.TryLock() {
		return nil
	}
	defer d.clockMu.Unlock()
	if d.clockHeld {
		return nil
	}
	return d.freeParked()
}

// freeParked frees the parked buffers. d.mu is held, or d is closing.
func (d *device) freeParked() error {
	d.buf.mu.Lock()
	parked := d.buf.parked
	d.buf.parked = nil
	d.buf.mu.Unlock()
	var errs []error
	for _, p := range parked {
		errs = append(errs, d.ctx.Free(p))
	}
	return errors.Join(errs...)
}

// freeBuffers frees every buffer of a closing device (no kernel runs).
func (d *device) freeBuffers() error {
	d.buf.mu.Lock()
	for p := range d.buf.live {
		d.buf.parked = append(d.buf.parked, p)
	}
	d.buf.live = nil
	d.buf.mu.Unlock()
	return d.freeParked()
}

// bindings checks the buffers job's stage binds before its kernel starts:
// each a live buffer of this backend on the kernel's device or on a peer
// of it (the backend enabled peer access between every pair of open
// devices that have it), so that the kernel can address it; and it puts
// their addresses and sizes into the argument block a (unless nil).
func (b *Backend) bindings(job *rk.Job, a []byte) error {
	binds, name, dev := job.Spec.Stage.Buffers, job.Spec.Stage.Name, job.Spec.Device
	if len(binds) > rk.MaxStageBuffers {
		return fmt.Errorf("%w %q: %d bound buffers; a stage binds at most %d", rk.ErrBadStage, name, len(binds), rk.MaxStageBuffers)
	}
	if len(binds) == 0 {
		return nil
	}
	gpus, err := b.listed()
	if err != nil {
		return err
	}
	peer := p2pqueue.PeerFunc(func(a, c int) bool { return a < len(gpus) && c < len(gpus[a].P2P) && gpus[a].P2P[c] })
	for i, bd := range binds {
		if _, err := b.buffer(bd.Buf); err != nil {
			return fmt.Errorf("%w %q: bound buffer %d: %w; bind buffers allocated by this backend (AllocBuffer)", rk.ErrBadStage, name, i, err)
		}
		if p := p2pqueue.PathOf(dev, bd.Buf.Device, peer); p != p2pqueue.PathLocal && p != p2pqueue.PathPeer {
			return fmt.Errorf("%w %q: bound buffer %d is on device %d, which device %d reaches only by a %v copy, not by peer access; allocate it on device %[5]d or on a peer of it, or copy it there",
				rk.ErrBadStage, name, i, bd.Buf.Device, dev, p)
		}
		if a != nil {
			binary.LittleEndian.PutUint64(a[rk.ArgOffBuf+8*i:], bd.Buf.Addr)
			binary.LittleEndian.PutUint64(a[rk.ArgOffBufSize+8*i:], uint64(bd.Buf.Size))
		}
	}
	if a != nil {
		binary.LittleEndian.PutUint32(a[rk.ArgOffNumBuf:], uint32(len(binds)))
	}
	return nil
}
