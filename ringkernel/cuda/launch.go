package cuda

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"sync"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Start launches job's ring kernel: one block on its own non-blocking
// stream, refused if it would not be co-resident with the device's other
// ring kernels.
func (b *Backend) Start(job *rk.Job) (rk.Loop, error) {
	if err := checkLaunchBlocking(); err != nil {
		return nil, err
	}
	spec := job.Spec
	if n := len(job.In); n < 1 || n > rk.MaxDeviceInLinks {
		return nil, fmt.Errorf("ringkernel/cuda: stage %q has %d in-links; a device loop reads 1 to %d", spec.Stage.Name, n, rk.MaxDeviceInLinks)
	}
	if spec.Variant > rk.LoopWarpPrefetch {
		return nil, fmt.Errorf("%w %q: unknown device loop variant %d; set Spec.Variant to ringkernel.LoopClassic, LoopWarp or LoopWarpPrefetch", rk.ErrBadStage, spec.Stage.Name, spec.Variant)
	}
	if n := len(job.StealTo); n > rk.MaxDeviceStealLinks {
		return nil, fmt.Errorf("ringkernel/cuda: stage %q has %d steal links; a device loop forwards stolen work into at most %d (a stage group of at most %d instances)",
			spec.Stage.Name, n, rk.MaxDeviceStealLinks, rk.MaxDeviceStealLinks+1)
	}
	if err := refuseFlagged(job); err != nil {
		return nil, err
	}
	d, err := b.device(spec.Device)
	if err == nil {
		err = b.bindings(job, nil) // before its module loads
	}
	if err != nil {
		return nil, err
	}
	ptx, err := d.ptx(b, job.Op)
	if err != nil {
		return nil, fmt.Errorf("ringkernel/cuda: PTX for stage %q (op %s): %w", spec.Stage.Name, job.Op.Name, err)
	}
	fn, err := d.kernel(job.Op, ptx)
	if err != nil {
		return nil, fmt.Errorf("ringkernel/cuda: loading op %s on device %d: %w", job.Op.Name, d.id, err)
	}
	threads := b.opts.Threads
	if job.Op.Stateful() || spec.Stage.Stateful {
		threads = 32 // one warp: messages one at a time, in order
	}
	perSM, err := fn.MaxActiveBlocksPerSM(threads, 0)
	if err != nil {
		return nil, err
	}
	l := &loop{dev: d, cb: job.Control, done: make(chan struct{})}
	if err := d.reserve(l, spec.Stage.Name, threads, perSM); err != nil {
		return nil, err
	}
	fail := func(err error) (rk.Loop, error) {
		l.freeOwned()
		d.kernelEnded(l)
		return nil, err
	}
	// Kernels stamp host time: globaltimer plus this offset, kept fresh
	// by the device's clock loop while the kernel runs.
	job.Control.SetClockOffset(d.offset.Load())
	args, err := l.args(job)
	if err == nil {
		err = b.bindings(job, args)
	}
	if err != nil {
		return fail(err)
	}
	if l.stream, err = d.takeStream(); err != nil {
		return fail(err)
	}
	// Setup (arena memsets, queue formatting, params) went through the
	// legacy default stream, which the kernel's non-blocking stream is not
	// ordered after: wait for it, and only for it.
	if err := d.setupFence(); err != nil {
		d.putStream(l.stream)
		return fail(fmt.Errorf("ringkernel/cuda: stage %q: waiting for its setup copies: %w", spec.Stage.Name, err))
	}
	// A link in another GPU's memory was zeroed and formatted on THAT
	// device's legacy stream, which nothing above waits for (a pageable
	// HtoD returns once staged, a memset to device memory at once): fence
	// each such device too, before the kernel attaches the link.
	if err := b.fenceOtherDevices(job); err != nil {
		d.putStream(l.stream)
		return fail(fmt.Errorf("ringkernel/cuda: stage %q: %w", spec.Stage.Name, err))
	}
	one := drv.Dim3{X: 1, Y: 1, Z: 1}
	if err := d.ctx.Launch(fn, one, drv.Dim3{X: uint32(threads), Y: 1, Z: 1}, 0, l.stream, args); err != nil {
		d.putStream(l.stream)
		return fail(fmt.Errorf("ringkernel/cuda: launching stage %q on device %d: %w", spec.Stage.Name, d.id, err))
	}
	go l.watch(job.Control)
	return l, nil
}

