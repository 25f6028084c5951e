package ringkernel

import (
	"errors"
	"fmt"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

// Stage defines a pipeline stage: what runs, on what, and how.
type Stage struct {
	// Name names the stage in errors, status and traces.
	Name string
	// Op is a registered op (kernels.Register; kernels.Names lists them,
	// the built-ins among them).
	Op string
	// Params are the op's float32 parameters; exactly as many as it takes.
	Params []float32
	// Stateful runs the stage as one consumer that sees its messages in
	// order (actor semantics). Required for ops that keep state; a
	// stateless op may ask for it to keep order.
	Stateful bool
	// Workers is a stateless stage's parallelism on sim: goroutines
	// (default 1: a sim stage shares the machine with its neighbours).
	// The CUDA backend runs one thread per message instead (its
	// Options.Threads). Stateful stages have exactly one.
	Workers int
	// SlotSize is the slot size in bytes of the stage's in-link, a
	// multiple of 64 (default DefaultSlotSize). Pipelines use it to build
	// links; Launch does not, the links are given.
	SlotSize int
	// Buffers are the device buffers bound to the stage (at most
	// MaxStageBuffers), in the order its function receives them: an op with
	// Buffers > 0 (kernels.Op.GoBuf, a RA_BUF_STAGE function) gets their
	// memory, its Go side as byte slices, its CUDA side as addresses and
	// sizes. Each must live on the kernel's device or on one it reaches by
	// peer access (p2pqueue.PathOf), checked at Launch (and Build).
	Buffers []Binding
}

// Binding is a buffer bound to a stage, and whether the stage writes it.
type Binding struct {
	Buf   devmem.Buffer
	Write bool
}

// MaxStageBuffers is the most buffers a stage binds (Stage.Buffers).
const MaxStageBuffers = kernels.MaxBuffers

// DefaultSlotSize holds 56 float32s after the slot header.
const DefaultSlotSize = 256

// ErrBadStage: a stage definition that cannot run.
var ErrBadStage = errors.New("ringkernel: bad stage")

// Resolve checks the stage and returns its op.
func (s Stage) Resolve() (kernels.Op, error) {
	if s.Name == "" {
		return kernels.Op{}, fmt.Errorf("%w: a stage needs a name", ErrBadStage)
	}
	if s.Op == "" {
		return kernels.Op{}, fmt.Errorf("%w %q: no op; set Op to a registered one: %v", ErrBadStage, s.Name, kernels.Names())
	}
	op, err := kernels.Lookup(s.Op)
	if err != nil {
		return kernels.Op{}, fmt.Errorf("%w %q: %w", ErrBadStage, s.Name, err)
	}
	if len(s.Params) != op.Params && !(op.MoreParams && len(s.Params) > op.Params) {
		more := ""
		if op.MoreParams {
			more = " or more"
		}
		return op, fmt.Errorf("%w %q: op %s takes %d%s params, got %d", ErrBadStage, s.Name, op.Name, op.Params, more, len(s.Params))
	}
	if op.Stateful() && !s.Stateful {
		return op, fmt.Errorf("%w %q: op %s keeps state; declare the stage Stateful (one consumer, in order)", ErrBadStage, s.Name, op.Name)
	}
	if s.Workers < 0 || (s.Stateful && s.Workers > 1) {
		return op, fmt.Errorf("%w %q: %d workers; a stateful stage has one, a stateless one at least one", ErrBadStage, s.Name, s.Workers)
	}
	if s.SlotSize < 0 || s.SlotSize > p2pqueue.MaxSlotSize { // as given: uint32 would wrap a negative
		return op, fmt.Errorf("%w %q: SlotSize %d: %w; use a multiple of %d from %d to %d", ErrBadStage, s.Name, s.SlotSize,
			p2pqueue.ErrBadSlotSize, p2pqueue.SlotAlign, p2pqueue.MinSlotSize, p2pqueue.MaxSlotSize)
	}
	if len(s.Buffers) != op.Buffers || len(s.Buffers) > MaxStageBuffers {
		return op, fmt.Errorf("%w %q: op %s takes %d buffers, the stage binds %d; bind exactly %[4]d in Stage.Buffers (at most %[6]d)", ErrBadStage, s.Name, op.Name, op.Buffers, len(s.Buffers), MaxStageBuffers)
	}
	for i, b := range s.Buffers {
		if b.Buf.Size <= 0 || (b.Buf.Addr == 0 && b.Buf.Bytes == nil) {
			return op, fmt.Errorf("%w %q: buffer %d (device %d) has %d bytes at %#x: bind a buffer its backend allocated (devmem.Backend.AllocBuffer)", ErrBadStage, s.Name, i, b.Buf.Device, b.Buf.Size, b.Buf.Addr)
		}
	}
	if s.SlotSize != 0 {
		if err := (p2pqueue.Config{Capacity: p2pqueue.MinCapacity, SlotSize: uint32(s.SlotSize)}).Validate(); err != nil {
			return op, fmt.Errorf("%w %q: %w", ErrBadStage, s.Name, err)
		}
	}
	return op, nil
}

// Spec is what Launch needs: the stage, where it runs, and its links. The
// kernel becomes the only consumer of each in-link and the only producer of
// its out-link, and claims them at launch.
type Spec struct {
	Stage Stage
	// ID is the stage id: written as Origin into what the kernel emits and
	// carried by its trace records.
	ID uint32
	// Device is the device id the kernel runs on.
	Device int
	// In are the in-links (at least one). The kernel takes from them in turn.
	In []*p2pqueue.Link
	// Out are the out-links (at most MaxDeviceOutLinks); none makes the
	// stage a sink that counts results. Route says which gets each result.
	Out []*p2pqueue.Link
	// Route picks the out-link of each result; RouteOne (the zero value)
	// takes exactly one out-link. KeyOffset is where RouteKey finds the
	// key: the u32 at that byte offset of the result's payload.
	Route     Route
	KeyOffset int
	// InLocal[i] says in-link i is written only by a kernel on this same
	// device (p2pqueue.Local placement), and OutLocal[i] that out-link i is
	// read only by one: a device loop may then order those links at GPU
	// scope. Unset means the other side may be the host or a peer GPU, and
	// system scope is used, which is always correct.
	InLocal  []bool
	OutLocal []bool
	// StealTo are dedicated links to the kernels that may steal from this
	// one (Kernel.Steal forwards queued messages into them); the kernel is
	// their only producer and closes them when it ends or starts draining.
	StealTo []*p2pqueue.Link
	// Batch is the most messages taken per step (default 32).
	Batch int
	// TraceCapacity is the trace ring's length in records (default 1024).
	TraceCapacity int
	// OnTrace receives a record for each sampled message, OnDeadLetter each
	// dead letter; both run on the kernel's pump goroutine and should be
	// quick. Nil drops them (the counters still count).
	OnTrace      func(TraceRecord)
	OnDeadLetter func(DeadLetter)
	// Variant picks the device loop (LoopClassic, the zero value, LoopWarp or LoopWarpPrefetch); the sim backend ignores it.
	Variant LoopVariant
	// PhaseTimers, if not 0, is the device address of the CUDA loop's
	// per-phase timers (ringkernel/cuda.PhaseWords u64 words; bench-gpu).
	PhaseTimers uint64
}

func (s *Spec) defaults() {
	if s.Batch <= 0 {
		s.Batch = 32
	}
	if s.TraceCapacity <= 0 {
		s.TraceCapacity = 1024
	}
	if s.Stage.Workers == 0 {
		s.Stage.Workers = 1
	}
}

func (s *Spec) check() (kernels.Op, error) {
	op, err := s.Stage.Resolve()
	if err != nil {
		return op, err
	}
	if len(s.In) == 0 {
		return op, fmt.Errorf("%w %q: no in-link", ErrBadStage, s.Stage.Name)
	}
	for i, l := range s.In {
		if l == nil {
			return op, fmt.Errorf("%w %q: in-link %d is nil", ErrBadStage, s.Stage.Name, i)
		}
	}
	if len(s.Out) > MaxDeviceOutLinks {
		return op, fmt.Errorf("%w %q: %d out-links; a kernel routes over at most %d", ErrBadStage, s.Stage.Name, len(s.Out), MaxDeviceOutLinks)
	}
	for i, l := range s.Out {
		if l == nil {
			return op, fmt.Errorf("%w %q: out-link %d is nil", ErrBadStage, s.Stage.Name, i)
		}
	}
	if err := CheckRoute(s.Stage.Name, op, len(s.Out), s.Route, s.KeyOffset); err != nil {
		return op, err
	}
	if s.TraceCapacity&(s.TraceCapacity-1) != 0 {
		return op, fmt.Errorf("%w %q: trace capacity %d is not a power of two", ErrBadStage, s.Stage.Name, s.TraceCapacity)
	}
	return op, nil
}

// CheckRoute says whether a stage running op can route its results over
// outs out-links with route r (and key offset keyOffset, for RouteKey): the
// check Launch makes, for builders that want it before any link exists.
func CheckRoute(stage string, op kernels.Op, outs int, r Route, keyOffset int) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w %q: route %s: %s", ErrBadStage, stage, r, fmt.Sprintf(format, a...))
	}
	switch r {
	case RouteOne:
		if outs > 1 {
			return bad("%d out-links; RouteOne takes one: pick RouteAll, RouteRoundRobin, RouteKey or RoutePort", outs)
		}
	case RouteAll, RouteRoundRobin, RouteKey, RoutePort:
		if outs == 0 {
			return bad("no out-links to route over")
		}
	default:
		return fmt.Errorf("%w %q: unknown route %d", ErrBadStage, stage, uint32(r))
	}
	if r == RouteKey && (keyOffset < 0 || keyOffset%4 != 0 || keyOffset > p2pqueue.MaxSlotSize) {
		return bad("key offset %d; want a multiple of 4 inside the result", keyOffset)
	}
	if r == RoutePort && op.Ports != outs {
		if op.Ports == 0 {
			return bad("op %s chooses no port; register an op with Ports (kernels.Op) or pick another route", op.Name)
		}
		return bad("op %s chooses among %d ports, the stage has %d out-links", op.Name, op.Ports, outs)
	}
	if r != RoutePort && op.Ports > 0 && outs > 0 {
		return bad("op %s chooses a port for each result; route it with RoutePort", op.Name)
	}
	return nil
}
