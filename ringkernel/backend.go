package ringkernel

import (
	"context"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
)

// Backend runs ring kernels on one kind of device. It is the one narrow
// interface the simulated and CUDA backends both implement (memory and
// launch); everything else about a kernel (commands, status, the trace
// pump, dead letters) is common code in this package.
type Backend interface {
	// Name is "sim" or "cuda".
	Name() string
	// Alloc returns zeroed memory of kind on device, aligned to
	// p2pqueue.RegionAlign, for link queues and control blocks.
	Alloc(device, size int, kind p2pqueue.MemoryKind) (p2pqueue.Region, error)
	// Free returns memory from Alloc.
	Free(p2pqueue.Region) error
	// Start launches the loop of job. The control block is in state
	// Launched; the loop acknowledges commands through it, claims the
	// links, and ends by closing its out-link and trace link.
	Start(job *Job) (Loop, error)
}

// DeviceOpener is a Backend whose devices take setup that may wait (the
// CUDA backend's: context, arenas, modules, clock calibration). The
// runtime's Build opens each device a pipeline uses through it, so that
// setup is bounded by Build's ctx; a device first used by Alloc or Start
// opens within a bound of the backend's own. Opening an open device does
// nothing.
type DeviceOpener interface {
	OpenDevice(ctx context.Context, device int) error
}

// Job is a kernel as the backend launches it.
type Job struct {
	Spec    Spec
	Op      kernels.Op
	Control *ControlBlock
	// Trace is the kernel's trace ring: the loop produces trace and dead
	// letter records, the host pump consumes them.
	Trace *p2pqueue.Link
	// In and Out are the claimed ends of the links, for the loop.
	In  []*p2pqueue.Consumer
	Out []*p2pqueue.Producer
	// StealTo are the claimed producers of Spec.StealTo.
	StealTo []*p2pqueue.Producer
}

// Loop is a running kernel as its backend sees it.
type Loop interface {
	// Done is closed when the loop has ended.
	Done() <-chan struct{}
	// Wake asks a loop that may be parked to look at its control block.
	Wake()
	// HostTime converts a device clock reading into host time.
	HostTime(deviceNanos uint64) time.Time
}

// Abandoner is a Loop the host can cut off exactly (Kernel.Fault uses
// it). Once Abandon has returned, the loop writes nothing more: no
// result, no in-link head, no trace record, no counter, no close, even
// if a stage function it is running returns later; it ends as soon as
// it notices. Everything it ended before the cut is published (its
// results in its out-links, its head past them, its records in the
// trace ring); everything it had taken and not yet published is still
// in its in-links, between head and tail. So the host can account for
// an abandoned kernel exactly: the records in the ring, then what is
// queued. The sim backend's loops are Abandoners; the CUDA device loop
// is not (a loop on a GPU cannot be stopped between two stores from
// the host), so a GPU kernel's fault keeps the older, looser account
// (see Kernel.Fault).
type Abandoner interface {
	Abandon()
}
