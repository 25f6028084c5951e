package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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

// waiter is who gets a request's outcome: a Request call's channel, or an
// actor that asked with RequestFuture (pid). An abandoned waiter's caller
// gave up (its ctx ended): the outcome is counted and dropped.
type waiter struct {
	ch        chan outcome
	pid       *actor.PID
	abandoned bool
}

// requests are a pipeline's requests in flight, by message id. The map is
// read on every result only while it is not empty (n), so pipelines
// without requests pay one atomic load per result.
type requests struct {
	n  atomic.Int64
	mu sync.Mutex
	m  map[uint64]*waiter
}

func (q *requests) add(id uint64, w *waiter) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = map[uint64]*waiter{}
	}
	if _, dup := q.m[id]; dup {
		return fmt.Errorf("ringactor: a request with message id %d is already in flight; give each request its own id, or 0 for the next", id)
	}
	q.m[id] = w
	q.n.Add(1)
	return nil
}

// take removes and returns id's waiter, if any.
func (q *requests) take(id uint64) (*waiter, bool) {
	if q.n.Load() == 0 {
		return nil, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	w, ok := q.m[id]
	if ok {
		delete(q.m, id)
		q.n.Add(-1)
	}
	return w, ok
}

// abandon marks id's waiter as given up on: its outcome, when it comes, is
// counted and dropped. It reports false if the outcome came first.
func (q *requests) abandon(id uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	w, ok := q.m[id]
	if ok {
		w.abandoned = true
	}
	return ok
}

// answer hands a request's outcome to its waiter. It reports false when
// id is no request (the message goes to the sink as usual).
func (p *Pipeline) answer(id uint64, o outcome) bool {
	w, ok := p.reqs.take(id)
	if !ok {
		return false
	}
	switch {
	case w.abandoned:
		p.acct.Abandon()
	case w.ch != nil:
		w.ch <- o // buffered: never blocks the pump
	case w.pid != nil:
		if o.dead != nil {
			p.rt.system.Root.Send(w.pid, &RequestError{Dead: *o.dead})
		} else {
			p.rt.system.Root.Send(w.pid, o.r)
		}
	}
	return true
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
	w := &waiter{ch: make(chan outcome, 1)}
	if err := p.reqs.add(d.ID, w); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	if err := p.Send(ctx, d); err != nil {
		select {
		case o := <-w.ch: // dead-lettered on the way in
			return o.result()
		default:
		}
		if !p.reqs.abandon(d.ID) { // answered since
			return (<-w.ch).result()
		}
		return Result{}, fmt.Errorf("ringactor: request %d: %w", d.ID, err)
	}
	select {
	case o := <-w.ch:
		return o.result()
	case <-ctx.Done():
		if !p.reqs.abandon(d.ID) {
			return (<-w.ch).result()
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
	return d, p.reqs.add(d.ID, &waiter{pid: sender})
}

// RequestAs sends v, a value of a registered type (or a Data), into the
// pipeline as a request, and returns its result decoded as a U: Request
// and As in one call.
func RequestAs[U any](ctx context.Context, p *Pipeline, v any) (U, error) {
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
