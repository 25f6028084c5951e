package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
)

// ErrLaunchBlocking: CUDA_LAUNCH_BLOCKING=1 is set, which makes every launch
// wait for its kernel: the first ring kernel would never return.
var ErrLaunchBlocking = errors.New("ringkernel/cuda: CUDA_LAUNCH_BLOCKING=1 would block on the first persistent kernel; unset it (it is a debugging aid for ordinary kernels)")

// ErrNoFit: the kernel's block would not be co-resident with those already
// running on the device, so it might never be scheduled.
var ErrNoFit = errors.New("ringkernel/cuda: kernel would not be co-resident")

// ErrLazyLoading: CUDA_MODULE_LOADING=LAZY defers loading a kernel to its
// first launch, and that load waits for the device, which never becomes
// idle while ring kernels run (seen on an H100: the launch never returns).
var ErrLazyLoading = errors.New("ringkernel/cuda: CUDA_MODULE_LOADING=LAZY would load kernels at their first launch, which waits for the running ring kernels forever; unset it (the backend then loads eagerly) or set it to EAGER")

// ErrExecTimeout: the GPU has a kernel run-time limit (it drives a
// display), which would end every persistent kernel.
var ErrExecTimeout = errors.New("ringkernel/cuda: the GPU has a kernel run-time limit")

// ErrOpenWhileRunning: a device was to be opened while ring kernels run
// on another device. Opening it enables peer access in the contexts of the
// devices already open, and whether cuCtxEnablePeerAccess waits for a
// context's running kernels is not documented (it may never return under
// persistent kernels). The backend opens every device at its first open,
// so this happens only for a device that failed to open then.
var ErrOpenWhileRunning = errors.New("ringkernel/cuda: opening a device while ring kernels run on another device would enable peer access under live kernels")

// ErrTooManyKernels: the device runs as many ring kernels as it may.
var ErrTooManyKernels = errors.New("ringkernel/cuda: too many ring kernels on the device")

// Options tunes the backend. The zero value is sensible.
type Options struct {
	// Threads per block of a stateless stage (default 256, each thread
	// running the stage over one message of a batch). A stateful stage
	// runs one warp, and an op with state runs on its thread 0 alone, so
	// it sees its messages in order (docs/ARCHITECTURE.md §4).
	Threads int
	// DeviceArena and PinnedArena are the bytes taken from the driver per
	// device at first use, for links in device memory and for control
	// blocks, trace rings and host-facing links (defaults 64 MiB, 32 MiB).
	DeviceArena, PinnedArena int
	// MaxKernels caps the ring kernels on one device (default: the
	// driver's hardware queues, CUDA_DEVICE_MAX_CONNECTIONS, which the
	// backend sets to 32 when unset, less 2). Streams beyond the hardware
	// queues share them, and a kernel queued behind a persistent kernel
	// never starts; creating a stream while many kernels run was seen to
	// block (H100, driver 580), so each device makes its streams up front.
	MaxKernels int
}

// Backend runs ring kernels on the GPUs the CUDA driver reports.
type Backend struct {
	drv  *drv.Driver
	opts Options

	mu      sync.Mutex
	devs    map[int]*device
	opened  bool         // the first open has opened every device (see deviceCtx)
	portArn *pinnedArena // portable pinned memory, shared by all devices
	allocs  map[uint64]allocation
	closed  bool

	// listOnce lists the GPUs once (ListDevices).
	listOnce sync.Once
	gpus     []gpu
	listErr  error
}

// New loads the driver and readies a backend. It fails with an error
// wrapping cuda.ErrNoDriver where there is no driver, and with
// ErrLaunchBlocking under CUDA_LAUNCH_BLOCKING=1.
func New(opts Options) (*Backend, error) {
	if err := checkLaunchBlocking(); err != nil {
		return nil, err
	}
	if opts.Threads <= 0 {
		opts.Threads = 256
	}
	if opts.Threads%32 != 0 || opts.Threads > 1024 {
		return nil, fmt.Errorf("ringkernel/cuda: %d threads per block: use a multiple of 32 up to 1024", opts.Threads)
	}
	if os.Getenv(drv.ModuleLoadingEnv) == "LAZY" {
		return nil, ErrLazyLoading
	}
	d, err := drv.LoadDriver()
	if err != nil {
		return nil, err
	}
	n, err := d.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("ringkernel/cuda: the driver (%s) reports no GPU", d.Path())
	}
	if opts.DeviceArena <= 0 {
		opts.DeviceArena = 64 << 20
	}
	if opts.PinnedArena <= 0 {
		opts.PinnedArena = 32 << 20
	}
	if opts.MaxKernels <= 0 {
		opts.MaxKernels = max(1, drv.MaxConnections()-2)
	}
	return &Backend{drv: d, opts: opts, devs: map[int]*device{}}, nil
}

func checkLaunchBlocking() error {
	if v := os.Getenv("CUDA_LAUNCH_BLOCKING"); v != "" && v != "0" {
		return ErrLaunchBlocking
	}
	return nil
}

// Name is "cuda".
func (b *Backend) Name() string { return "cuda" }

// Driver is the loaded CUDA driver.
func (b *Backend) Driver() *drv.Driver { return b.drv }

