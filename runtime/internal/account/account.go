package account

import "sync/atomic"

// Account counts one pipeline's messages. Its zero value is an empty
// account.
type Account struct {
	// The senders' counters, the egress pumps' and the rest each on
	// their own cache lines (128 bytes: the adjacent-line prefetch), so
	// that a sender and a pump on two cores do not pull one line back
	// and forth on every message.
	next atomic.Uint64 // the last id handed out or reached
	sent atomic.Uint64
	_    [128 - 16]byte

	delivered atomic.Uint64
	_         [128 - 8]byte

	dead, abandoned atomic.Uint64
}

// ID is the id a message travels under: id itself, or for 0 the next
// one. Auto ids keep clear of explicit ones: an explicit id moves the
// counter up to it, so no later auto id repeats it.
func (a *Account) ID(id uint64) uint64 {
	if id == 0 {
		return a.next.Add(1)
	}
	for {
		cur := a.next.Load()
		if id <= cur || a.next.CompareAndSwap(cur, id) {
			return id
		}
	}
}

// IDs takes n auto ids at once and returns the first: n calls of ID(0)
// would have given first, first+1, ... first+n-1 (n > 0).
func (a *Account) IDs(n int) uint64 { return a.next.Add(uint64(n)) - uint64(n) + 1 }

// Enter counts n messages in: each must then end once.
func (a *Account) Enter(n int) { a.sent.Add(uint64(n)) }

// Deliver ends n messages (or copies) as delivered.
func (a *Account) Deliver(n int) { a.delivered.Add(uint64(n)) }

// DeadLetter ends one message (or copy) as dead-lettered.
func (a *Account) DeadLetter() { a.dead.Add(1) }

// Undeliver moves one end from delivered to dead-lettered: a result
// counted when it was handed to a sink that then never took it. The
// delivered count goes down first: a reading in between sees the message
// in flight for a moment, never ended twice.
func (a *Account) Undeliver() {
	a.delivered.Add(^uint64(0))
	a.dead.Add(1)
}

// Abandon counts the outcome of a request whose caller had given up: it
// is among the delivered or dead-lettered already, and this says so.
func (a *Account) Abandon() { a.abandoned.Add(1) }

// Totals is a reading of the account: Sent + Copied = Delivered +
// DeadLettered + InFlight, exactly once nothing moves.
type Totals struct {
	Sent, Copied, Delivered, DeadLettered, InFlight uint64
	// Abandoned counts the outcomes (among Delivered and DeadLettered) of
	// requests whose caller had given up.
	Abandoned uint64
}

// Read reads the account. copied, when not nil, reads the copies made so
// far; it is read after the ends and before Sent, so a message that ended
// is never missing from Sent, and InFlight never reads below 0.
func (a *Account) Read(copied func() uint64) Totals {
	t := Totals{Delivered: a.delivered.Load(), DeadLettered: a.dead.Load(), Abandoned: a.abandoned.Load()}
	if copied != nil {
		t.Copied = copied()
	}
	t.Sent = a.sent.Load() // last: sent never trails what it accounts for
	in, out := t.Sent+t.Copied, t.Delivered+t.DeadLettered
	t.InFlight = in - min(in, out)
	return t
}

// Copies is the copies stages made of the messages they passed on: stage
// i (of n) sent each result to fanout(i) next stages, fanout(i)-1 of them
// copies. processed(i), what stage i has handled, is read only for a stage
// that copies.
func Copies(n int, fanout func(i int) int, processed func(i int) uint64) uint64 {
	var c uint64
	for i := range n {
		if k := fanout(i); k > 1 {
			c += processed(i) * uint64(k-1)
		}
	}
	return c
}
