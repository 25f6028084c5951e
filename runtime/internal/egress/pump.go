package egress

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/internal/gate"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	"github.com/ringactor/ringactor/runtime/internal/account"
)

// Batch is the most results a pump takes at a time.
const Batch = 64

// Why says why a result at an exit ended dead (with an error; without
// one it means nothing).
type Why uint8

const (
	Undecodable Why = iota // its payload did not decode
	Panicked               // the sink's Func panicked on it
	NotRead                // a Chan sink had not taken it by the end of Close
)

// Host is what a Pump asks of the pipeline it serves.
type Host[R any] interface {
	// Result writes into *r (zero, or r's last result) exit stage's
	// result for message h, from its decoded payload: floats for a float32
	// vector, else bytes (both the batch's allocation, or for a
	// Sink.Batch views of the slots).
	Result(r *R, stage string, h *p2pqueue.Header, floats []float32, bytes []byte)
	// Answer hands r to the request waiting on message id, and reports
	// false when there is none (r goes to the sink).
	Answer(id uint64, r R) bool
	// Dead tells of message id, from stage id from, ended dead (the
	// account has counted it), with why and err.
	Dead(from uint32, id uint64, why Why, err error)
	// Traced ends sampled message id's trace: delivered at at.
	Traced(from uint32, id uint64, at time.Time)
}

// Exit is an exit stage's end of its egress link.
type Exit struct {
	From  uint32 // the stage's id, as its kernel writes Origin
	Stage string // its name, for a Result
	Link  *p2pqueue.Consumer

	// The headers, payloads and read errors of the batch its pump is at,
	// kept from one batch to the next (Slots is handed them), off the
	// pump's stack; an error is cleared once it is told.
	hs   [Batch]p2pqueue.Header
	ps   [Batch][]byte
	errs [Batch]error
	lent [Batch]uint8 // a Sink.Batch call's results: each one's index in hs
}

// Pump delivers a pipeline's results: Start starts its pump per exit.
// Set its fields before Start and leave them.
type Pump[R any] struct {
	// Name is the pipeline's, for errors.
	Name string
	Sink Sink[R]
	// Slots, when set, takes each batch instead of Sink, undecoded and in
	// place (the payloads are valid until it returns); the messages count
	// as delivered here, and it must end each one.
	Slots func(ctx context.Context, hs []p2pqueue.Header, payloads [][]byte)
	Host  Host[R]
	// Pending, when set, reports whether any request waits for a
	// result: asked once a batch, after the batch was peeked (a request
	// is registered before its message is sent), and when false no
	// result of the batch is offered to Host.Answer.
	Pending func() bool
	Acct    *account.Account
	// Send is the actor system's, for a PID sink.
	Send func(pid *actor.PID, msg any)
	// Ctx's end stops the pumps: each sweeps what is in its link and
	// ends.
	Ctx context.Context
	// Closing is closed when the pipeline's Close begins: a full Chan is
	// waited for then Sink.CloseWait at most.
	Closing <-chan struct{}
	// Gate, when not nil, is passed before each batch (a test's stall).
	Gate *gate.Gate
	// ErrNotRead is wrapped by the error of a result a Chan did not take.
	ErrNotRead error

	gone atomic.Bool // a Chan took nothing for CloseWait during Close
}

// Start starts a pump per exit; done is closed when all have ended (the
// links closed and drained, or Ctx ended and they were swept).
func (p *Pump[R]) Start(exits []Exit, done chan<- struct{}) {
	var wg sync.WaitGroup
	for i := range exits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.run(&exits[i])
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
}

// run delivers e's results until its link is closed and drained.
func (p *Pump[R]) run(e *Exit) {
	rs := make([]R, Batch) // a batch's results, made once per exit
	for {
		p.Gate.Pass()
		n, err := e.Link.PeekWait(p.Ctx, Batch)
		if n > 0 && !p.batch(e, n, rs) {
			return
		}
		if err != nil {
			if p.Ctx.Err() != nil && !errors.Is(err, p2pqueue.ErrClosed) {
				p.sweep(e, rs)
			}
			return
		}
	}
}

// sweep delivers what is left in e's link when the pump is told to stop:
// results that already passed their last stage are not lost.
func (p *Pump[R]) sweep(e *Exit, rs []R) {
	for {
		n, err := e.Link.Peek(Batch)
		if err != nil || n == 0 || !p.batch(e, n, rs) {
			return
		}
	}
}

