package p2pqueue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ringactor/ringactor/internal/order"
	"github.com/ringactor/ringactor/internal/wait"
)

// Producer is the one writer of a link: it owns tail. It is not safe for
// concurrent use; one goroutine (or one kernel) produces.
type Producer struct {
	l         *Link
	tail      uint64 // our own index: the published value
	headCache uint64 // last valid head we observed; re-read only when we look full
	reserved  int
	lens      []int // payload lengths of the reserved slots written so far, in order
	closed    bool
	w         wait.Waiter
	first     []uint64 // flagged: first words of the written slots, stored at Commit
	stage     [][]byte // flagged: what Slot hands out, encoded by WriteHeader

	bytesIn, fullWaits, publishes uint64
}

// Link returns the link this producer writes.
func (p *Producer) Link() *Link { return p.l }

// free returns the number of free slots, re-reading head only when the
// cached value says fewer than want are free (each re-read may cross PCIe).
// A head no correct consumer writes is an error and is not cached.
func (p *Producer) free(want int) (int, error) {
	if p.l.dev != nil {
		return 0, p.l.dev.hostUse(p.l, "produce into")
	}
	capacity := uint64(p.l.cfg.Capacity)
	if used := p.tail - p.headCache; capacity-used >= uint64(want) {
		return int(capacity - used), nil
	}
	h := order.LoadAcquire64(p.l.head)
	used := p.tail - h
	if used > capacity {
		return 0, fmt.Errorf("%w: %s: head %d is ahead of tail %d or more than %d slots behind it",
			ErrCorrupt, p.l.cfg.LinkID.named(), h, p.tail, capacity)
	}
	p.headCache = h
	return int(capacity - used), nil
}

// Reserve claims up to n free slots for writing and returns how many it got:
// 0 with ErrFull when none is free. Write the slots in order, then Commit.
// A new Reserve drops any earlier reservation that was not committed.
func (p *Producer) Reserve(n int) (int, error) {
	p.reserved, p.lens, p.first = 0, p.lens[:0], p.first[:0]
	if p.closed {
		return 0, fmt.Errorf("%w: %s: no enqueue after Close", ErrClosed, p.l.cfg.LinkID.named())
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
		order.StoreRelease64(p.l.fullWaits, p.fullWaits)
		return 0, ErrFull
	}
	p.reserved = min(n, f)
	return p.reserved, nil
}

// Write fills reserved slot i with m. Slots are written in order: i is the
// number already written (0, 1, ...) and less than the count Reserve
// returned. Sampled messages without a timestamp get the host clock's.
func (p *Producer) Write(i int, m *Message) error {
	if i != len(p.lens) || i >= p.reserved {
		return fmt.Errorf("%w: write of slot %d with %d of %d reserved slots written; write them in order after Reserve",
			ErrMisuse, i, len(p.lens), p.reserved)
	}
	if len(m.Payload) > p.l.cfg.PayloadCap() {
		return p.tooLarge(m.ID, len(m.Payload))
	}
	if p.l.cfg.Format == FormatFlagged {
		h := stamped(&m.Header)
		p.writeFlagged(i, &h, m.Payload)
	} else {
		writeMessage(p.l.slot(p.tail+uint64(i)), m)
	}
	p.lens = append(p.lens, len(m.Payload))
	return nil
}

// stamped is h with the host clock's timestamp if it is sampled and has none.
func stamped(h *Header) Header {
	c := *h
	if c.Flags&FlagSampled != 0 && c.Enqueued == 0 {
		c.Enqueued = uint64(time.Now().UnixNano())
	}
	return c
}

// writeMessage encodes m into slot; a sampled message without a timestamp
// gets the host clock's.
func writeMessage(slot []byte, m *Message) {
	writeSlot(slot, &m.Header, m.Payload)
	if m.Flags&FlagSampled != 0 && m.Enqueued == 0 {
		binary.LittleEndian.PutUint64(slot[SlotOffEnqueued:], uint64(time.Now().UnixNano()))
	}
}

func (p *Producer) tooLarge(id uint64, n int) error {
	return fmt.Errorf("%s: message %d: %w: %d bytes, a slot holds %d; raise the link's slot size",
		p.l.cfg.LinkID.named(), id, ErrTooLarge, n, p.l.cfg.PayloadCap())
}

// Slot returns reserved slot i's payload area (PayloadCap bytes) so a
// writer can build a message in place, with no copy; WriteHeader completes
// it. Slots may be filled in any order, headers are written in order.
func (p *Producer) Slot(i int) ([]byte, error) {
	if i < 0 || i >= p.reserved {
		return nil, fmt.Errorf("%w: slot %d of %d reserved; call Reserve first", ErrMisuse, i, p.reserved)
	}
	if p.l.cfg.Format == FormatFlagged {
		return p.stageFlagged(i), nil
	}
	s := p.l.slot(p.tail + uint64(i))
	return s[SlotHeaderSize:], nil
}