// reserve takes one block of the device's co-residency budget for l.
func (d *device) reserve(l *loop, stage string, threads, perSM int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.maxKernels > 0 && d.blocks+1 > d.maxKernels {
		return fmt.Errorf("%w: stage %q on device %d: %d ring kernels run, the most this backend starts on one device (Options.MaxKernels; a GPU runs at most 128 grids at once); use fewer stages per device",
			ErrTooManyKernels, stage, d.id, d.blocks)
	}
	fit := perSM * d.sms
	if d.blocks+1 > fit {
		return fmt.Errorf("%w: stage %q on device %d: %d blocks of %d threads fit at once (%d per SM x %d SMs) and %d ring kernels already run; use fewer stages per device or fewer threads (Options.Threads)",
			ErrNoFit, stage, d.id, fit, threads, perSM, d.sms, d.blocks)
	}
	d.blocks++
	if l != nil {
		d.live[l] = struct{}{}
	}
	return nil
}

// fenceOtherDevices runs the setup fence of every device, other than the
// job's own, whose memory holds one of its links (GPU-REVIEW D2).
func (b *Backend) fenceOtherDevices(job *rk.Job) error {
	var regions []p2pqueue.Region
	for _, c := range job.In {
		regions = append(regions, c.Link().Region())
	}
	for _, p := range job.Out {
		regions = append(regions, p.Link().Region())
	}
	for _, p := range job.StealTo {
		regions = append(regions, p.Link().Region())
	}
	done := map[int]bool{job.Spec.Device: true}
	for _, r := range regions {
		if r.Kind != p2pqueue.DeviceMemory || done[r.Device] {
			continue
		}
		done[r.Device] = true
		od, err := b.device(r.Device)
		if err != nil {
			return err
		}
		if err := od.setupFence(); err != nil {
			return fmt.Errorf("waiting for the setup copies of its link in device %d's memory: %w", r.Device, err)
		}
	}
	return nil
}

// setupFence waits for the work queued on the legacy default stream: an
// event recorded there completes once that work has, whatever runs on the
// non-blocking streams of ring kernels (so never cuCtxSynchronize).
func (d *device) setupFence() error {
	d.fenceMu.Lock()
	defer d.fenceMu.Unlock()
	if err := d.fence.Record(nil); err != nil {
		return err
	}
	return d.fence.Synchronize()
}

// ptx is op's ring kernel for this device: a built-in's shipped PTX
// (compute_70, JIT-compiled by the driver for any later GPU), or a user
// op compiled by NVRTC for the device's own virtual architecture (CUDA 13's
// NVRTC no longer targets compute_70). An NVRTC newer than the driver
// would emit PTX the driver cannot load, so that is refused up front.
func (d *device) ptx(b *Backend, op kernels.Op) ([]byte, error) {
	if ptx, err := kernels.Build(nil, op, kernels.ShippedArch); err == nil {
		return ptx, nil // a built-in: no compiler needed
	}
	n, err := drv.LoadNVRTC()
	if err != nil {
		_, berr := kernels.Build(nil, op, kernels.ShippedArch) // names the op and the missing compiler
		return nil, fmt.Errorf("%w: %w", berr, err)
	}
	major, minor := n.Version()
	if dv := b.drv.Version(); dv > 0 && 1000*major+10*minor > dv {
		return nil, fmt.Errorf("ringkernel/cuda: NVRTC %d.%d (%s) is newer than the driver (CUDA %d.%d): its PTX would not load; set %s to an NVRTC of CUDA %d.%d or older, or update the driver",
			major, minor, n.Path(), dv/1000, dv%1000/10, drv.NVRTCEnv, dv/1000, dv%1000/10)
	}
	return kernels.Build(n, op, fmt.Sprintf("compute_%d%d", d.cc[0], d.cc[1]))
}

// loop is a running device kernel.
type loop struct {
	dev    *device
	cb     *rk.ControlBlock
	stream *drv.Stream
	done   chan struct{}
	owned  []int // device-arena offsets of params, state and sink
	once   sync.Once

	errMu sync.Mutex
	err   error
}

