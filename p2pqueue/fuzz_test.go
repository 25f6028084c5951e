package p2pqueue

import (
	"encoding/binary"
	"errors"
	"testing"
)

// FuzzAttach feeds arbitrary bytes to Attach as queue memory, then lets a
// "peer" scribble arbitrary bytes over the producer and consumer lines
// between operations. Whatever they hold, every call must return a count
// within bounds or an error: never panic or read outside the region.
func FuzzAttach(f *testing.F) {
	validFmt := func(format Format, capacity uint32, slot uint32, mangle func([]byte)) []byte {
		l, err := NewHostQueue(Config{Capacity: capacity, SlotSize: slot, Format: format})
		if err != nil {
			f.Fatal(err)
		}
		p, _ := l.Producer()
		for i := range capacity / 2 {
			_ = p.TryEnqueue(&Message{Header: Header{ID: uint64(i)}, Payload: []byte("seed")})
		}
		b := append([]byte(nil), l.Region().Bytes...)
		if mangle != nil {
			mangle(b)
		}
		return b
	}
	valid := func(capacity uint32, slot uint32, mangle func([]byte)) []byte {
		return validFmt(FormatIndexed, capacity, slot, mangle)
	}
	le := binary.LittleEndian
	f.Add(valid(4, 64, nil), []byte(nil))
	f.Add(validFmt(FormatFlagged, 4, 128, nil), []byte(nil))
	f.Add(validFmt(FormatFlagged, 4, 128, func(b []byte) { le.PutUint32(b[OffSlots+2*SlotOffLen:], 1<<30) }), []byte{0xff, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(validFmt(FormatFlagged, 4, 128, func(b []byte) { le.PutUint32(b[OffSlots+4:], 6) }), []byte{0xff, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(valid(2, 128, nil), []byte{0xff, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(valid(4, 64, func(b []byte) { le.PutUint32(b[OffSlots+SlotOffLen:], 1<<30) }), []byte{0xff, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(valid(4, 64, func(b []byte) { le.PutUint32(b[OffCapacity:], 3) }), []byte{0xff, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(valid(4, 64, func(b []byte) { le.PutUint64(b[OffTail:], ^uint64(0)) }), []byte{0xff, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(valid(4, 64, func(b []byte) { le.PutUint32(b[OffClosed:], 1) }), []byte{0xff, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(valid(4, 64, func(b []byte) { le.PutUint32(b[OffSlotSize:], 1<<20) }), []byte{0xff, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(valid(4, 64, nil)[:OffSlots+10], []byte(nil))
	f.Add([]byte{}, []byte{0xff, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(make([]byte, OffSlots), []byte{0xff, 0, 0, 0, 0, 0, 0, 0x80})

	f.Fuzz(func(t *testing.T, data, scribble []byte) {
		if len(data) > 1<<20 {
			return
		}
		r, err := NewHostRegion(max(len(data), OffSlots))
		if err != nil {
			t.Fatal(err)
		}
		r.Bytes = r.Bytes[:len(data)]
		copy(r.Bytes, data)
		l, err := Attach(r)
		if err != nil {
			if l != nil {
				t.Fatal("handle with error")
			}
			return
		}
		c, cerr := l.Consumer()
		p, perr := l.Producer()
		peer := func(round int) { // a faulty peer writes into the index lines
			if len(scribble) > 0 && round%2 == 1 {
				copy(r.Bytes[OffProducerLine+(round*8)%(2*LineSize):OffSlots], scribble)
			}
		}
		ms := make([]Message, 8)
		for round := range 6 {
			peer(round)
			if cerr == nil {
				n, err := c.TryDequeueBatch(ms)
				if n < 0 || n > len(ms) || (err == nil && n == 0) {
					t.Fatalf("batch dequeue returned %d, %v", n, err)
				}
				for _, m := range ms[:n] {
					if len(m.Payload) > l.Config().PayloadCap() {
						t.Fatalf("payload %d past slot", len(m.Payload))
					}
				}
				if k, err := c.Peek(4); err == nil {
					if k <= 0 || k > 4 {
						t.Fatalf("peek returned %d", k)
					}
					for i := range k {
						_, _, _ = c.Read(i)
					}
					if err := c.Release(k); err != nil {
						t.Fatal(err)
					}
				}
			}
			if perr == nil {
				n, err := p.TryEnqueueBatch(ms[:3])
				if n < 0 || n > 3 || (err == nil && n != 3 && n == 0) {
					t.Fatalf("batch enqueue returned %d, %v", n, err)
				}
			}
			_ = l.Stats()
			_ = l.Len()
		}
	})
}

// FuzzDecodeSlot decodes arbitrary bytes as a slot: it returns a payload
// inside the slot or an error, and what it returns encodes back to the same
// header and payload.
func FuzzDecodeSlot(f *testing.F) {
	good := make([]byte, 64)
	_ = EncodeSlot(good, Header{ID: 5, Type: 1, Flags: FlagSampled, Enqueued: 9}, []byte("hello"))
	f.Add(good)
	bad := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(bad[SlotOffLen:], 33)
	f.Add(bad)
	f.Add(good[:SlotHeaderSize])
	f.Add(good[:5])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, slot []byte) {
		h, payload, err := DecodeSlot(slot)
		if err != nil {
			if !errors.Is(err, ErrCorruptSlot) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if len(payload) > len(slot)-SlotHeaderSize {
			t.Fatalf("payload of %d from a %d-byte slot", len(payload), len(slot))
		}
		again := make([]byte, len(slot))
		if err := EncodeSlot(again, h, payload); err != nil {
			t.Fatal(err)
		}
		h2, p2, err := DecodeSlot(again)
		if err != nil || h2 != h || string(p2) != string(payload) {
			t.Fatalf("round trip: %+v %q %v, want %+v %q", h2, p2, err, h, payload)
		}
	})
}
