package ingress

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringactor/ringactor/internal/wait"
	"github.com/ringactor/ringactor/p2pqueue"
	"github.com/ringactor/ringactor/runtime/internal/account"
)

// Link is the host's end of one stage's ingress link.
type Link[M any, R fmt.Stringer] struct {
	mu       sync.Mutex // one sender writes at a time; Close waits for it
	q        *p2pqueue.Producer
	payload  int         // a slot's payload area
	refusing atomic.Bool // Refuse was called
	c        Config[M, R]
	// A chunk's messages and encodings, kept from one send to the next
	// (under mu). The messages are copied in at once and Encode handed
	// pointers to them (a pointer into the sender's batch would move the
	// batch to the heap; one message at a time, by value, costs a copy
	// per call); the encodings are not zeroed per chunk.
	ms      [chunk]M
	es      [chunk]Encoded
	errs    [chunk]error
	reasons [chunk]R
}

// Config is what a Link knows of its stage: its name and mailbox, the
// account it counts into, and the hooks through which it reads, traces
// and dead-letters messages. Set every field but SampleEvery.
type Config[M any, R fmt.Stringer] struct {
	Stage    string // the stage's name, for errors
	Capacity int    // its mailbox's slots, for errors
	// Reject refuses what does not fit at once (Backpressure Reject);
	// else Send waits for room until its ctx ends (Block).
	Reject bool
	Acct   *account.Account
	// SampleEvery traces every message whose id it divides, besides those
	// their sender asked a trace for (0: only those).
	SampleEvery uint64
	// Full and Stopped are the errors that a full mailbox under Reject
	// and an ended kernel wrap (runtime's ErrMailboxFull, ErrStageStopped).
	Full, Stopped error
	// Reasons are the dead-letter reasons of the refusals a Link makes
	// itself.
	Reasons Reasons[R]

	// Own is m's own id (0: it takes the account's next) and whether its
	// sender asked for a trace.
	Own func(m M) (id uint64, sampled bool)
	// Encode writes *m's payload into buf, a slot's payload area, and
	// returns what it wrote, or the reason and error that keep m out.
	// It reads m's own id and trace request too, as Own does, even when
	// it refuses m: the hot path makes one call per message, with m a
	// pointer to the Link's copy, valid during the call.
	Encode func(m *M, buf []byte) (Encoded, R, error)
	// Begin starts the trace of traced message m, which entered at.
	Begin func(m M, id uint64, at time.Time)
	// Dead dead-letters a counted message that the Link kept out.
	Dead func(id uint64, reason R, err error)
	// Refusal is why a Link refuses, once Refuse was called: the reason
	// and the error its senders get.
	Refusal func() (R, error)
	// Running reports whether the stage's kernel runs (it will make room
	// in a full link), and its state, for the error when it does not.
	Running func() (bool, fmt.Stringer)
}

// Encoded is a message as Encode wrote it into a slot.
type Encoded struct {
	Own     uint64 // its own id, as Own reports it
	Sampled bool   // its sender asked for a trace, as Own reports it
	Type    uint32 // its payload's type id
	N       int    // its payload's length
}

// Reasons are the dead-letter reasons of a Link's own refusals.
type Reasons[R any] struct {
	Full        R // the mailbox is full, under Reject
	Cancelled   R // the sender's ctx ended while it waited for room
	Stopped     R // the stage's kernel has ended, with its mailbox full
	QueueClosed R // the queue refused the write
}

// New is the host's end of an ingress link, writing through q.
func New[M any, R fmt.Stringer](q *p2pqueue.Producer, c Config[M, R]) *Link[M, R] {
	return &Link[M, R]{q: q, payload: q.Link().Config().PayloadCap(), c: c}
}

// Wait is how a sender waits for room in an ingress link: no spin (the
// kernel must drain first), yields (it may need this core), then sleeps
// up to 1 ms.
var Wait = wait.Policy{Yield: 16, MinSleep: 10 * time.Microsecond, MaxSleep: time.Millisecond}

// Refuse makes every later send refuse its messages (the Refusal hook
// says why), and a sender waiting for room give up.
func (l *Link[M, R]) Refuse() { l.refusing.Store(true) }

// Close closes the link after any send in progress: the stage's kernel
// sees it end once it has read what was written. Call Refuse first, so
// that no send after Close takes the closed queue's error for its own.
func (l *Link[M, R]) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.q.Close()
}
