package cuda

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/p2pqueue"
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
// bytes pass through a staging chunk of the portable pinned arena, one
// per copy (a staged copy between devices reuses its one chunk for every
// step). Managed buffers (cuMemAllocManaged, where the device reports
// ringkernel.Device.Managed: managed memory and concurrent access) are
// reached by the host through their host view: Write, Read and a copy
// with a managed end copy on the host; they are freed, and parked, like
// device memory.

// bufferState is a device's buffers.
type bufferState struct {
	stream *drv.Stream // buffer copies' stream, made at open
	copyMu sync.Mutex  // one copy at a time on the stream (and its staging)
	mu     sync.Mutex
	live   map[drv.DevicePtr]liveBuf
	parked []drv.DevicePtr // freed while ring kernels ran
	held   uint64          // bytes of live buffers
}

// liveBuf is a live buffer: its size, and its host view if managed.
type liveBuf struct {
	size int
	host []byte
}

// stagingChunk is the most a copy moves through host memory at once.
const stagingChunk = 1 << 20

// AllocBuffer allocates size zeroed bytes of device memory, or managed
// memory (Buffer.Bytes its host view) where the device reports
// Device.Managed, on device.
func (b *Backend) AllocBuffer(ctx context.Context, device, size int, kind devmem.Kind) (devmem.Buffer, error) {
	n, err := b.drv.DeviceCount()
	if err == nil {
		err = devmem.CheckAlloc(ctx, "ringkernel/cuda", n, device, size, kind)
	}
	if err != nil {
		return devmem.Buffer{}, err
	}
	gpus, err := b.listed()
	if err != nil {
		return devmem.Buffer{}, err
	}
	if kind == devmem.Managed && (device >= len(gpus) || !gpus[device].Managed) {
		return devmem.Buffer{}, fmt.Errorf("ringkernel/cuda: device %d: %w: the driver reports no managed memory with concurrent host access there (CUDA device attributes 83 and 89); use devmem.DeviceMemory and Write/Read", device, devmem.ErrNoManaged)
	}
	d, err := b.deviceCtx(ctx, device)
	if err != nil {
		return devmem.Buffer{}, err
	}
	_ = d.reapBuffers() // a parked buffer the driver would not free stays its problem, not this allocation's
	var p drv.DevicePtr
	var host []byte
	if kind == devmem.Managed {
		p, host, err = d.ctx.AllocManaged(size)
	} else {
		p, err = d.ctx.Alloc(size)
	}
	if errors.Is(err, &drv.Error{Result: drv.ErrorOutOfMemory}) {
		return devmem.Buffer{}, fmt.Errorf("%w (%w)", b.outOfMemory(d, size), err)
	}
	if err != nil {
		return devmem.Buffer{}, fmt.Errorf("ringkernel/cuda: device %d: %w", device, err)
	}
	buf := devmem.Buffer{Device: device, Size: size, Kind: kind, Addr: uint64(p), Bytes: host}
	d.buf.mu.Lock()
	if d.buf.live == nil {
		d.buf.live = map[drv.DevicePtr]liveBuf{}
	}
	d.buf.live[p], d.buf.held = liveBuf{size, host}, d.buf.held+uint64(size)
	d.buf.mu.Unlock()
	if host != nil {
		clear(host) // no kernel has it yet
		return buf, nil
	}
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

// buffer checks that buf is a live buffer of this backend, and returns
// its device and, for managed memory, its host view.
func (b *Backend) buffer(buf devmem.Buffer) (*device, []byte, error) {
	d, err := b.device(buf.Device)
	if err != nil {
		return nil, nil, err
	}
	d.buf.mu.Lock()
	l, ok := d.buf.live[drv.DevicePtr(buf.Addr)]
	d.buf.mu.Unlock()
	if !ok || l.size != buf.Size {
		return nil, nil, fmt.Errorf("ringkernel/cuda: buffer at %#x on device %d was not allocated by this backend, or was freed", buf.Addr, buf.Device)
	}
	return d, l.host, nil
}

// staged moves n bytes between device memory at p and the host, a chunk
// at a time through one chunk of the portable pinned arena: toDevice,
// host fills each chunk (its bytes, and the offset from p) and it is
// copied in; else each chunk is copied out and handed to host. ctx is
// looked at between chunks; a chunk under way is waited for.
func (b *Backend) staged(ctx context.Context, d *device, p drv.DevicePtr, n int, toDevice bool, host func(context.Context, []byte, int) error) error {
	d.buf.copyMu.Lock() // before the staging: one chunk per device at a time
	defer d.buf.copyMu.Unlock()
	pa, m, off, err := b.stagingChunk(d, n)
	if err != nil {
		return err
	}
	defer pa.release(off)
	chunk := len(m.Bytes)
	for done := 0; done < n; done += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(chunk, n-done)
		if toDevice {
			if err := host(ctx, m.Bytes[:k], done); err != nil {
				return err
			}
		}
		if err := d.stageChunk(pa, off, p+drv.DevicePtr(done), k, toDevice); err != nil {
			return err
		}
		if !toDevice {
			if err := host(ctx, m.Bytes[:k], done); err != nil {
				return err
			}
		}
	}
	return nil
}

// stagingChunk takes a chunk of the portable pinned arena for a copy of n
// bytes: at most stagingChunk bytes, released by the copy when it ends.
func (b *Backend) stagingChunk(d *device, n int) (*pinnedArena, mapped, int, error) {
	pa, err := b.portable(d)
	if err != nil {
		return nil, mapped{}, 0, err
	}
	m, off, err := pa.alloc(min(n, stagingChunk))
	if err != nil {
		return nil, mapped{}, 0, fmt.Errorf("ringkernel/cuda: staging for a buffer copy: %w", err)
	}
	return pa, m, off, nil
}

