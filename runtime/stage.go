package runtime

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/buffers"
	"github.com/ringactor/ringactor/runtime/internal/ingress"
	"github.com/ringactor/ringactor/runtime/internal/lanes"
	"github.com/ringactor/ringactor/runtime/internal/msgtype"
)

// StageSpec is one stage of a pipeline: what it runs and where.
type StageSpec struct {
	// Name is unique in the pipeline; the stage actor is spawned as
	// "<pipeline>/<name>".
	Name string
	// Op is a registered op (see package kernels) and Params its parameters.
	Op     string
	Params []float32
	// Device is the device id the stage's kernel runs on; CPU is the CPU.
	Device int
	// Node is the cluster node that runs the stage ("" for this one): a
	// pipeline that names other nodes is built with Node.Build, which
	// places the stage on that node's device Device.
	Node string
	// Stateful: one consumer, messages in order (required for stateful ops).
	Stateful bool
	// Workers is a stateless stage's parallelism (see ringkernel.Stage).
	Workers int
	// SlotSize is the slot size of the stage's in-links in bytes, a multiple
	// of 64 (default DefaultSlotSize, 256: 56 floats); it bounds the
	// message size.
	SlotSize int
	// Capacity is the slots per in-link, a power of two (default
	// DefaultCapacity, 1024).
	Capacity int
	// To names the stages this stage's results go to: a pipeline is a
	// graph. When no stage of a pipeline names any, the stages form a
	// chain in order; once one does, a stage with an empty To is an exit
	// whose results leave the pipeline (every exit's go to Deliver).
	// Each edge is a link of its own, so a stage several stages feed
	// reads each of them in turn (fan-in, up to the device loop's
	// in-link limit, ringkernel.MaxDeviceInLinks, with its ingress).
	To []string
	// Route picks which of To gets each result (RouteOne, the default,
	// and the others Route lists); KeyOffset is RouteKey's.
	Route     Route
	KeyOffset int
	// Lanes runs a stateless stage as that many kernels (0, 1: one; up
	// to 8), stages "<Name>#<lane>", fed round robin or, KeyedLanes, by
	// the u32 key at byte offset LaneKey of what it takes (as RouteKey);
	// order holds per lane or key (docs/ARCHITECTURE.md §10.1).
	Lanes      int
	KeyedLanes bool
	LaneKey    int
	// Backpressure is what a send does when the stage's mailbox (its
	// ingress link) is full: Block (the default) waits for room until the
	// sender's ctx ends; Reject dead-letters the messages that do not fit
	// (reason "mailbox full") and returns ErrMailboxFull at once. A Send to
	// the stage's PID has no ctx: under Block it waits while the stage
	// runs.
	Backpressure Backpressure
	// Buffers are bound to the stage (an op with kernels.Op.Buffers), in
	// the order its function gets them; each on Device or a GPU it reaches
	// by peer access. Free refuses them until the pipeline closes.
	Buffers []BufferUse
}

// A stage's defaults: what a zero StageSpec.Capacity and SlotSize mean.
const (
	DefaultCapacity = 1024
	DefaultSlotSize = rk.DefaultSlotSize
)

// WithDefaults returns s with a zero Capacity or SlotSize set to its
// default, as Build reads it (a stage group sizes its steal links with it).
func (s StageSpec) WithDefaults() StageSpec {
	if s.SlotSize == 0 {
		s.SlotSize = DefaultSlotSize
	}
	if s.Capacity == 0 {
		s.Capacity = DefaultCapacity
	}
	return s
}

// Backpressure is a stage's answer to a full mailbox.
type Backpressure int

const (
	// Block waits for room, bounded by the sender's ctx.
	Block Backpressure = iota
	// Reject refuses what does not fit, with ErrMailboxFull.
	Reject
)

// ErrMailboxFull: a stage built with Reject had no room for a message.
var ErrMailboxFull = errors.New("ringactor: stage mailbox full")

func (s StageSpec) kernelStage() rk.Stage {
	return rk.Stage{Name: s.Name, Op: s.Op, Params: s.Params, Stateful: s.Stateful, Workers: s.Workers, SlotSize: s.SlotSize, Buffers: buffers.Bindings(s.Buffers)}
}

// stage is a built stage: its kernel, its host ingress and its actor.
type stage struct {
	p    *Pipeline
	idx  int
	spec StageSpec
	dev  Device

	ups         []edge  // links from the stages feeding this one
	outs        []edge  // links to the stages in To, in order
	egress      *egress // an exit's link to the host
	in          uint32  // the type its messages must have (kernels.TypeAny: any)
	ingressLink *p2pqueue.Link
	inPlacement p2pqueue.Placement

	ingress *ingress.Link[Data, Reason] // refuses sends once the pipeline is closing, faulted, or the stage stopped
	stopped atomic.Bool                 // a Stop ended the stage (or one it feeds)

	kernel *rk.Kernel
	pid    *actor.PID
}