// OpenDevice sets GPU id up now, if it is not yet, with its setup (the
// clock calibration's retries) bounded by ctx: it implements
// ringkernel.DeviceOpener, through which the runtime's Build opens the
// devices of a pipeline under its own ctx. A device first used by Alloc or
// Start instead opens within a bound of its own (two minutes).
func (b *Backend) OpenDevice(ctx context.Context, id int) error {
	if ctx == nil {
		return errors.New("ringkernel/cuda: OpenDevice with a nil ctx; pass context.Background() or a bound")
	}
	_, err := b.deviceCtx(ctx, id)
	return err
}

// device returns the state of GPU id, setting it up at first use (within
// openBound): primary context, arenas, clock calibration.
func (b *Backend) device(id int) (*device, error) {
	b.mu.Lock()
	if d, ok := b.devs[id]; ok && !b.closed {
		b.mu.Unlock()
		return d, nil
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), openBound)
	defer cancel()
	return b.deviceCtx(ctx, id)
}

// deviceCtx is device with the open's setup bounded by ctx.
func (b *Backend) deviceCtx(ctx context.Context, id int) (*device, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errors.New("ringkernel/cuda: backend closed")
	}
	if d, ok := b.devs[id]; ok {
		return d, nil
	}
	n, err := b.drv.DeviceCount()
	if err != nil {
		return nil, err
	}
	if id < 0 || id >= n {
		return nil, fmt.Errorf("ringkernel/cuda: no device %d: the driver reports devices 0..%d", id, n-1)
	}
	for _, o := range b.devs {
		if k := o.running(); k > 0 {
			return nil, fmt.Errorf("%w: device %d while device %d runs %d; the backend opens every device at its first open, and device %d did not open then: fix what kept it from opening, or open it (Backend.OpenDevice, or a Build that uses it) before any kernel starts",
				ErrOpenWhileRunning, id, o.id, k, id)
		}
	}
	d, err := b.openOne(ctx, id)
	if err != nil {
		return nil, err
	}
	// Every device, and peer access among them, now, before any kernel
	// runs: enabling peer access later would do it in the contexts of
	// devices whose kernels run (GPU-REVIEW D7). A device that fails to
	// open here is left for later (refused while kernels run).
	if !b.opened {
		b.opened = true
		for other := range n {
			if _, ok := b.devs[other]; !ok {
				_, _ = b.openOne(ctx, other) // on failure, tried again (and its error returned) when it is used
			}
		}
	}
	return d, nil
}

// openOne opens GPU id and enables peer access between it and every open
// device. Holds b.mu.
func (b *Backend) openOne(ctx context.Context, id int) (*device, error) {
	d, err := openDevice(ctx, b, id)
	if err != nil {
		return nil, fmt.Errorf("ringkernel/cuda: device %d: %w", id, err)
	}
	for _, o := range b.devs {
		if err := enablePeers(d, o); err != nil {
			d.close()
			return nil, fmt.Errorf("ringkernel/cuda: peer access between devices %d and %d: %w", d.id, o.id, err)
		}
	}
	b.devs[id] = d
	return d, nil
}

// enablePeers lets each of two GPUs reach the other's memory where they
// can: a link in the consumer's memory is written by the producer through
// the peer mapping, which faults without this. Done when the devices open,
// all at the backend's first open, before any kernel runs.
func enablePeers(a, c *device) error {
	for _, p := range [][2]*device{{a, c}, {c, a}} {
		ok, err := p[0].dev.CanAccessPeer(p[1].dev)
		if err != nil || !ok {
			continue // placement puts their links in host memory
		}
		if err := p[0].ctx.EnablePeerAccess(p[1].ctx); err != nil { // enabling it again is no error
			return err
		}
	}
	return nil
}

// Shutdown is Close for a backend whose kernels are ending: while Close
// refuses because kernels still run (ErrKernelsRunning: a faulted kernel
// whose loop has not come back yet, or one whose stream the backend has
// not yet seen finish), it waits, with backoff, and tries again, until ctx
// ends. It does not stop kernels: terminate them first.
func (b *Backend) Shutdown(ctx context.Context) error {
	wait := time.Millisecond
	for {
		err := b.Close()
		if !errors.Is(err, ErrKernelsRunning) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (waited until: %w)", err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// ErrKernelsRunning: Close was called while ring kernels still run. A
// kernel that was terminated has ended when Terminate returns; one that
// faulted ends once its loop comes back, so Close may be retried.
var ErrKernelsRunning = errors.New("ringkernel/cuda: ring kernels still run")

// Close releases every device's memory and context. Kernels must have
// ended; Close refuses while any runs, since freeing their memory under
// them would fault them.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, d := range b.devs {
		if n := d.running(); n > 0 {
			return fmt.Errorf("%w: device %d still runs %d ring kernels: terminate them (and wait for a faulted one's loop to end) before Close", ErrKernelsRunning, id, n)
		}
	}
	var errs []error
	// Every clock loop first, and a clock kernel a late calibration left
	// running waited for: no pinned memory may be freed in a context
	// while a kernel runs there (make flake-load saw the portable arena's
	// cuMemFreeHost beside a late ra_clock).
	for _, d := range b.devs {
		d.stopClockLoop()
	}
	// The portable arena next: it is freed through the context of the
	// device it was made in, which d.close releases.
	if b.portArn != nil {
		errs = append(errs, b.portArn.close())
		b.portArn = nil
	}
	for _, d := range b.devs {
		errs = append(errs, d.close())
	}
	b.devs, b.closed = map[int]*device{}, true
	return errors.Join(errs...)
}