// WriteHeader completes reserved slot i, whose payload of n bytes was
// written in place through Slot. As with Write, i is the number of slots
// already written.
func (p *Producer) WriteHeader(i int, h *Header, n int) error {
	if i != len(p.lens) || i >= p.reserved {
		return fmt.Errorf("%w: header of slot %d with %d of %d reserved slots written; write them in order after Reserve",
			ErrMisuse, i, len(p.lens), p.reserved)
	}
	if n < 0 || n > p.l.cfg.PayloadCap() {
		return p.tooLarge(h.ID, n)
	}
	if p.l.cfg.Format == FormatFlagged {
		p.writeFlagged(i, h, p.stageFlagged(i)[:n])
		p.lens = append(p.lens, n)
		return nil
	}
	s := p.l.slot(p.tail + uint64(i))
	writeHeader(s, h, n)
	p.lens = append(p.lens, n)
	return nil
}

// Commit publishes the first k written slots with one release store of tail
// and drops the rest of the reservation.
func (p *Producer) Commit(k int) error {
	if k < 0 || k > len(p.lens) {
		return fmt.Errorf("%w: commit of %d slots, %d written", ErrMisuse, k, len(p.lens))
	}
	for _, n := range p.lens[:k] {
		p.bytesIn += uint64(n)
	}
	if p.l.cfg.Format == FormatFlagged {
		p.commitFlagged(k)
	}
	p.reserved, p.lens = 0, p.lens[:0]
	return p.publish(k)
}

// publish makes k more written slots visible with one release store of tail
// (and rings a parked consumer).
func (p *Producer) publish(k int) error {
	if k == 0 {
		return nil
	}
	p.tail += uint64(k)
	p.publishes++
	order.StoreRelease64(p.l.bytesIn, p.bytesIn)
	order.StoreRelease64(p.l.publishes, p.publishes)
	if bell := p.l.bell.Load(); bell != nil {
		// Full fence: our read of parked must not pass our tail store, or a
		// consumer parking right now could miss both (see Consumer.pause).
		order.StoreSeqCst64(p.l.tail, p.tail)
		if order.LoadAcquire32(p.l.parked) == 1 {
			bell.ring()
		}
		return nil
	}
	order.StoreRelease64(p.l.tail, p.tail) // release: the slots above are visible before tail
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
	p.w.Reset()
	for {
		err := p.TryEnqueue(m)
		if !errors.Is(err, ErrFull) {
			return err
		}
		if err := p.w.Wait(ctx); err != nil {
			return fmt.Errorf("%s: enqueue of message %d: %w", p.l.cfg.LinkID.named(), m.ID, err)
		}
	}
}

// TryEnqueueBatch publishes as many of ms as fit, in order, with one release
// of tail, and returns how many it published. It returns ErrFull only when
// none fit; a message that cannot be written ends the batch with its error,
// the ones before it published.
func (p *Producer) TryEnqueueBatch(ms []Message) (int, error) {
	k, err := p.Reserve(len(ms))
	if err != nil {
		return 0, err
	}
	// Write's work inline, without its per-call checks: the reservation
	// is ours and the slots are written in order.
	payloadCap := p.l.cfg.PayloadCap()
	flagged := p.l.cfg.Format == FormatFlagged
	var bytes uint64
	for i := 0; i < k; i++ {
		m := &ms[i]
		if len(m.Payload) > payloadCap {
			p.bytesIn += bytes
			p.reserved, p.lens = 0, p.lens[:0]
			if err := p.publish(i); err != nil {
				return 0, err
			}
			return i, p.tooLarge(m.ID, len(m.Payload))
		}
		if flagged { // each slot published by its first word as soon as written
			h := stamped(&m.Header)
			seq := p.tail + uint64(i)
			order.StoreRelease64(p.l.word(seq, 0), p.l.encodeFlagged(seq, &h, m.Payload))
		} else {
			writeMessage(p.l.slot(p.tail+uint64(i)), m)
		}
		bytes += uint64(len(m.Payload))
	}
	p.bytesIn += bytes
	p.reserved, p.lens = 0, p.lens[:0]
	return k, p.publish(k)
}

// EnqueueBatch publishes all of ms in order, in as few batches as space
// allows, waiting while the queue is full, until ctx is done. It returns how
// many it published.
func (p *Producer) EnqueueBatch(ctx context.Context, ms []Message) (int, error) {
	done := 0
	p.w.Reset()
	for done < len(ms) {
		n, err := p.TryEnqueueBatch(ms[done:])
		done += n
		switch {
		case err == nil:
			p.w.Reset()
		case errors.Is(err, ErrFull):
			if err := p.w.Wait(ctx); err != nil {
				return done, fmt.Errorf("%s: enqueue of %d messages, %d sent: %w", p.l.cfg.LinkID.named(), len(ms), done, err)
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
	p.reserved, p.lens, p.first = 0, p.lens[:0], p.first[:0]
	if p.closed || p.l.dev != nil { // a device link is closed by its device producer
		return
	}
	p.closed = true
	order.StoreRelease32(p.l.closed, 1) // after the last tail store: drained-then-closed is exact
	if bell := p.l.bell.Load(); bell != nil {
		bell.ring()
	}
}
