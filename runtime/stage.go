package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/internal/wait"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
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
	// Device is the device id the stage's kernel runs on.
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
	// Route picks which of To gets each result: RouteOne (the default,
	// for one), RouteAll (a copy to each), RouteRoundRobin, RouteKey (by
	// the u32 at KeyOffset in the result) or RoutePort (the port its op
	// chose).
	Route     Route
	KeyOffset int
	// Backpressure is what a send does when the stage's mailbox (its
	// ingress link) is full: Block (the default) waits for room until the
	// sender's ctx ends; Reject dead-letters the messages that do not fit
	// (reason "mailbox full") and returns ErrMailboxFull at once. A Send to
	// the stage's PID has no ctx: under Block it waits while the stage
	// runs.
	Backpressure Backpressure
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
	return rk.Stage{Name: s.Name, Op: s.Op, Params: s.Params, Stateful: s.Stateful, Workers: s.Workers, SlotSize: s.SlotSize}
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
	payloadCap  int

	mu      sync.Mutex // one sender writes the ingress at a time
	ingress *p2pqueue.Producer
	closed  atomic.Bool // refuse sends: the pipeline is closing, faulted, or the stage stopped
	stopped atomic.Bool // a Stop ended the stage (or one it feeds)

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

// refusal is why stage s takes no messages, once s.closed is set: the
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

// send writes messages into the stage's ingress link in batches, waiting
// while it is full until ctx ends. Each message ends in the pipeline's
// count: sent, and then delivered or dead-lettered. It returns how many
// it wrote into the link (the rest were dead-lettered, and the error says
// why); ids, when not nil, receives each message's id.
func (s *stage) send(ctx context.Context, ds []Data, ids []uint64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.p
	done, taken := 0, 0 // messages handled, and of those written
	w := wait.Waiter{P: ingressWait}
	defer w.Stop()
	var firstErr error
	reject := func(reason Reason, cause error) {
		p.rejectRest(s, ds[done:], idsFrom(ids, done), reason, cause)
	}
	for done < len(ds) {
		if s.closed.Load() {
			reason, cause := s.refusal()
			reject(reason, cause)
			return taken, fmt.Errorf("%w: %d of %d messages taken by stage %q, the rest dead-lettered (%s)", cause, taken, len(ds), s.spec.Name, reason)
		}
		k, err := s.ingress.Reserve(len(ds) - done)
		if errors.Is(err, p2pqueue.ErrFull) && s.spec.Backpressure == Reject {
			cause := fmt.Errorf("%w: stage %q holds %d messages", ErrMailboxFull, s.spec.Name, s.spec.Capacity)
			reject(ReasonMailboxFull, cause)
			return taken, fmt.Errorf("%w: %d of %d taken, the rest dead-lettered; send slower, raise its Capacity, or build it with Backpressure: Block",
				cause, taken, len(ds))
		}
		if errors.Is(err, p2pqueue.ErrFull) {
			if s.kernel.Status().State.Running() {
				if werr := w.Wait(ctx); werr != nil {
					reject(ReasonSendCancelled, werr)
					return taken, fmt.Errorf("ringactor: send to stage %q: %d of %d taken, the rest dead-lettered: %w", s.spec.Name, taken, len(ds), werr)
				}
				continue
			}
			cause := fmt.Errorf("%w: the kernel of stage %q has ended (%s)", ErrStageStopped, s.spec.Name, s.kernel.Status().State)
			reject(ReasonStageStopped, cause)
			return taken, fmt.Errorf("%w: %d of %d taken", cause, taken, len(ds))
		}
		if err != nil {
			cause := fmt.Errorf("ringactor: stage %q: %w", s.spec.Name, err)
			reject(ReasonQueueClosed, cause)
			return taken, cause
		}
		w.Reset()
		var now time.Time // read only for sampled messages: a clock read costs as much as a copy
		written := 0
		for i := range k {
			d := &ds[done+i]
			id := p.idOf(d.ID)
			if ids != nil && done+i < len(ids) {
				ids[done+i] = id
			}
			p.acct.Enter(1)
			buf, _ := s.ingress.Slot(written)
			typ, n, reason, err := s.encode(d, buf[:s.payloadCap])
			if err != nil {
				p.refuse(s, d, id, reason, err)
				if firstErr == nil {
					firstErr = fmt.Errorf("ringactor: message %d: %w", id, err)
				}
				continue
			}
			h := p2pqueue.Header{ID: id, Type: typ}
			if d.Sampled || p.sample(id) {
				if now.IsZero() {
					now = time.Now()
				}
				h.Flags |= p2pqueue.FlagSampled
				h.Enqueued = uint64(now.UnixNano())
				p.tele.begin(d.Context, id, s.idx, now)
			}
			s.ingress.WriteHeader(written, &h, n) // in order, size checked by encode
			written++
		}
		if err := s.ingress.Commit(written); err != nil {
			return taken, err
		}
		done += k
		taken += written
	}
	// An oversize message was dead-lettered and the rest still sent: the
	// batch is all accounted for, and the caller hears about the first.
	return taken, firstErr
}

// idsFrom is ids from i on, or nil.
func idsFrom(ids []uint64, i int) []uint64 {
	if i >= len(ids) {
		return nil
	}
	return ids[i:]
}

// encode writes d's payload into the slot's payload area buf and returns
// its type id and length, or the dead-letter reason and error that keep it
// out: "oversize payload", "unregistered type", "wrong type".
func (s *stage) encode(d *Data, buf []byte) (uint32, int, Reason, error) {
	typ, n, refused, err := msgtype.Encode(d.Floats, d.Value, s.in, s.spec.Name, buf)
	return typ, n, refusalReasons[refused], err
}

// refusalReasons are the dead-letter reasons of msgtype's refusals.
var refusalReasons = [...]Reason{msgtype.Oversize: ReasonOversize, msgtype.WrongType: ReasonWrongType, msgtype.Unregistered: ReasonUnregisteredType}

// ingressWait waits for room in an ingress link: no spin (the kernel must
// drain first), yields (it may need this core), then sleeps up to 1 ms.
var ingressWait = wait.Policy{Yield: 16, MinSleep: 10 * time.Microsecond, MaxSleep: time.Millisecond}
