package requests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Table holds the requests in flight, by message id; O is an outcome.
// Its zero value is an empty table.
type Table[O any] struct {
	n  atomic.Int64 // len(m), read without the lock
	mu sync.Mutex
	m  map[uint64]*waiter[O]
}

// waiter is who gets a request's outcome. An abandoned waiter's caller
// gave up: the outcome is counted and dropped.
type waiter[O any] struct {
	to        func(O)
	accept    func(O) bool // nil: every outcome
	abandoned bool
}

// Add registers request id, whose outcome goes to to (called once, by
// Answer, outside the table's lock; it must not block). An id already in
// flight is refused.
func (t *Table[O]) Add(id uint64, to func(O)) error { return t.AddIf(id, nil, to) }

// AddIf is Add for a waiter that takes only the outcomes accept approves
// (nil: all). An outcome it refuses leaves the request in flight: Answer
// reports it not found, and the outcome goes its usual way (a request of
// one type in a graph that copies to exits of several), unless its caller
// gave up: then the first outcome ends it either way, so no entry waits
// for a type that may never come. accept is called
// under the table's lock: it must be quick and must not call the table.
func (t *Table[O]) AddIf(id uint64, accept func(O) bool, to func(O)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[uint64]*waiter[O]{}
	}
	if _, dup := t.m[id]; dup {
		return fmt.Errorf("%w: a request with message id %d is already in flight; give each request its own id, or 0 for the next", ErrInFlight, id)
	}
	t.m[id] = &waiter[O]{to: to, accept: accept}
	t.n.Add(1)
	return nil
}

// Pending reports whether any request is in flight: a caller that must
// build an outcome to Answer asks first.
func (t *Table[O]) Pending() bool { return t.n.Load() > 0 }

// Answer ends request id with outcome o: it hands o to the waiter, or,
// when its caller gave up, drops it (abandoned: the caller counts it).
// It reports found false when id is no request (the message goes its
// usual way, to the sink).
func (t *Table[O]) Answer(id uint64, o O) (found, abandoned bool) {
	w, ok := t.take(id, o)
	if !ok {
		return false, false
	}
	if w.abandoned {
		return true, true
	}
	w.to(o)
	return true, false
}

// Settle is Answer for a caller that counts an abandoned outcome with
// abandoned; it reports whether id was a request.
func (t *Table[O]) Settle(id uint64, o O, abandoned func()) bool {
	found, ab := t.Answer(id, o)
	if ab {
		abandoned()
	}
	return found
}

// take removes and returns id's waiter, if any and it accepts o.
func (t *Table[O]) take(id uint64, o O) (*waiter[O], bool) {
	if t.n.Load() == 0 {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.m[id]
	if ok && w.accept != nil && !w.accept(o) {
		if w.abandoned { // nobody waits for a later copy: forget id, o and the rest go their usual way
			delete(t.m, id)
			t.n.Add(-1)
		}
		return nil, false
	}
	if ok {
		delete(t.m, id)
		t.n.Add(-1)
	}
	return w, ok
}

// abandon marks id's waiter as given up on: its outcome, when it comes, is
// counted and dropped. It reports false if the outcome came first (Answer
// took the waiter).
func (t *Table[O]) abandon(id uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.m[id]
	if ok {
		w.abandoned = true
	}
	return ok
}

// Call is a requester's end of one request: the outcome arrives on Done.
type Call[O any] struct {
	t  *Table[O]
	id uint64
	ch chan O
}

// Call registers request id for a caller that waits for its outcome on
// the returned Call's Done. An id already in flight is refused.
func (t *Table[O]) Call(id uint64) (*Call[O], error) { return t.CallIf(id, nil) }

// CallIf is Call for a caller that takes only the outcomes accept
// approves (AddIf).
func (t *Table[O]) CallIf(id uint64, accept func(O) bool) (*Call[O], error) {
	c := &Call[O]{t: t, id: id, ch: make(chan O, 1)}
	if err := t.AddIf(id, accept, func(o O) { c.ch <- o }); err != nil { // buffered: Answer never blocks
		return nil, err
	}
	return c, nil
}

// Done receives the request's outcome, once.
func (c *Call[O]) Done() <-chan O { return c.ch }

// GiveUp is the caller giving up (its ctx ended, or its send failed). If
// the outcome has come, or Answer has taken the waiter and is handing it
// over, GiveUp returns it (ok true) and the caller has its answer after
// all; otherwise the request is abandoned (ok false): its outcome, when
// it comes, is counted and dropped.
func (c *Call[O]) GiveUp() (o O, ok bool) {
	if c.t.abandon(c.id) {
		return o, false
	}
	return <-c.ch, true
}

// ErrInFlight: a request's id is already in flight as a request (Add and
// Await refuse it; nothing was sent).
var ErrInFlight = errors.New("ringactor: request id in flight")

// Await is a requester's whole round: it registers request id, sends it
// (send), and waits for its outcome until ctx ends. It returns the
// outcome (ok true), or why there is none: an error wrapping ErrInFlight
// when id is in flight already (send was not called), send's error when
// it failed and no outcome had come, or ctx's error when ctx ended first
// (the request is abandoned: its outcome is counted and dropped when it
// comes). The caller checks ctx before Await: a send refused before it
// counted anything leaves no outcome to come.
func (t *Table[O]) Await(ctx context.Context, id uint64, send func() error) (o O, ok bool, err error) {
	return t.AwaitIf(ctx, id, nil, send)
}

// AwaitIf is Await for a requester that takes only the outcomes accept
// approves (CallIf; nil: all).
func (t *Table[O]) AwaitIf(ctx context.Context, id uint64, accept func(O) bool, send func() error) (o O, ok bool, err error) {
	c, err := t.CallIf(id, accept)
	if err != nil {
		return o, false, err
	}
	if err := send(); err != nil {
		if o, ok := c.GiveUp(); ok { // dead-lettered on the way in, or answered since
			return o, true, nil
		}
		return o, false, err
	}
	select {
	case o := <-c.Done():
		return o, true, nil
	case <-ctx.Done():
		if o, ok := c.GiveUp(); ok {
			return o, true, nil
		}
		return o, false, ctx.Err()
	}
}

// Do is AwaitIf with a pipeline's errors, each naming the request: an id
// in flight wraps notSent (nothing was sent), then send's error or ctx's.
func (t *Table[O]) Do(ctx context.Context, id uint64, accept func(O) bool, notSent error, send func() error) (O, error) {
	o, ok, err := t.AwaitIf(ctx, id, accept, send)
	switch {
	case ok:
		return o, nil
	case errors.Is(err, ErrInFlight):
		return o, fmt.Errorf("%w: %w", notSent, err)
	case err == ctx.Err():
		return o, fmt.Errorf("ringactor: request %d: gave up waiting for its result (it is still counted when it ends): %w", id, err)
	}
	return o, fmt.Errorf("ringactor: request %d: %w", id, err)
}
