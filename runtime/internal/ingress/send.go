package ingress

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringactor/ringactor/internal/wait"
	"github.com/ringactor/ringactor/p2pqueue"
)

// Send writes ms into the link in batches, waiting while it is full
// (unless Reject) until ctx ends. Each message ends in the account:
// sent, and then delivered or dead-lettered. It returns how many it
// wrote into the link (the rest were dead-lettered, and the error says
// why); ids, when not nil, receives each message's id, for as many of ms
// as it has room for.
func (l *Link[M, R]) Send(ctx context.Context, ms []M, ids []uint64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.c
	done, taken := 0, 0 // messages handled, and of those written
	w := wait.Waiter{P: Wait}
	defer w.Stop()
	var firstErr error
	for done < len(ms) {
		if l.refusing.Load() {
			reason, cause := c.Refusal()
			l.refuse(ms[done:], idsFrom(ids, done), reason, cause)
			return taken, fmt.Errorf("%w: %d of %d messages taken by stage %q, the rest dead-lettered (%s)", cause, taken, len(ms), c.Stage, reason)
		}
		k, err := l.q.Reserve(len(ms) - done)
		if errors.Is(err, p2pqueue.ErrFull) && c.Reject {
			cause := fmt.Errorf("%w: stage %q holds %d messages", c.Full, c.Stage, c.Capacity)
			l.refuse(ms[done:], idsFrom(ids, done), c.Reasons.Full, cause)
			return taken, fmt.Errorf("%w: %d of %d taken, the rest dead-lettered; send slower, raise its Capacity, or build it with Backpressure: Block",
				cause, taken, len(ms))
		}
		if errors.Is(err, p2pqueue.ErrFull) {
			running, state := c.Running()
			if running {
				if werr := w.Wait(ctx); werr != nil {
					l.refuse(ms[done:], idsFrom(ids, done), c.Reasons.Cancelled, werr)
					return taken, fmt.Errorf("ringactor: send to stage %q: %d of %d taken, the rest dead-lettered: %w", c.Stage, taken, len(ms), werr)
				}
				continue
			}
			cause := fmt.Errorf("%w: the kernel of stage %q has ended (%s)", c.Stopped, c.Stage, state)
			l.refuse(ms[done:], idsFrom(ids, done), c.Reasons.Stopped, cause)
			return taken, fmt.Errorf("%w: %d of %d taken", cause, taken, len(ms))
		}
		if err != nil {
			cause := fmt.Errorf("ringactor: stage %q: %w", c.Stage, err)
			l.refuse(ms[done:], idsFrom(ids, done), c.Reasons.QueueClosed, cause)
			return taken, cause
		}
		w.Reset()
		written, err := l.write(ms[done:done+k], idsFrom(ids, done), &firstErr)
		if err != nil {
			return taken, err
		}
		done += k
		taken += written
	}
	// An oversize message was dead-lettered and the rest still sent: the
	// batch is all accounted for, and the caller hears about the first.
	return taken, firstErr
}

// write writes ms into the slots Reserve gave (one each), counting each
// into the account as it is encoded, dead-letters those that do not
// encode (the first one's error goes to firstErr, if it has none), and
// commits the rest. It returns how many it wrote.
func (l *Link[M, R]) write(ms []M, ids []uint64, firstErr *error) (int, error) {
	c := &l.c
	var now time.Time // read only for traced messages: a clock read costs as much as a copy
	written := 0
	for i := range ms {
		buf, _ := l.q.Slot(written)
		e, reason, err := c.Encode(ms[i], buf[:l.payload])
		id := c.Acct.ID(e.Own)
		if i < len(ids) {
			ids[i] = id
		}
		c.Acct.Enter(1)
		if err != nil {
			l.dead(ms[i], id, e.Sampled, reason, err)
			if *firstErr == nil {
				*firstErr = fmt.Errorf("ringactor: message %d: %w", id, err)
			}
			continue
		}
		h := p2pqueue.Header{ID: id, Type: e.Type}
		if l.traced(id, e.Sampled) {
			if now.IsZero() {
				now = time.Now()
			}
			h.Flags |= p2pqueue.FlagSampled
			h.Enqueued = uint64(now.UnixNano())
			c.Begin(ms[i], id, now)
		}
		l.q.WriteHeader(written, &h, e.N) // in order, size checked by Encode
		written++
	}
	return written, l.q.Commit(written)
}

// refuse counts and dead-letters messages kept out before they reached
// a slot, each with reason and cause; ids, when not nil, receives their
// ids.
func (l *Link[M, R]) refuse(ms []M, ids []uint64, reason R, cause error) {
	for i := range ms {
		own, sampled := l.c.Own(ms[i])
		id := l.c.Acct.ID(own)
		if i < len(ids) {
			ids[i] = id
		}
		l.c.Acct.Enter(1)
		l.dead(ms[i], id, sampled, reason, cause)
	}
}

// dead dead-letters counted message m, kept out of the link. A traced
// one gets its trace: begun and, with the dead letter, ended at once.
func (l *Link[M, R]) dead(m M, id uint64, sampled bool, reason R, err error) {
	if l.traced(id, sampled) {
		l.c.Begin(m, id, time.Now())
	}
	l.c.Dead(id, reason, err)
}

// traced reports whether message id is traced: its sender asked, or its
// id falls on the sampling ratio.
func (l *Link[M, R]) traced(id uint64, sampled bool) bool {
	return sampled || (l.c.SampleEvery != 0 && id%l.c.SampleEvery == 0)
}

// idsFrom is ids from i on, or nil.
func idsFrom(ids []uint64, i int) []uint64 {
	if i >= len(ids) {
		return nil
	}
	return ids[i:]
}