// stageChunk copies k bytes between device memory at p and the staging
// chunk at off of pa (portable: every context reaches it), on d's copy
// stream, and waits for it. d.buf.copyMu is held.
func (d *device) stageChunk(pa *pinnedArena, off int, p drv.DevicePtr, k int, toDevice bool) error {
	var err error
	if toDevice {
		err = d.ctx.CopyToDeviceAsync(p, pa.mem, off, k, d.buf.stream)
	} else {
		err = d.ctx.CopyFromDeviceAsync(pa.mem, off, p, k, d.buf.stream)
	}
	if err == nil {
		err = awaitStream(d.buf.stream)
	}
	if err != nil {
		return fmt.Errorf("ringkernel/cuda: device %d: buffer copy: %w", d.id, err)
	}
	return nil
}

// hostCopy copies src to dst on the host (a managed buffer's view), a
// chunk at a time, looking at ctx between.
func hostCopy(ctx context.Context, dst, src []byte) error {
	for len(src) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := copy(dst, src[:min(len(src), stagingChunk)])
		dst, src = dst[k:], src[k:]
	}
	return ctx.Err()
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
	d, host, err := b.buffer(buf)
	if err == nil {
		err = devmem.CheckRange("write", buf, off, len(src))
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil || len(src) == 0 {
		return err
	}
	if host != nil {
		return hostCopy(ctx, host[off:], src)
	}
	return b.staged(ctx, d, drv.DevicePtr(buf.Addr)+drv.DevicePtr(off), len(src), true,
		func(_ context.Context, h []byte, at int) error { copy(h, src[at:]); return nil })
}

// Read copies len(dst) bytes of buf at off into dst (device → host).
func (b *Backend) Read(ctx context.Context, buf devmem.Buffer, off int, dst []byte) error {
	d, host, err := b.buffer(buf)
	if err == nil {
		err = devmem.CheckRange("read", buf, off, len(dst))
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil || len(dst) == 0 {
		return err
	}
	if host != nil {
		return hostCopy(ctx, dst, host[off:off+len(dst)])
	}
	return b.staged(ctx, d, drv.DevicePtr(buf.Addr)+drv.DevicePtr(off), len(dst), false,
		func(_ context.Context, h []byte, at int) error { copy(dst[at:], h); return nil })
}

// Copy copies n bytes of src at srcOff to dst at dstOff on the pair's
// path (p2pqueue.PathOf by the driver's peer matrix, for which the
// backend enabled peer access at open): on one device cuMemcpyDtoDAsync,
// between peers cuMemcpyPeerAsync on the destination's copy stream, else
// staged, a chunk at a time, out of the source into one pinned staging
// chunk and in from there. A managed end is copied through its host view
// (the path returned is still the pair's).
func (b *Backend) Copy(ctx context.Context, dst devmem.Buffer, dstOff int, src devmem.Buffer, srcOff, n int) (p2pqueue.Path, error) {
	dd, dh, err := b.buffer(dst)
	if err != nil {
		return 0, err
	}
	sd, sh, err := b.buffer(src)
	if err != nil {
		return 0, err
	}
	if err := devmem.CheckCopy(dst, dstOff, src, srcOff, n); err != nil {
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
	switch {
	case sh != nil && dh != nil:
		return path, hostCopy(ctx, dh[dstOff:], sh[srcOff:srcOff+n])
	case sh != nil:
		return path, b.Write(ctx, dst, dstOff, sh[srcOff:srcOff+n])
	case dh != nil:
		return path, b.Read(ctx, src, srcOff, dh[dstOff:dstOff+n])
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
	return path, b.stagedCopy(ctx, dd, dp, sd, sp, n)
}

// stagedCopy copies n bytes from sp on sd to dp on dd (two devices)
// through one staging chunk, taken once for the whole copy: a chunk out
// of the source on its copy stream, then the same bytes into the
// destination on its own. Both devices' copy locks are held throughout
// (lower device first), so each device still stages one chunk at a time.
func (b *Backend) stagedCopy(ctx context.Context, dd *device, dp drv.DevicePtr, sd *device, sp drv.DevicePtr, n int) error {
	first, second := sd, dd
	if dd.id < sd.id {
		first, second = dd, sd
	}
	first.buf.copyMu.Lock()
	defer first.buf.copyMu.Unlock()
	second.buf.copyMu.Lock()
	defer second.buf.copyMu.Unlock()
	pa, m, off, err := b.stagingChunk(sd, n)
	if err != nil {
		return err
	}
	defer pa.release(off)
	chunk := len(m.Bytes)
	for done := 0; done < n; done += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, at := min(chunk, n-done), drv.DevicePtr(done)
		if err := sd.stageChunk(pa, off, sp+at, k, false); err != nil {
			return err
		}
		if err := dd.stageChunk(pa, off, dp+at, k, true); err != nil {
			return err
		}
	}
	return nil
}

// FreeBuffer gives buf back: to the driver now if no ring kernel runs on
// its device, else once none does (parked). A managed buffer's host view
// is not to be used after.
func (b *Backend) FreeBuffer(buf devmem.Buffer) error {
	d, err := b.device(buf.Device)
	if err != nil {
		return err
	}
	p := drv.DevicePtr(buf.Addr)
	d.buf.mu.Lock()
	l, ok := d.buf.live[p]
	if ok && l.size == buf.Size {
		delete(d.buf.live, p)
		d.buf.parked, d.buf.held = append(d.buf.parked, p), d.buf.held-uint64(l.size)
	}
	d.buf.mu.Unlock()
	if !ok || l.size != buf.Size {
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
