package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/internal/ctxcheck"
)

// Request/response: a request is an ordinary message whose result (or
// dead letter) goes back to whoever asked, correlated by the message id,
// instead of to the pipeline's Deliver sink. It travels the same device
// queues and is counted like any message: its result as delivered, its
// dead letter as dead-lettered (and still reported to the spec's
// dead-letter subscribers).

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
// counted and dropped). It reports false when id is no request (the
// message goes to the sink as usual).
func (p *Pipeline) answer(id uint64, o outcome) bool {
	found, abandoned := p.reqs.Answer(id, o)
	if abandoned {
		p.acct.Abandon()
	}
	return found
}

// Request sends d into the pipeline and returns its result, or an error: a
// *RequestError (matching ErrDeadLettered) when the message was
// dead-lettered, with the dead letter's stage and reason; ctx's error when
// ctx ends first, in which case the message still ends in the account (its
// outcome is counted in PipelineStats.Abandoned and dropped, never handed
// to the Deliver sink). d.ID 0 takes the next id; an id already in flight
// as a request is refused. Requests and plain sends mix freely. A refusal
// before anything was sent (a nil or ended ctx, an id already in flight, a
// pipeline that does not answer requests) wraps ErrNotSent: that message
// was not counted.
//
// A stage's PID answers requests too: RequestFuture(pid, Data{...}) gets
// the Result, or a *RequestError, as its response.
func (p *Pipeline) Request(ctx context.Context, d Data) (Result, error) {
	if err := ctxcheck.LiveSend(ctx, "Pipeline.Request"); err != nil {
		return Result{}, err
	}
	if p.spec.Deliver.slots != nil {
		return Result{}, fmt.Errorf("%w: pipeline %q passes its results on as slots (a cluster segment): requests are not answered there", ErrNotSent, p.spec.Name)
	}
	if d.ID == 0 {
		d.ID = p.idOf(0)
	}
	c, err := p.reqs.Call(d.ID)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	if err := p.Send(ctx, d); err != nil {
		if o, ok := c.GiveUp(); ok { // dead-lettered on the way in, or answered since
			return o.result()
		}
		return Result{}, fmt.Errorf("ringactor: request %d: %w", d.ID, err)
	}
	select {
	case o := <-c.Done():
		return o.result()
	case <-ctx.Done():
		if o, ok := c.GiveUp(); ok {
			return o.result()
		}
		return Result{}, fmt.Errorf("ringactor: request %d: gave up waiting for its result (it is still counted when it ends): %w", d.ID, ctx.Err())
	}
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

// RequestAs sends v, a value of a registered type (or a Data), into the
// pipeline as a request, and returns its result decoded as a U: Request
// and As in one call.
func RequestAs[U any](ctx context.Context, p Flow, v any) (U, error) {
	d, ok := v.(Data)
	if !ok {
		d = Data{Value: v}
	}
	r, err := p.Request(ctx, d)
	if err != nil {
		var zero U
		return zero, err
	}
	return As[U](r)
}
