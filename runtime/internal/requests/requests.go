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
	abandoned bool
}

// Add registers request id, whose outcome goes to to (called once, by
// Answer, outside the table's lock; it must not block). An id already in
// flight is refused.
func (t *Table[O]) Add(id uint64, to func(O)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[uint64]*waiter[O]{}
	}
	if _, dup := t.m[id]; dup {
		return fmt.Errorf("%w: a request with message id %d is already in flight; give each request its own id, or 0 for the next", ErrInFlight, id)
	}
	t.m[id] = &waiter[O]{to: to}
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
	w, ok := t.take(id)
	if !ok {
		return false, false
	}
	if w.abandoned {
		return true, true
	}
	w.to(o)
	return true, false
}

// take removes and returns id's waiter, if any.
func (t *Table[O]) take(id uint64) (*waiter[O], bool) {
	if t.n.Load() == 0 {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.m[id]
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
func (t *Table[O]) Call(id uint64) (*Call[O], error) {
	c := &Call[O]{t: t, id: id, ch: make(chan O, 1)}
	if err := t.Add(id, func(o O) { c.ch <- o }); err != nil { // buffered: Answer never blocks
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
	c, err := t.Call(id)
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