// args builds the kernel's argument block (ringkernel's ArgOff* layout) and
// copies params, zeroed state and the sink buffer into device memory.
func (l *loop) args(job *rk.Job) ([]byte, error) {
	spec := job.Spec
	a := make([]byte, rk.ArgSize)
	put := func(off int, v uint64) { binary.LittleEndian.PutUint64(a[off:], v) }
	put32 := func(off int, v uint32) { binary.LittleEndian.PutUint32(a[off:], v) }
	put(rk.ArgOffCtrl, job.Control.Region().DeviceAddr)
	var inSys, inLL uint32
	for i, c := range job.In {
		r := c.Link().Region()
		put(rk.ArgOffIn+8*i, r.DeviceAddr)
		if c.Link().Format() == p2pqueue.FormatFlagged {
			inLL |= 1 << i
		}
		if !(r.Kind == p2pqueue.DeviceMemory && r.Device == spec.Device && i < len(spec.InLocal) && spec.InLocal[i]) {
			inSys |= 1 << i
		}
	}
	put32(rk.ArgOffNumIn, uint32(len(job.In)))
	put32(rk.ArgOffInSys, inSys)
	put32(rk.ArgOffInLL, inLL)
	put(rk.ArgOffTrace, job.Trace.Region().DeviceAddr)
	var outSys, outLL uint32
	for i, pr := range job.Out {
		r := pr.Link().Region()
		put(rk.ArgOffOut+8*i, r.DeviceAddr)
		if pr.Link().Format() == p2pqueue.FormatFlagged {
			outLL |= 1 << i
		}
		if !(r.Kind == p2pqueue.DeviceMemory && r.Device == spec.Device && i < len(spec.OutLocal) && spec.OutLocal[i]) {
			outSys |= 1 << i
		}
	}
	put32(rk.ArgOffOutSys, outSys)
	put32(rk.ArgOffOutLL, outLL)
	put32(rk.ArgOffNumOut, uint32(len(job.Out)))
	// Steal links are ordered at system scope: a Spec does not say that a
	// thief runs on this same device (no StealLocal), and system scope is
	// always correct.
	var stealSys uint32
	for i, pr := range job.StealTo {
		put(rk.ArgOffSteal+8*i, pr.Link().Region().DeviceAddr)
		stealSys |= 1 << i
	}
	put32(rk.ArgOffNumSteal, uint32(len(job.StealTo)))
	put32(rk.ArgOffStealSys, stealSys)
	put32(rk.ArgOffRoute, uint32(spec.Route))
	put32(rk.ArgOffKeyOffset, uint32(spec.KeyOffset))
	put32(rk.ArgOffVariant, uint32(spec.Variant)) // the loop ra_ring_loop runs (LoopWarp: ra_warp.cuh)
	put(rk.ArgOffPhase, spec.PhaseTimers)
	floats := func(vs []float32, n int) (uint64, error) {
		if n == 0 {
			return 0, nil
		}
		p, off, err := l.dev.devArena.alloc(4 * n)
		if err != nil {
			return 0, err
		}
		l.owned = append(l.owned, off)
		if len(vs) > 0 {
			b := make([]byte, 4*len(vs))
			for i, v := range vs {
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
			}
			if err := l.dev.ctx.CopyToDevice(p, b); err != nil {
				return 0, err
			}
		}
		return uint64(p), nil
	}
	var err error
	var p uint64
	if p, err = floats(spec.Stage.Params, max(len(spec.Stage.Params), job.Op.Params)); err != nil {
		return nil, err
	}
	put(rk.ArgOffParams, p)
	if p, err = floats(nil, job.Op.StateFloats); err != nil {
		return nil, err
	}
	put(rk.ArgOffState, p)
	if len(job.Out) == 0 {
		slot := 0
		for _, c := range job.In {
			slot = max(slot, int(c.Link().Config().SlotSize))
		}
		if p, err = floats(nil, rk.DeviceBatch*(slot-p2pqueue.SlotHeaderSize)/4); err != nil {
			return nil, err
		}
		put(rk.ArgOffSink, p)
	}
	return a, nil
}

