package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/hostbuild"
	"github.com/ringactor/ringactor/kernels"
)

// device is one GPU as the backend uses it.
type device struct {
	id          int
	drv         *drv.Driver // the backend's (nil in unit tests: no host build)
	dev         *drv.Device
	ctx         *drv.Context
	sms         int
	cc          [2]int       // compute capability
	offset      atomic.Int64 // host ns - device globaltimer ns, recalibrated while kernels run
	clock       *drv.Function
	clockStream *drv.Stream
	fenceMu     sync.Mutex
	fence       *drv.Event
	stopClock   chan struct{}
	clockDone   chan struct{}
	// clockMu serializes calibrations; clockHeld says the pinned buffer at
	// clockBuf belongs to a clock kernel a late calibration left running.
	clockMu   sync.Mutex
	clockHeld bool
	clockBuf  int

	devArena *deviceArena
	pinArena *pinnedArena

	mu         sync.Mutex
	modules    map[string]loaded // by PTX hash
	blocks     int               // ring kernels running (one block each)
	maxKernels int
	live       map[*loop]struct{} // their loops, for clock offset updates
	streams    []*drv.Stream      // free streams, made at open (see Options.MaxKernels)
	all        []*drv.Stream
	buf        bufferState // its buffers (buffer.go)
}

func openDevice(octx context.Context, b *Backend, id int) (*device, error) {
	dv, err := b.drv.Device(id)
	if err != nil {
		return nil, err
	}
	sms, err := dv.Attribute(drv.AttrMultiprocessorCount)
	if err != nil {
		return nil, err
	}
	if mapped, err := dv.Attribute(drv.AttrCanMapHostMemory); err != nil || mapped == 0 {
		return nil, fmt.Errorf("cannot map host memory (attribute %d, %v): ring kernels need mapped pinned memory for their control blocks", mapped, err)
	}
	// A kernel run-time limit (a GPU that drives a display) would end every
	// persistent kernel after a few seconds.
	if t, err := dv.Attribute(drv.AttrKernelExecTimeout); err != nil || t != 0 {
		return nil, fmt.Errorf("%w (attribute %d, %v): the driver ends kernels that run more than a few seconds, so ring kernels cannot run here; use a GPU that drives no display", ErrExecTimeout, t, err)
	}
	major, minor, err := dv.ComputeCapability()
	if err != nil {
		return nil, err
	}
	ctx, err := dv.PrimaryContext()
	if err != nil {
		return nil, err
	}
	d := &device{id: id, drv: b.drv, dev: dv, ctx: ctx, sms: sms, cc: [2]int{major, minor},
		modules: map[string]loaded{}, live: map[*loop]struct{}{}, maxKernels: b.opts.MaxKernels}
	fail := func(err error) (*device, error) {
		d.close()
		return nil, err
	}
	if d.devArena, err = newDeviceArena(ctx, b.opts.DeviceArena); err != nil {
		return fail(err)
	}
	if d.pinArena, err = newPinnedArena(ctx, b.opts.PinnedArena, false); err != nil {
		return fail(err)
	}
	if err := d.preload(); err != nil {
		return fail(err)
	}
	// Every driver object a running device needs is made now, while no
	// ring kernel runs: streams (one per kernel, one for the clock, one for
	// buffer copies) and the setup fence's event.
	for range b.opts.MaxKernels + 2 {
		st, err := ctx.NewStream()
		if err != nil {
			return fail(fmt.Errorf("stream %d of %d: %w", len(d.all)+1, b.opts.MaxKernels+2, err))
		}
		d.all = append(d.all, st)
	}
	d.clockStream, d.buf.stream, d.streams = d.all[0], d.all[1], append([]*drv.Stream(nil), d.all[2:]...)
	if d.fence, err = ctx.NewEvent(); err != nil {
		return fail(err)
	}
	if err := d.startClock(octx); err != nil {
		return fail(fmt.Errorf("clock calibration: %w", err))
	}
	return d, nil
}

// preload loads the module of every built-in op, and resolves its ring
// kernel, before any ring kernel runs on the device: loading a module or
// resolving a function in it may wait for the device (with lazy loading,
// resolving is what loads), which a device with persistent kernels never
// is (see liveModuleLoad).
func (d *device) preload() error {
	for _, name := range kernels.ShippedPTXNames() {
		op := strings.TrimSuffix(strings.TrimPrefix(name, "ra_"), ".ptx")
		ptx, ok := kernels.ShippedPTX(op)
		if !ok {
			continue
		}
		if _, err := d.load(name, ptx, strings.TrimSuffix(name, ".ptx")+"_ring"); err != nil {
			return fmt.Errorf("loading the shipped %s: %w", name, err)
		}
	}
	return nil
}

// loaded is a module and the kernel resolved in it when it was loaded.
type loaded struct {
	mod *drv.Module
	fn  *drv.Function
}

// running is the number of ring kernels on the device.
func (d *device) running() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.blocks
}

// kernelEnded accounts for an ended kernel.
func (d *device) kernelEnded(l *loop) {
	d.mu.Lock()
	d.blocks--
	delete(d.live, l)
	d.mu.Unlock()
}

