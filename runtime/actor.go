package runtime

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/runtime/internal/stageactor"
)

// A stage's actor is package stageactor's: its mailbox posts data into the
// stage's ingress, its Receive answers the control messages. Here are
// runtime's messages as it reads them, and the stage's side of it.

// stageProtocol is runtime's messages to package stageactor.
var stageProtocol = stageactor.Protocol[Data]{
	Command: command,
	Value:   func(v any) Data { return Data{Value: v} },
	Stolen:  func(moved int, err error) any { return Stolen{Moved: moved, Err: err} },
	ID:      func(d Data) uint64 { return d.ID },
}

// command reads a control message sent to a stage's PID.
func command(msg any) (stageactor.Command, bool) {
	switch m := msg.(type) {
	case Activate, *Activate:
		return stageactor.Command{Op: stageactor.Activate}, true
	case Deactivate, *Deactivate:
		return stageactor.Command{Op: stageactor.Deactivate}, true
	case Stop:
		return stageactor.Command{Op: stageactor.Stop, Drain: m.Drain}, true
	case *Stop:
		return stageactor.Command{Op: stageactor.Stop, Drain: m != nil && m.Drain}, true
	case Stats, *Stats:
		return stageactor.Command{Op: stageactor.Stats}, true
	case Steal:
		return stageactor.Command{Op: stageactor.Steal, N: m.N, To: m.To}, true
	case *Steal: // as the value; a nil one is a Steal of nothing
		if m == nil {
			return stageactor.Command{Op: stageactor.Steal}, true
		}
		return stageactor.Command{Op: stageactor.Steal, N: m.N, To: m.To}, true
	case StageFaulted, *StageFaulted:
		return stageactor.Command{Op: stageactor.None}, true
	}
	return stageactor.Command{}, false
}

// The stage's side of its actor (stageactor.Stage).

func (s *stage) Post(d Data) {
	one := [1]Data{d}
	s.ingress.Send(context.Background(), one[:], nil) // errors are dead letters
}

func (s *stage) PostAll(ds []Data) { s.ingress.Send(context.Background(), ds, nil) }

// Request makes d a request from an actor (RequestFuture): the sender
// gets the result, or a *RequestError.
func (s *stage) Request(d Data, sender *actor.PID) (Data, bool) {
	r, err := s.p.requestFromActor(d, sender)
	if err != nil {
		s.p.rt.system.Root.Send(sender, &RequestError{Dead: DeadLetter{ID: r.ID, Stage: s.spec.Name, Device: s.spec.Device, Reason: ReasonBadRequest, Err: err}})
		return r, false
	}
	return r, true
}

func (s *stage) Stop(ctx context.Context, drain bool) error { return s.p.stopStage(ctx, s, drain) }
func (s *stage) Closing() bool                              { return s.p.closing.Load() }
func (s *stage) Shut()                                      { s.ingress.Refuse() }
func (s *stage) Answer() any                                { return s.stats() }
func (s *stage) Queued() int                                { return s.ingressLink.Len() }

func (s *stage) stats() StageStats {
	return StageStats{Stage: s.spec.Name, Device: s.spec.Device, Status: s.kernel.Status()}
}