// batch delivers the n messages peeked at e's link, decoded straight
// from their slots into one allocation (to a Sink.Batch, viewing the
// slots), as results built in rs, and releases them. It reports false if
// the link is corrupt.
func (p *Pump[R]) batch(e *Exit, n int, rs []R) bool {
	hs, ps := &e.hs, &e.ps
	var (
		total int // floats
		typed int // bytes of typed results
	)
	for i := range n {
		ps[i], e.errs[i] = e.Link.ReadTo(i, &hs[i])
		if hs[i].Type == kernels.TypeFloats {
			total += len(ps[i]) / 4
		} else {
			typed += len(ps[i])
		}
	}
	if p.Slots != nil {
		return p.forward(e, n)
	}
	if p.Sink.Batch != nil {
		return p.lend(e, n, rs, total, typed)
	}
	d := decoder{floats: make([]float32, total), ask: p.Pending == nil || p.Pending()}
	if typed > 0 {
		d.bytes = make([]byte, typed)
	}
	for i := 0; i < n; {
		i = p.hand(e, &d, rs, i, n)
	}
	clear(rs[:n])
	return e.Link.Release(n) == nil
}

// decoder is what is left of a batch's allocations for its results,
// the time its sampled results were delivered (read once, for the
// first), and whether a request may wait for one of them.
type decoder struct {
	floats []float32
	bytes  []byte
	now    time.Time
	ask    bool // offer each result to Host.Answer first (Pump.Pending)
}

// decode is message i's payload, copied out of its slot into d's
// allocations: floats for a float vector, else bytes.
func (d *decoder) decode(e *Exit, i int) (v []float32, b []byte, err error) {
	if e.errs[i] != nil {
		err, e.errs[i] = e.errs[i], nil
		return nil, nil, err
	}
	if e.hs[i].Type == kernels.TypeFloats {
		k := len(e.ps[i]) / 4
		v, err = kernels.DecodeFloats(d.floats[:k:k], e.ps[i])
		d.floats = d.floats[k:]
		return v, nil, err
	}
	k := len(e.ps[i])
	b = d.bytes[:k:k]
	copy(b, e.ps[i])
	d.bytes = d.bytes[k:]
	return nil, b, nil
}

// hand delivers messages from on, up to n, of e's peeked batch, each
// counted as delivered before it is handed over (so that whoever
// receives it finds it counted; one the sink never takes moves to the
// dead), and returns where it stopped: n, or just past a result whose
// Sink.Func panicked, which is dead-lettered (Panicked). One recovery
// serves the whole batch, not one per result.
func (p *Pump[R]) hand(e *Exit, d *decoder, rs []R, from, n int) (next int) {
	i, inFunc := from, false
	defer func() {
		if !inFunc { // no panic, or not the Func's: it goes on up
			return
		}
		err := panicError("Sink.Func", e.hs[i].ID, recover(), debug.Stack())
		p.Acct.Undeliver()
		p.Host.Dead(e.From, e.hs[i].ID, Panicked, fmt.Errorf("pipeline %q: %w", p.Name, err))
		next = i + 1
	}()
	f := p.Sink.Func
	for ; i < n; i++ {
		h := &e.hs[i]
		v, b, err := d.decode(e, i)
		if err != nil {
			p.Acct.DeadLetter()
			p.Host.Dead(e.From, h.ID, Undecodable, err)
			continue
		}
		p.Acct.Deliver(1)
		r := &rs[i]
		p.Host.Result(r, e.Stage, h, v, b)
		switch {
		case d.ask && p.Host.Answer(h.ID, *r):
		case f != nil:
			inFunc = true
			f(*r)
			inFunc = false
		default:
			if !p.deliver(*r) {
				p.Acct.Undeliver()
				p.Host.Dead(e.From, h.ID, NotRead, p.notRead())
				continue
			}
		}
		if h.Flags&p2pqueue.FlagSampled != 0 {
			if d.now.IsZero() {
				d.now = time.Now()
			}
			p.Host.Traced(e.From, h.ID, d.now)
		}
	}
	return n
}

// forward hands the good messages of a peeked batch to Slots, in place,
// then releases them.
func (p *Pump[R]) forward(e *Exit, n int) bool {
	hs, ps, errs := e.hs[:n], e.ps[:n], e.errs[:n]
	k := 0
	for i := range hs {
		if err := errs[i]; err != nil {
			errs[i] = nil
			p.Acct.DeadLetter()
			p.Host.Dead(e.From, hs[i].ID, Undecodable, err)
			continue
		}
		hs[k], ps[k] = hs[i], ps[i]
		k++
	}
	p.Acct.Deliver(k)
	p.Slots(p.Ctx, hs[:k], ps[:k])
	return e.Link.Release(len(hs)) == nil
}