// ErrModuleWhileRunning: a module not loaded yet was needed while ring
// kernels run on the device, and loading it could wait for them forever.
var ErrModuleWhileRunning = errors.New("ringkernel/cuda: loading a new module while ring kernels run on the device could wait for them forever")

// LiveModuleLoadEnv, set to 1, allows loading a new module (a user stage's)
// on a device whose ring kernels are running. Off by default: whether the
// driver waits for the device then depends on the driver and on
// CUDA_MODULE_LOADING, and a wait there never ends.
const LiveModuleLoadEnv = "RINGACTOR_LIVE_MODULE_LOAD"

func liveModuleLoad() bool { return os.Getenv(LiveModuleLoadEnv) == "1" }

// kernel returns op's ring kernel, loading its module once. Built-in ops
// were loaded when the device opened; a user op's module is loaded at its
// first launch, which is refused while other ring kernels run on the
// device (unless LiveModuleLoadEnv allows it).
func (d *device) kernel(op kernels.Op, ptx []byte) (*drv.Function, error) {
	d.mu.Lock()
	m, ok := d.modules[hashPTX(ptx)]
	d.mu.Unlock()
	if ok {
		return m.fn, nil
	}
	// The host build first (a second or more, the emulated driver's
	// compile), so that the check below stays just before the load.
	if err := d.hostBuild(op, ptx); err != nil {
		return nil, err
	}
	d.mu.Lock()
	running := d.blocks
	d.mu.Unlock()
	if running > 0 && !liveModuleLoad() {
		return nil, fmt.Errorf("%w: op %s on device %d (%d ring kernels run); launch stages with user ops before the others, or terminate those first, or set %s=1 if this driver is known to load modules without waiting (see the GPU notes in docs)",
			ErrModuleWhileRunning, op.Name, d.id, running, LiveModuleLoadEnv)
	}
	sym := kernels.Symbol(op.Name)
	return d.load(sym+".ptx", ptx, sym+"_ring")
}

// hostBuild hands the emulated driver (internal/cudaemu) op's ring-kernel
// program, the source ptx was compiled from, which it builds for the CPU
// and runs when ptx is loaded; a real driver runs the PTX, and this does
// nothing there.
func (d *device) hostBuild(op kernels.Op, ptx []byte) error {
	if !hostbuild.Supported(d.drv) {
		return nil
	}
	src := kernels.RingSource(op)
	if err := hostbuild.Build(d.drv, ptx, drv.Source(src)); err != nil {
		fix := "fix the op's CUDA source (the compiler's messages above; the README says what of CUDA the emulated driver's host build supports)"
		if errors.Is(err, &drv.Error{Result: hostbuild.ErrorJITCompilerNotFound}) {
			fix = "install a C++ compiler (Debian: apt-get install g++) or set CXX to one"
		}
		return fmt.Errorf("building op %s's CUDA source for the emulated driver: %w\n(%s)", op.Name, err, fix)
	}
	return nil
}

// load loads ptx once per distinct text and resolves its kernel entry at
// once, so that nothing is resolved later, while kernels run.
func (d *device) load(name string, ptx []byte, entry string) (*drv.Function, error) {
	key := hashPTX(ptx)
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.modules[key]; ok {
		return m.fn, nil
	}
	m, err := d.ctx.LoadModule(name, ptx)
	if err != nil {
		return nil, err
	}
	fn, err := m.Function(entry)
	if err != nil {
		return nil, errors.Join(err, m.Unload())
	}
	d.modules[key] = loaded{m, fn}
	return fn, nil
}

// takeStream takes a free stream for a kernel (reserve bounds the kernels
// by the streams there are).
func (d *device) takeStream() (*drv.Stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.streams) == 0 {
		return nil, fmt.Errorf("%w: device %d has no free stream", ErrTooManyKernels, d.id)
	}
	st := d.streams[len(d.streams)-1]
	d.streams = d.streams[:len(d.streams)-1]
	return st, nil
}

// putStream returns an idle stream (its kernel ended) to the pool.
func (d *device) putStream(st *drv.Stream) {
	d.mu.Lock()
	d.streams = append(d.streams, st)
	d.mu.Unlock()
}

func (d *device) close() error {
	d.stopClockLoop()
	var errs []error
	for _, st := range d.all {
		errs = append(errs, st.Destroy())
	}
	d.all, d.streams = nil, nil
	if d.fence != nil {
		errs = append(errs, d.fence.Destroy())
	}
	for _, m := range d.modules {
		errs = append(errs, m.mod.Unload())
	}
	d.modules = nil
	errs = append(errs, d.freeBuffers())
	if d.devArena != nil {
		errs = append(errs, d.devArena.close())
	}
	if d.pinArena != nil {
		errs = append(errs, d.pinArena.close())
	}
	if d.ctx != nil {
		errs = append(errs, d.ctx.Release())
	}
	return errors.Join(errs...)
}

// hostTime converts a time a kernel wrote: kernels add the calibrated
// offset to every globaltimer reading, so these are host ns already.
func (d *device) hostTime(ns uint64) time.Time { return time.Unix(0, int64(ns)) }
