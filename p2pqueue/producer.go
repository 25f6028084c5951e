package p2pqueue

import (
	"context"
	"fmt"
	"time"
)

// Producer is the one writer of a link: it owns tail. It is not safe for
// concurrent use; one goroutine (or one kernel) produces.
type Producer struct {
	l         *Link
	tail      uint64 // our own index: the published value
	headCache uint64 // last head we observed; re-read only when we look full
	reserved  int
	closed    bool
	w         waiter

	bytesIn, fullWaits, publishes uint64
}

// Link returns the link this producer writes.
func (p *Producer) Link() *Link { return p.l }

// free returns the number of free slots, re-reading head only when the
// cached value says the queue is full (each re-read may cross PCIe).
func (p *Producer) free(want int) (int, error) {
	capacity := uint64(p.l.cfg.Capacity)
	used := p.tail - p.headCache
	if capacity-used >= uint64(want) {
		return int(capacity - used), nil
	}
	p.headCache = observe(p.l.head)
	used = p.tail - p.headCache
	if used > capacity {
		return 0, fmt.Errorf("%w: head %d is ahead of tail %d or more than %d slots behind it", ErrCorrupt, p.headCache, p.tail, capacity)
	}
	return int(capacity - used), nil
}

// Reserve claims up to n free slots for writing and returns how many it got:
// 0 with ErrFull when none is free. A new Reserve drops any earlier
// reservation that was not committed.
func (p *Producer) Reserve(n int) (int, error) {
	p.reserved = 0
	if p.closed {
		return 0, fmt.Errorf("%w: link %d: no enqueue after Close", ErrClosed, p.l.cfg.LinkID)
	}
	if n <= 0 {
		return 0, nil
	}
	f, err := p.free(n)
	if err != nil {
		return 0, err
	}
	if f == 0 {
		p.fullWaits++
		publish(p.l.fullWaits, p.fullWaits)
		return 0, ErrFull
	}
	p.reserved = min(n, f)
	return p.reserved, nil
}

// Write fills reserved slot i (0 <= i < the count Reserve returned) with m.
// Sampled messages without a timestamp are stamped with the host clock.
func (p *Producer) Write(i int, m *Message) error {
	if i < 0 || i >= p.reserved {
		return fmt.Errorf("p2pqueue: write to slot %d of a reservation of %d; call Reserve first", i, p.reserved)
	}
	if len(m.Payload) > p.l.cfg.PayloadCap() {
		return fmt.Errorf("link %d: message %d: %w: %d bytes, a slot holds %d; raise the link's slot size",
			p.l.cfg.LinkID, m.ID, ErrTooLarge, len(m.Payload), p.l.cfg.PayloadCap())
	}
	h := &m.Header
	if h.Flags&FlagSampled != 0 && h.Enqueued == 0 {
		stamped := *h
		stamped.Enqueued = uint64(time.Now().UnixNano())
		h = &stamped
	}
	writeSlot(p.l.slot(p.tail+uint64(i)), h, m.Payload)
	p.bytesIn += uint64(len(m.Payload))
	return nil
}

// Commit publishes the first k reserved slots with one release store of
// tail and drops the rest of the reservation.
func (p *Producer) Commit(k int) error {
	if k < 0 || k > p.reserved {
		return fmt.Errorf("p2pqueue: commit of %d slots, %d reserved", k, p.reserved)
	}
	p.reserved = 0
	if k == 0 {
		return nil
	}
	p.tail += uint64(k)
	p.publishes++
	publish(p.l.bytesIn, p.bytesIn)
	publish(p.l.publishes, p.publishes)
	if b := p.l.bell; b != nil {
		// Full fence: our read of parked must not pass our tail store, or a
		// consumer parking right now could miss both (see Consumer.pause).
		publishSeqCst(p.l.tail, p.tail)
		if observe32(p.l.parked) == 1 {
			b.ring()
		}
		return nil
	}
	publish(p.l.tail, p.tail) // release: the slots above are visible before tail
	return nil
}

// TryEnqueue publishes m at once, or returns ErrFull, ErrClosed or
// ErrTooLarge without waiting.
func (p *Producer) TryEnqueue(m *Message) error {
	if _, err := p.Reserve(1); err != nil {
		return err
	}
	if err := p.Write(0, m); err != nil {
		p.reserved = 0
		return err
	}
	return p.Commit(1)
}

// Enqueue publishes m, waiting with backoff while the queue is full, until
// ctx is done.
func (p *Producer) Enqueue(ctx context.Context, m *Message) error {
	p.w.reset()
	for {
		err := p.TryEnqueue(m)
		if err != ErrFull {
			return err
		}
		if err := p.w.wait(ctx); err != nil {
			return fmt.Errorf("link %d: enqueue of message %d: %w", p.l.cfg.LinkID, m.ID, err)
		}
	}
}

// TryEnqueueBatch publishes as many of ms as fit, in order, with one release
// of tail, and returns how many it published. It returns ErrFull only when
// none fit.
func (p *Producer) TryEnqueueBatch(ms []Message) (int, error) {
	k, err := p.Reserve(len(ms))
	if err != nil {
		return 0, err
	}
	for i := 0; i < k; i++ {
		if err := p.Write(i, &ms[i]); err != nil {
			if cerr := p.Commit(i); cerr != nil {
				return 0, cerr
			}
			return i, err
		}
	}
	return k, p.Commit(k)
}

// EnqueueBatch publishes all of ms in order, in as few batches as space
// allows, waiting while the queue is full, until ctx is done. It returns how
// many it published.
func (p *Producer) EnqueueBatch(ctx context.Context, ms []Message) (int, error) {
	done := 0
	p.w.reset()
	for done < len(ms) {
		n, err := p.TryEnqueueBatch(ms[done:])
		done += n
		switch {
		case err == nil:
			p.w.reset()
		case err == ErrFull:
			if err := p.w.wait(ctx); err != nil {
				return done, fmt.Errorf("link %d: enqueue of %d messages, %d sent: %w", p.l.cfg.LinkID, len(ms), done, err)
			}
		default:
			return done, err
		}
	}
	return done, nil
}

// Close marks the link closed after everything committed so far. The
// consumer sees ErrClosed once it has drained the queue. Close is idempotent.
func (p *Producer) Close() {
	p.reserved = 0
	if p.closed {
		return
	}
	p.closed = true
	publish32(p.l.closed, 1) // after the last tail store: drained-then-closed is exact
	if b := p.l.bell; b != nil {
		b.ring()
	}
}
