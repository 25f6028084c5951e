package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	"github.com/ringactor/ringactor/runtime/internal/msgtype"
)

// ErrDeadLettered: a request's message ended as a dead letter; the error is
// a *RequestError carrying it.
var ErrDeadLettered = errors.New("ringactor: message dead-lettered")

// RequestError answers a request whose message was dead-lettered. It
// matches ErrDeadLettered and unwraps to the dead letter's error.
type RequestError struct{ Dead DeadLetter }

func (e *RequestError) Error() string {
	return fmt.Sprintf("ringactor: request %d dead-lettered at stage %q: %s: %v", e.Dead.ID, e.Dead.Stage, e.Dead.Reason, e.Dead.Err)
}

// Is reports ErrDeadLettered.
func (e *RequestError) Is(target error) bool { return target == ErrDeadLettered }

// Unwrap is the dead letter's error.
func (e *RequestError) Unwrap() error { return e.Dead.Err }

// outcome is how a request's message ended: a result, or a dead letter.
type outcome struct {
	r    Result
	dead *DeadLetter
}

// answer hands a request's outcome to its waiter (an abandoned one's is
// counted and dropped), and reports false when id is no request.
func (p *Pipeline) answer(id uint64, o outcome) bool { return p.reqs.Settle(id, o, p.acct.Abandon) }

// Request sends d into the pipeline and returns its result, or an error: a
// *RequestError (matching ErrDeadLettered) when the message was
// dead-lettered; ctx's error when ctx ends first (the message still ends
// in the account: its outcome is counted in PipelineStats.Abandoned and
// dropped, never handed to the Deliver sink). Where the graph copies it
// (RouteAll), the first copy to end answers, whatever its type; the others
// go to the Deliver sink. d.ID 0 takes the next id; an id in flight as a
// request is refused. A refusal before anything was sent (a nil or ended
// ctx, an id in flight, a pipeline that does not answer requests) wraps
// ErrNotSent: that message was not counted. A stage's PID answers
// requests too: RequestFuture(pid, Data{...}) gets the Result, or a
// *RequestError, as its response.
func (p *Pipeline) Request(ctx context.Context, d Data) (Result, error) {
	return p.request(ctx, d, nil)
}

// request is Request answered by the first outcome accept takes (nil: any).
func (p *Pipeline) request(ctx context.Context, d Data, accept func(outcome) bool) (Result, error) {
	if err := ctxcheck.LiveSend(ctx, "Pipeline.Request"); err != nil {
		return Result{}, err
	}
	if p.spec.Deliver.slots != nil {
		return Result{}, fmt.Errorf("%w: pipeline %q passes its results on as slots (a cluster segment): requests are not answered there", ErrNotSent, p.spec.Name)
	}
	if d.ID == 0 {
		d.ID = p.idOf(0)
	}
	o, err := p.reqs.Do(ctx, d.ID, accept, ErrNotSent, func() error { return p.Send(ctx, d) })
	if err != nil {
		return Result{}, err
	}
	return o.result()
}

func (o outcome) result() (Result, error) {
	if o.dead != nil {
		return Result{}, &RequestError{Dead: *o.dead}
	}
	return o.r, nil
}

// requestFromActor registers an actor's request (a Data sent to a stage's
// PID with a sender) and returns the data with its id set.
func (p *Pipeline) requestFromActor(d Data, sender *actor.PID) (Data, error) {
	if d.ID == 0 {
		d.ID = p.idOf(0)
	}
	return d, p.reqs.Add(d.ID, func(o outcome) {
		if o.dead != nil {
			p.rt.system.Root.Send(sender, &RequestError{Dead: *o.dead})
		} else {
			p.rt.system.Root.Send(sender, o.r)
		}
	})
}

// RequestAs sends v, a value of a registered type (or a Data), into f as
// a request and returns its result decoded as a U: Request and As in one.
// A *Pipeline answers with the first result of type U (or dead letter):
// where the graph copies the message to exits of several types, the other
// types' copies go to the Deliver sink, and should no U come, the error
// at ctx's end names the types that did; one none of whose exits gives a
// U refuses it (ErrNotSent, ErrWrongType). Other flows answer as Request.
func RequestAs[U any](ctx context.Context, f Flow, v any) (u U, err error) {
	d, ok := v.(Data)
	if !ok {
		d = Data{Value: v}
	}
	var r Result
	if p, ok := f.(*Pipeline); !ok {
		r, err = f.Request(ctx, d)
	} else if w, werr := msgtype.WantFor[U](p.exitTypes()); werr != nil {
		return u, fmt.Errorf("%w: pipeline %q: %w", ErrNotSent, p.spec.Name, werr)
	} else if r, err = p.request(ctx, d, func(o outcome) bool { return o.dead != nil || w.Takes(o.r.Type) }); err != nil {
		err = w.Note(err)
	}
	if err != nil {
		return u, err
	}
	return As[U](r)
}

// exitTypes are the types of the results that leave p, an exit's each.
func (p *Pipeline) exitTypes() (ts []uint32) {
	for _, s := range p.exits {
		ts = append(ts, p.gives[s.idx])
	}
	return ts
}
