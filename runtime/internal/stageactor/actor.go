package stageactor

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// Stage is what a stage actor, its mailbox and its late data do with each
// kind of message: runtime's stage implements it over its Data (D).
type Stage[D any] interface {
	// Post writes one data message into the stage's ingress, in the
	// sender's goroutine, waiting while it is full as the stage's
	// backpressure says; its errors are dead letters. d comes by value,
	// so the mailbox's common case allocates nothing.
	Post(d D)
	// PostAll writes several the same way.
	PostAll(ds []D)
	// Request makes d a request whose outcome goes to sender; false when
	// it is refused (the stage has told sender why).
	Request(d D, sender *actor.PID) (D, bool)
	// Stop ends the stage, draining first when drain is set.
	Stop(ctx context.Context, drain bool) error
	// Closing reports that the stage's pipeline is closing: its Close,
	// not a stopping actor, ends the kernel then.
	Closing() bool
	// Shut makes the stage refuse what is sent to it from now on: its
	// actor is gone.
	Shut()
	// Answer is what a control message that succeeded answers: the
	// stage's status.
	Answer() any
	// Queued counts the data messages waiting in the ingress.
	Queued() int
}

// Kernel is the ring kernel's commands, as a stage actor gives them (a
// *ringkernel.Kernel).
type Kernel interface {
	Activate(ctx context.Context) error
	Deactivate(ctx context.Context) error
	Steal(ctx context.Context, n, to int) (int, error)
	Status() rk.Status
}

// ControlTimeout bounds a control command's wait for the kernel.
const ControlTimeout = 10 * time.Second

// stageActor is the Go side of a ring kernel: it answers control
// messages. Data never reaches it: its mailbox puts data into the
// kernel's ingress.
type stageActor[D any] struct {
	p *Protocol[D]
	s Stage[D]
	k Kernel
}

func (a *stageActor[D]) Receive(c actor.Context) {
	ctx, cancel := context.WithTimeout(context.Background(), ControlTimeout)
	defer cancel()
	msg := c.Message()
	if _, ok := msg.(*actor.Stopping); ok {
		// The actor is going away (stopped through protoactor, not a
		// Stop): so does its kernel, if still running, as for a Stop.
		if a.k.Status().State.Running() && !a.s.Closing() {
			a.s.Stop(ctx, false)
		}
		return
	}
	cmd, ok := a.p.Command(msg)
	if !ok {
		return
	}
	var err error
	switch cmd.Op {
	case Activate:
		err = a.k.Activate(ctx)
	case Deactivate:
		err = a.k.Deactivate(ctx)
	case Stop:
		err = a.s.Stop(ctx, cmd.Drain)
	case Stats:
	case Steal:
		moved, err := a.k.Steal(ctx, cmd.N, cmd.To)
		if c.Sender() != nil {
			c.Respond(a.p.Stolen(moved, err))
		}
		return
	default:
		return
	}
	if c.Sender() == nil {
		return
	}
	if err != nil {
		c.Respond(err)
		return
	}
	c.Respond(a.s.Answer())
}
