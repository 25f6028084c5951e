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

// write writes ms into the slots Reserve gave (one each), counting them
// all into the account first (each is then written or dead-lettered),
// dead-letters those that do not encode (the first one's error goes to
// firstErr, if it has none), and commits the rest. It returns how many
// it wrote.
func (l *Link[M, R]) write(ms []M, ids []uint64, firstErr *error) (int, error) {
	l.c.Acct.Enter(len(ms))
	var now time.Time // read only for traced messages: a clock read costs as much as a copy
	written := 0
	for lo := 0; lo < len(ms); lo += chunk {
		written = l.chunk(ms[lo:min(lo+chunk, len(ms))], idsFrom(ids, lo), written, &now, firstErr)
	}
	return written, l.q.Commit(written)
}

// chunk is the most messages write handles in one pass of each kind.
const chunk = 64

// chunk writes ms (at most chunk of them, counted) from reserved slot
// written on and returns the slots written then. First the payloads,
// each into the next slot (a refused one's is the next one's); then, in
// order, each message's id (auto ids taken from the account a run at a
// time, autoIDs, not one atomic add per message), header and trace, or
// its dead letter.
func (l *Link[M, R]) chunk(ms []M, ids []uint64, written int, now *time.Time, firstErr *error) int {
	c := &l.c
	es, errs, reasons, own := &l.es, &l.errs, &l.reasons, &l.ms
	copy(own[:], ms)
	defer clear(own[:len(ms)]) // the sender's messages are not kept
	for i, w := 0, written; i < len(ms); i++ {
		buf, _ := l.q.Slot(w)
		es[i], reasons[i], errs[i] = c.Encode(&own[i], buf[:l.payload])
		if errs[i] == nil {
			w++
		}
	}
	var auto autoIDs
	for i := range ms {
		e := &es[i]
		var id uint64
		var traced bool
		if e.Own == 0 {
			if auto.left == 0 {
				auto = l.reserve(es[i+1 : len(ms)])
			}
			id, traced = auto.take(e.Sampled, c.SampleEvery)
		} else {
			id = c.Acct.ID(e.Own)
			traced = l.traced(id, e.Sampled)
		}
		if i < len(ids) {
			ids[i] = id
		}
		if err := errs[i]; err != nil {
			errs[i] = nil // not kept past the send
			l.dead(ms[i], id, traced, reasons[i], err)
			if *firstErr == nil {
				*firstErr = fmt.Errorf("ringactor: message %d: %w", id, err)
			}
			continue
		}
		h := p2pqueue.Header{ID: id, Type: e.Type}
		if traced {
			if now.IsZero() {
				*now = time.Now()
			}
			h.Flags |= p2pqueue.FlagSampled
			h.Enqueued = uint64(now.UnixNano())
			c.Begin(ms[i], id, *now)
		}
		l.q.WriteHeader(written, &h, e.N) // in order, size checked by Encode
		written++
	}
	return written
}

// autoIDs is a run of auto ids taken from the account at once: next and
// the left after it, and the next of them that the sampling ratio
// traces (sample).
type autoIDs struct{ next, left, sample uint64 }

// reserve takes the auto ids of a message that has none and of those
// encoded after it (rest) that follow it without one: up to the first
// with its own id, which moves the account's counter itself (Account.ID),
// so that no auto id after it repeats it. The ids are the ones one
// Account.ID per message would have given.
func (l *Link[M, R]) reserve(rest []Encoded) autoIDs {
	n := 1
	for i := range rest {
		if rest[i].Own != 0 {
			break
		}
		n++
	}
	a := autoIDs{next: l.c.Acct.IDs(n), left: uint64(n)}
	if e := l.c.SampleEvery; e != 0 {
		a.sample = (a.next + e - 1) / e * e // the first multiple of e from next on
	}
	return a
}

// take is the run's next id, and whether it is traced: its sender asked
// (sampled), or it falls on the sampling ratio, every'th.
func (a *autoIDs) take(sampled bool, every uint64) (uint64, bool) {
	id := a.next
	a.next++
	a.left--
	if id == a.sample && every != 0 {
		a.sample += every
		return id, true
	}
	return id, sampled
}

// DeadLetter counts ms into the account and dead-letters each with reason
// and cause, kept out of the link: messages its sender will not send
// (lanes.Spread's, without a key). ids as Send's.
func (l *Link[M, R]) DeadLetter(ms []M, ids []uint64, reason R, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refuse(ms, ids, reason, cause)
}

// refuse counts and dead-letters messages kept out before they reached
// a slot, each with reason and cause; ids, when not nil, receives their
// ids.
func (l *Link[M, R]) refuse(ms []M, ids []uint64, reason R, cause error) {
	l.c.Acct.Enter(len(ms))
	for i := range ms {
		own, sampled := l.c.Own(ms[i])
		id := l.c.Acct.ID(own)
		if i < len(ids) {
			ids[i] = id
		}
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
