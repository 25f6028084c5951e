package p2pqueue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ringactor/ringactor/internal/order"
	"github.com/ringactor/ringactor/internal/wait"
)

// Consumer is the one reader of a link: it owns head. It is not safe for
// concurrent use; one goroutine (or one kernel) consumes.
type Consumer struct {
	l         *Link
	head      uint64 // our own index: the released value
	tailCache uint64 // last valid tail we observed; re-read only when we look empty
	peeked    int
	w         wait.Waiter
	fs        []flaggedSlot // flagged: copies of the peeked slots

	bytesOut, emptyPolls, releases uint64
}

// Link returns the link this consumer reads.
func (c *Consumer) Link() *Link { return c.l }

// avail returns the number of published, unconsumed slots, re-reading tail
// only when the cached value says the queue is empty. A tail no correct
// producer writes is an error and is not cached.
func (c *Consumer) avail() (int, error) {
	if c.l.dev != nil {
		return 0, c.l.dev.hostUse(c.l, "consume from")
	}
	if n := c.tailCache - c.head; n != 0 {
		return int(n), nil // validated when cached; head moves only towards it
	}
	t := order.LoadAcquire64(c.l.tail) // acquire: slots up to tail are visible
	n := t - c.head
	if n > uint64(c.l.cfg.Capacity) {
		return 0, fmt.Errorf("%w: %s: tail %d is behind head %d or more than %d slots ahead of it",
			ErrCorrupt, c.l.cfg.LinkID.named(), t, c.head, c.l.cfg.Capacity)
	}
	c.tailCache = t
	return int(n), nil
}

// Peek makes up to n published messages readable with Read and returns how
// many: 0 with ErrEmpty when there are none, 0 with ErrClosed when the
// producer closed the link and every message has been consumed.
func (c *Consumer) Peek(n int) (int, error) {
	c.peeked = 0
	if n <= 0 {
		return 0, nil
	}
	if c.l.cfg.Format == FormatFlagged {
		return c.peekFlaggedOrClosed(n)
	}
	a, err := c.avail()
	if err != nil {
		return 0, err
	}
	if a == 0 {
		// Closed counts only once drained: the producer stores closed after
		// its last tail, so seeing closed and then re-reading tail is exact.
		switch closed := order.LoadAcquire32(c.l.closed); closed {
		case 0:
			c.emptyPolls++
			order.StoreRelease64(c.l.emptyPolls, c.emptyPolls)
			return 0, ErrEmpty
		case 1:
			if a, err = c.avail(); err != nil {
				return 0, err
			}
			if a == 0 {
				return 0, fmt.Errorf("%w: %s drained", ErrClosed, c.l.cfg.LinkID.named())
			}
		default:
			return 0, fmt.Errorf("%w: %s: closed flag is %d, want 0 or 1", ErrCorrupt, c.l.cfg.LinkID.named(), closed)
		}
	}
	c.peeked = min(n, a)
	return c.peeked, nil
}

// peekFlaggedOrClosed is Peek on a flagged link. Closed counts only once
// drained: the producer stores closed (release) after its last slot's
// words, so a consumer that sees closed and then finds the next slot
// still unwritten has drained the link.
func (c *Consumer) peekFlaggedOrClosed(n int) (int, error) {
	if c.l.dev != nil {
		return 0, c.l.dev.hostUse(c.l, "consume from")
	}
	k, err := c.peekFlagged(n)
	if err != nil || k > 0 {
		c.peeked = k
		return k, err
	}
	switch closed := order.LoadAcquire32(c.l.closed); closed {
	case 0:
		c.emptyPolls++
		order.StoreRelease64(c.l.emptyPolls, c.emptyPolls)
		return 0, ErrEmpty
	case 1:
		if k, err = c.peekFlagged(n); err != nil || k > 0 {
			c.peeked = k
			return k, err
		}
		return 0, fmt.Errorf("%w: %s drained", ErrClosed, c.l.cfg.LinkID.named())
	default:
		return 0, fmt.Errorf("%w: %s: closed flag is %d, want 0 or 1", ErrCorrupt, c.l.cfg.LinkID.named(), closed)
	}
}

