package sim

import (
	"fmt"
	"time"

	"github.com/ringactor/ringactor/internal/gate"
	"github.com/ringactor/ringactor/p2pqueue"
	"github.com/ringactor/ringactor/ringkernel"
)

// Backend is the simulated backend. Its zero value is ready to use; Devices
// bounds the device ids it accepts (0 means any non-negative id).
type Backend struct {
	Devices int
	// Cost is a simulated service time per message on a device (none by
	// default): it makes devices unequal, as real ones are, so placement
	// and work stealing can be exercised. Set it before the first Start.
	Cost map[int]time.Duration
	// Kind is the name it gives (default "sim"): "cpu" where it runs the
	// host's CPU as a device beside GPUs (NewCPU).
	Kind string
	// Topology, Memory and MemoryOf say how its devices look when they
	// are listed (ListDevices; ringkernel.OpenOptions says what each
	// means). They change nothing of how kernels run.
	Topology string
	Memory   uint64
	MemoryOf map[int]uint64

	gate gate.Gate
	bufs buffers
}

// Freeze holds every loop of the backend at the top of its next
// iteration, as a stall of the whole process (a GC pause, a frozen VM,
// SIGSTOP) would hold it: no loop beats, takes or publishes until thaw
// is called (once; later calls do nothing). A stage function already
// running goes on. It is for tests of what a stall does to the watchdog
// and the account.
func (b *Backend) Freeze() (thaw func()) { return b.gate.Close() }

// New returns a sim backend with n devices (0: any id).
func New(n int) *Backend { return &Backend{Devices: n} }

// Name is Kind, "sim" by default.
func (b *Backend) Name() string {
	if b.Kind != "" {
		return b.Kind
	}
	return "sim"
}

func (b *Backend) checkDevice(d int) error {
	if d < 0 || (b.Devices > 0 && d >= b.Devices) {
		return fmt.Errorf("%s: no device %d: this backend has devices 0..%d; pick one of those", b.Name(), d, b.Devices-1)
	}
	return nil
}

// Alloc returns zeroed Go memory standing in for memory of kind on device.
// It is host memory whatever kind is asked for, so the same p2pqueue code
// runs over it; the region records the device it stands for.
func (b *Backend) Alloc(device, size int, _ p2pqueue.MemoryKind) (p2pqueue.Region, error) {
	if err := b.checkDevice(device); err != nil {
		return p2pqueue.Region{}, err
	}
	r, err := p2pqueue.NewAlignedRegion(size)
	if err != nil {
		return r, fmt.Errorf("sim: %w", err)
	}
	r.Device = device
	return r, nil
}

// Free does nothing: the garbage collector owns sim memory.
func (b *Backend) Free(p2pqueue.Region) error { return nil }

// Start runs the kernel's loop on goroutines.
func (b *Backend) Start(job *ringkernel.Job) (ringkernel.Loop, error) {
	if err := b.checkDevice(job.Spec.Device); err != nil {
		return nil, err
	}
	bufs, err := b.bound(job)
	if err != nil {
		return nil, err
	}
	k, err := newKernel(job)
	if err != nil {
		return nil, err
	}
	k.bufs = bufs
	k.cost = b.Cost[job.Spec.Device]
	k.gate = &b.gate
	go k.run()
	return k, nil
}

// The sim device clock is the host's: no calibration needed.
func nowNanos() uint64 { return uint64(time.Now().UnixNano()) }

func hostTime(ns uint64) time.Time { return time.Unix(0, int64(ns)) }