// watch waits for the kernel to end: a stream query with backoff, since a
// persistent kernel's host must not block in the driver for it.
func (l *loop) watch(cb *rk.ControlBlock) {
	d := 50 * time.Microsecond
	for {
		done, err := l.stream.Query()
		if err != nil {
			// A device fault (an illegal address, say) ends the kernel
			// without its own last words: say so in its control block.
			l.errMu.Lock()
			l.err = err
			l.errMu.Unlock()
			cb.SetState(rk.Faulted)
			break
		}
		if done {
			break
		}
		time.Sleep(d)
		d = min(2*d, 2*time.Millisecond)
	}
	l.dev.putStream(l.stream)
	l.freeOwned()
	l.dev.kernelEnded(l)
	close(l.done)
}

func (l *loop) freeOwned() {
	l.once.Do(func() {
		for _, off := range l.owned {
			l.dev.devArena.a.release(off)
		}
	})
}

// Done is closed when the kernel has ended.
func (l *loop) Done() <-chan struct{} { return l.done }

// Wake does nothing: a device loop reads its command word every step.
func (l *loop) Wake() {}

// HostTime converts a globaltimer reading with the device's calibration.
func (l *loop) HostTime(ns uint64) time.Time { return l.dev.hostTime(ns) }

// Err is the CUDA error that ended the kernel, if any.
func (l *loop) Err() error {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.err
}

func hashPTX(ptx []byte) string {
	h := sha256.Sum256(ptx)
	return hex.EncodeToString(h[:8])
}

// llStageBytes is the device loop's staging area (RA_STAGE_BYTES): a
// flagged in-link's slots are gathered there, never read in place, and
// with a flagged out-link the results are made there after them.
const llStageBytes = 32768

// refuseFlagged refuses what the device loop cannot do with a link of the
// experimental flagged format (p2pqueue.FormatFlagged,
// kernels/cuda/ra_ll.cuh): it gathers a flagged in-slot into its staging
// area, which must hold one; with a flagged out-link it makes each result
// there too, after the batch's in-slots, so one of each must fit; and it
// steals by copying a slot whole as bytes, so it forwards stolen work
// from indexed in-links into indexed steal links only.
func refuseFlagged(job *rk.Job) error {
	name := job.Spec.Stage.Name
	for _, p := range job.StealTo {
		if l := p.Link(); l.Format() != p2pqueue.FormatIndexed {
			return fmt.Errorf("ringkernel/cuda: stage %q: %w: steal link %v is %s; the device loop steals by copying a slot whole as bytes, which a flagged slot's words are not: use p2pqueue.FormatIndexed",
				name, rk.ErrUnsupported, l.Config().LinkID, l.Format())
		}
	}
	res := 0 // with a flagged out-link: a result's place in the staging area (ra_loop::res_pitch)
	for _, p := range job.Out {
		if p.Link().Format() == p2pqueue.FormatFlagged {
			res = llStageBytes
		}
	}
	if res > 0 {
		for _, p := range job.Out {
			res = min(res, p.Link().Config().PayloadCap()+p2pqueue.SlotHeaderSize+8)
		}
	}
	for _, c := range job.In {
		l := c.Link()
		in := int(l.Config().SlotSize) + 8 // ra_stage_pitch
		if l.Format() == p2pqueue.FormatFlagged {
			if len(job.StealTo) > 0 {
				return fmt.Errorf("ringkernel/cuda: stage %q: %w: in-link %v is flagged and the stage has steal links; the device loop forwards stolen work from indexed in-links only: use p2pqueue.FormatIndexed",
					name, rk.ErrUnsupported, l.Config().LinkID)
			}
			if in > llStageBytes { // pick cut a batch by the slot's whole size
				return fmt.Errorf("ringkernel/cuda: stage %q: %w: flagged in-link %v has %d-byte slots; the device loop stages a flagged slot whole, at most %d bytes: use smaller slots or p2pqueue.FormatIndexed",
					name, rk.ErrUnsupported, l.Config().LinkID, l.Config().SlotSize, llStageBytes-8)
			}
			in = int(l.Config().SlotSize)/2 + 8
		} else if in > llStageBytes {
			in = p2pqueue.SlotHeaderSize // read in place: its header is staged
		}
		if res > 0 && in+res > llStageBytes {
			return fmt.Errorf("ringkernel/cuda: stage %q: %w: in-link %v's slot and a result of a flagged out-link (%d and %d bytes) do not fit the device loop's %d-byte staging area together: use smaller slots or p2pqueue.FormatIndexed",
				name, rk.ErrUnsupported, l.Config().LinkID, in, res, llStageBytes)
		}
	}
	return nil
}