// Read decodes peeked message i (0 <= i < the count Peek returned). The
// payload aliases the slot and is valid until Release. A corrupt slot yields
// an error wrapping ErrCorruptSlot with whatever header could be read; the
// slot is still released with the batch.
func (c *Consumer) Read(i int) (Header, []byte, error) {
	if i < 0 || i >= c.peeked {
		return Header{}, nil, fmt.Errorf("%w: read of slot %d of a peek of %d; call Peek first", ErrMisuse, i, c.peeked)
	}
	idx := c.head + uint64(i)
	if c.l.cfg.Format == FormatFlagged {
		return c.readFlagged(i, idx)
	}
	h, payload, err := DecodeSlot(c.l.slot(idx))
	if err != nil {
		return h, nil, fmt.Errorf("%s slot %d: %w", c.l.cfg.LinkID.named(), idx, err)
	}
	return h, payload, nil
}

// Release hands the first k peeked slots back to the producer with one
// release store of head, and drops the rest of the peek.
func (c *Consumer) Release(k int) error {
	if k < 0 || k > c.peeked {
		return fmt.Errorf("%w: release of %d slots, %d peeked", ErrMisuse, k, c.peeked)
	}
	c.peeked = 0
	if k == 0 {
		return nil
	}
	if c.l.cfg.Format == FormatFlagged {
		c.release(k, c.flaggedBytes(k))
		return nil
	}
	payloadCap := uint32(c.l.cfg.PayloadCap())
	var bytes uint64
	for i := range uint64(k) { // the headers are in our cache: we just read them
		bytes += uint64(min(binary.LittleEndian.Uint32(c.l.slot(c.head + i)[SlotOffLen:]), payloadCap))
	}
	c.release(k, bytes)
	return nil
}

// release hands k consumed slots holding bytes of payload back to the
// producer with one release store of head.
func (c *Consumer) release(k int, bytes uint64) {
	c.peeked = 0
	c.bytesOut += bytes
	c.head += uint64(k)
	c.releases++
	order.StoreRelease64(c.l.bytesOut, c.bytesOut)
	order.StoreRelease64(c.l.releases, c.releases)
	order.StoreRelease64(c.l.head, c.head) // release: we are done reading those slots
}

// TryDequeue copies the next message into m (reusing m.Payload's capacity)
// or returns ErrEmpty or ErrClosed without waiting. A corrupt slot is
// consumed and reported as an error wrapping ErrCorruptSlot, with m.Header
// holding what could be read, so the caller can dead-letter it.
func (c *Consumer) TryDequeue(m *Message) error {
	if _, err := c.Peek(1); err != nil {
		return err
	}
	if c.l.cfg.Format == FormatFlagged {
		h, payload, err := c.readFlagged(0, c.head)
		m.Header, m.Payload = h, append(m.Payload[:0], payload...)
		c.release(1, c.flaggedBytes(1))
		return err
	}
	err := c.copyOut(c.l.slot(c.head), c.head, m)
	if rerr := c.Release(1); rerr != nil {
		return rerr
	}
	return err
}

// copyOut decodes slot (the slot of index idx, or a staged copy of it) into m.
func (c *Consumer) copyOut(slot []byte, idx uint64, m *Message) error {
	payload, ok := readSlot(slot, &m.Header)
	m.Payload = append(m.Payload[:0], payload...)
	if !ok {
		return fmt.Errorf("%s slot %d: %w", c.l.cfg.LinkID.named(), idx, corruptSlot(slot, &m.Header))
	}
	return nil
}

// Dequeue copies the next message into m, waiting until one is published,
// the link is closed and drained (ErrClosed), or ctx is done.
func (c *Consumer) Dequeue(ctx context.Context, m *Message) error {
	c.w.Reset()
	for {
		err := c.TryDequeue(m)
		if !errors.Is(err, ErrEmpty) {
			return err
		}
		if err := c.pause(ctx); err != nil {
			return fmt.Errorf("%s: dequeue: %w", c.l.cfg.LinkID.named(), err)
		}
	}
}