// edge is a link between two stages, as one end sees it.
type edge struct {
	peer *stage // the stage at the other end
	link *p2pqueue.Link
	pl   p2pqueue.Placement
}

// egress is an exit stage's link to the host and its pump's end of it.
type egress struct {
	link *p2pqueue.Link
	pl   p2pqueue.Placement
	c    *p2pqueue.Consumer
}

// ErrClosed: the pipeline is closed, or closing, and takes no messages.
var ErrClosed = errors.New("ringactor: pipeline closed")

// ErrStageStopped: the stage was stopped (a Stop sent to its PID, or one
// downstream of it) and takes no messages.
var ErrStageStopped = errors.New("ringactor: stage stopped")

// refusal is why stage s takes no messages, once its ingress refuses: the
// dead-letter reason and the error its sender gets.
func (s *stage) refusal() (Reason, error) {
	p := s.p
	if f := p.faulted.Load(); f != nil {
		return ReasonStageFaulted, fmt.Errorf("%w: %v", ErrStageFaulted, *f)
	}
	if s.stopped.Load() && !p.closing.Load() {
		return ReasonStageStopped, fmt.Errorf("%w: stage %q of pipeline %q was stopped (a Stop to its PID, or to a stage it feeds); build the pipeline again to send to it", ErrStageStopped, s.spec.Name, p.spec.Name)
	}
	return ReasonPipelineClosed, fmt.Errorf("%w: pipeline %q", ErrClosed, p.spec.Name)
}

// newIngress is the host's end of s's ingress link, writing through q:
// Send, SendBatch and data sent to s's PID go in through it.
func (s *stage) newIngress(q *p2pqueue.Producer) *ingress.Link[Data, Reason] {
	p := s.p
	return ingress.New(q, ingress.Config[Data, Reason]{
		Stage: s.spec.Name, Capacity: s.spec.Capacity, Reject: s.spec.Backpressure == Reject,
		Acct: p.acct, SampleEvery: p.sampleEvery, Full: ErrMailboxFull, Stopped: ErrStageStopped,
		Reasons: ingress.Reasons[Reason]{Full: ReasonMailboxFull, Cancelled: ReasonSendCancelled, Stopped: ReasonStageStopped, QueueClosed: ReasonQueueClosed},
		Own:     func(d Data) (uint64, bool) { return d.ID, d.Sampled },
		Encode: func(d *Data, buf []byte) (ingress.Encoded, Reason, error) {
			typ, n, refused, err := msgtype.Encode(d.Floats, d.Value, s.in, s.spec.Name, buf)
			return ingress.Encoded{Own: d.ID, Sampled: d.Sampled, Type: typ, N: n}, refusalReasons[refused], err
		},
		Begin: func(d Data, id uint64, at time.Time) { p.tele.Begin(d.Parent, d.Context, id, at) },
		Dead: func(id uint64, reason Reason, err error) {
			p.deadLetter(0, DeadLetter{ID: id, Stage: s.spec.Name, Device: s.spec.Device, Reason: reason, Err: err})
		},
		Refusal: s.refusal,
		Running: func() (bool, fmt.Stringer) { st := s.kernel.Status().State; return st.Running(), st },
	})
}

// expandLanes makes each stage with lanes a stage per lane (package
// lanes), and says how sends spread over the first stage's.
func expandLanes(spec *PipelineSpec) (f lanes.First, err error) {
	spec.Stages, f, err = lanes.Expand(spec.Stages, len(spec.stealIn), func(s StageSpec) lanes.Stage {
		return lanes.Stage{Name: s.Name, To: s.To, Route: s.Route, KeyOffset: s.KeyOffset, Lanes: s.Lanes, Keyed: s.KeyedLanes, Key: s.LaneKey, Stateful: s.Stateful, Op: s.Op}
	}, func(s StageSpec, n lanes.Node) StageSpec {
		s.Name, s.To, s.Route, s.KeyOffset, s.Lanes, s.KeyedLanes = n.Name, n.To, n.Route, n.KeyOffset, 0, false
		return s
	})
	if err != nil {
		err = fmt.Errorf("%w %q: %w", ErrBadPipeline, spec.Name, err)
	}
	return f, err
}

// refusalReasons are the dead-letter reasons of msgtype's refusals.
var refusalReasons = [...]Reason{msgtype.Oversize: ReasonOversize, msgtype.WrongType: ReasonWrongType, msgtype.Unregistered: ReasonUnregisteredType}
