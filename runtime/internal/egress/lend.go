package egress

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
)

// lend hands the n messages peeked at e's link to Sink.Batch in one
// call, as results in rs whose payloads view their slots (no copy, no
// allocation), and releases the slots once it returns: what Batch was
// given is valid only during the call. A result a request waits for
// (Pump.Pending, Host.Answer) is decoded into its own memory (while any
// request waits, the whole batch is, into one allocation of total floats
// and typed bytes) and goes to the request instead; an undecodable one is
// dead-lettered. The results
// are counted as delivered before the call; if Batch panics, every one
// of them is dead-lettered (Panicked): which it took is not known. The
// sampled ones' traces end when it returns. It reports false if the
// link is corrupt.
func (p *Pump[R]) lend(e *Exit, n int, rs []R, total, typed int) bool {
	var d decoder // a request waits: the batch's own memory
	if ask := p.Pending == nil || p.Pending(); ask {
		d = decoder{floats: make([]float32, total), bytes: make([]byte, typed), ask: true}
	}
	k, counted := 0, 0 // results in rs, and of those counted already
	for i := range n {
		h := &e.hs[i]
		if err := e.errs[i]; err != nil {
			e.errs[i] = nil
			p.Acct.DeadLetter()
			p.Host.Dead(e.From, h.ID, Undecodable, err)
			continue
		}
		if d.ask {
			switch p.answer(e, i, &d, &rs[k]) {
			case answered:
				continue
			case offered: // built in rs[k] and counted: it goes with the batch
				e.lent[k] = uint8(i)
				k++
				counted++
				continue
			}
		}
		var v []float32
		var b []byte
		if h.Type == kernels.TypeFloats {
			var err error
			if v, err = kernels.ViewFloats(e.ps[i], nil); err != nil {
				p.Acct.DeadLetter()
				p.Host.Dead(e.From, h.ID, Undecodable, err)
				continue
			}
		} else {
			b = e.ps[i][:len(e.ps[i]):len(e.ps[i])]
		}
		p.Host.Result(&rs[k], e.Stage, h, v, b)
		e.lent[k] = uint8(i)
		k++
	}
	if k > 0 {
		p.Acct.Deliver(k - counted)
		p.call(e, rs[:k])
		clear(rs[:k]) // the slots' views are not kept past the call
	}
	return e.Link.Release(n) == nil
}

// An offer is what became of a result offered to a request.
type offer uint8

const (
	undecoded offer = iota // it did not decode: not offered, nor counted
	answered               // a request took it
	offered                // no request took it: it is built and counted
)

// answer offers peeked message i to the request waiting on it, decoded
// into d's memory (a request's result is kept) and built in r, counted
// as delivered first (and so left, when no request takes it).
func (p *Pump[R]) answer(e *Exit, i int, d *decoder, r *R) offer {
	h := &e.hs[i]
	v, b, err := d.decode(e, i)
	if err != nil {
		return undecoded // lend finds it undecodable too
	}
	p.Acct.Deliver(1)
	p.Host.Result(r, e.Stage, h, v, b)
	if !p.Host.Answer(h.ID, *r) {
		return offered
	}
	if h.Flags&p2pqueue.FlagSampled != 0 {
		p.Host.Traced(e.From, h.ID, time.Now())
	}
	return answered
}

// call hands rs, the lent results of e's batch, to Sink.Batch, then ends
// their traces; a panic in it dead-letters them all instead.
func (p *Pump[R]) call(e *Exit, rs []R) {
	panicked := true
	defer func() {
		if !panicked {
			return
		}
		v, stack := recover(), debug.Stack()
		for j := range rs {
			id := e.hs[e.lent[j]].ID
			p.Acct.Undeliver()
			p.Host.Dead(e.From, id, Panicked, fmt.Errorf("pipeline %q: %w", p.Name, panicError("Sink.Batch", id, v, stack)))
		}
	}()
	p.Sink.Batch(rs)
	panicked = false
	var now time.Time
	for j := range rs {
		if h := &e.hs[e.lent[j]]; h.Flags&p2pqueue.FlagSampled != 0 {
			if now.IsZero() {
				now = time.Now()
			}
			p.Host.Traced(e.From, h.ID, now)
		}
	}
}