// TryDequeueBatch copies up to len(ms) messages into ms with one release of
// head and returns how many. It returns ErrEmpty or ErrClosed only when it
// copied none. A corrupt slot ends the batch early: the messages before it
// and the corrupt one (in ms[n-1]) are returned with the error.
func (c *Consumer) TryDequeueBatch(ms []Message) (int, error) {
	k, err := c.Peek(len(ms))
	if err != nil {
		return 0, err
	}
	if c.l.cfg.Format == FormatFlagged {
		for i := range k {
			h, payload, err := c.readFlagged(i, c.head+uint64(i))
			ms[i].Header, ms[i].Payload = h, append(ms[i].Payload[:0], payload...)
			if err != nil {
				c.release(i+1, c.flaggedBytes(i+1))
				return i + 1, err
			}
		}
		c.release(k, c.flaggedBytes(k))
		return k, nil
	}
	// Decoded straight from the slots: a host consumer's link is host
	// memory (device-resident links are consumed on their device), so a
	// staging copy would only add one.
	var bytes uint64
	for i := 0; i < k; i++ {
		idx := c.head + uint64(i)
		slot := c.l.slot(idx)
		m := &ms[i]
		payload, ok := readSlot(slot, &m.Header)
		if !ok {
			m.Payload = m.Payload[:0]
			err := fmt.Errorf("%s slot %d: %w", c.l.cfg.LinkID.named(), idx, corruptSlot(slot, &m.Header))
			c.release(i+1, bytes)
			return i + 1, err
		}
		m.Payload = append(m.Payload[:0], payload...)
		bytes += uint64(len(payload))
	}
	c.release(k, bytes)
	return k, nil
}

// DequeueBatch waits until at least one message is available and copies up
// to len(ms) of them into ms, as TryDequeueBatch does.
func (c *Consumer) DequeueBatch(ctx context.Context, ms []Message) (int, error) {
	c.w.Reset()
	for {
		n, err := c.TryDequeueBatch(ms)
		if !errors.Is(err, ErrEmpty) {
			return n, err
		}
		if err := c.pause(ctx); err != nil {
			return 0, fmt.Errorf("%s: dequeue: %w", c.l.cfg.LinkID.named(), err)
		}
	}
}

// PeekWait is Peek that waits, as DequeueBatch does, until at least one
// message is published, the link is closed and drained, or ctx ends. The
// messages stay in their slots: Read them, then Release.
func (c *Consumer) PeekWait(ctx context.Context, n int) (int, error) {
	c.w.Reset()
	for {
		k, err := c.Peek(n)
		if !errors.Is(err, ErrEmpty) || n <= 0 {
			return k, err
		}
		if err := c.pause(ctx); err != nil {
			return 0, fmt.Errorf("%s: peek: %w", c.l.cfg.LinkID.named(), err)
		}
	}
}

// pause waits one step for the producer. With a doorbell, a consumer that
// has spun and yielded without luck parks until rung.
func (c *Consumer) pause(ctx context.Context) error {
	bell := c.l.bell.Load()
	if bell == nil || !c.w.Sleeping() {
		return c.w.Wait(ctx)
	}
	// Full fence (Dekker with the producer's StoreSeqCst64 of tail): our
	// re-check below must not pass this store. Clearing it is a release.
	order.StoreSeqCst32(c.l.parked, 1)
	defer order.StoreRelease32(c.l.parked, 0)
	// Re-check after announcing: either we see the producer's new tail here,
	// or the producer sees our flag after its tail store and rings.
	if c.l.Len() != 0 || c.l.Closed() || (c.l.cfg.Format == FormatFlagged && c.firstReady()) {
		return nil
	}
	return c.w.Sleep(ctx, bell.fallback, bell.ch)
}
