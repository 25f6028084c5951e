package p2pqueue

import (
	"encoding/binary"
	"errors"
	"testing"
)

// FuzzAttach feeds arbitrary bytes to Attach as queue memory. Whatever they
// hold, Attach and then draining and refilling the queue must return errors,
// never panic or read outside the region.
func FuzzAttach(f *testing.F) {
	valid := func(capacity uint32, slot uint32, mangle func([]byte)) []byte {
		l, err := NewHostQueue(Config{Capacity: capacity, SlotSize: slot})
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
	le := binary.LittleEndian
	f.Add(valid(4, 64, nil))
	f.Add(valid(2, 128, nil))
	f.Add(valid(4, 64, func(b []byte) { le.PutUint32(b[OffSlots+SlotOffLen:], 1<<30) }))
	f.Add(valid(4, 64, func(b []byte) { le.PutUint32(b[OffCapacity:], 3) }))
	f.Add(valid(4, 64, func(b []byte) { le.PutUint64(b[OffTail:], ^uint64(0)) }))
	f.Add(valid(4, 64, func(b []byte) { le.PutUint32(b[OffClosed:], 1) }))
	f.Add(valid(4, 64, func(b []byte) { le.PutUint32(b[OffSlotSize:], 1<<20) }))
	f.Add(valid(4, 64, nil)[:OffSlots+10])
	f.Add([]byte{})
	f.Add(make([]byte, OffSlots))

	f.Fuzz(func(t *testing.T, data []byte) {
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
		c, _ := l.Consumer()
		p, _ := l.Producer()
		var m Message
		for range l.Cap() + 1 {
			err := c.TryDequeue(&m)
			if errors.Is(err, ErrEmpty) || errors.Is(err, ErrClosed) {
				break
			}
			if err != nil && !errors.Is(err, ErrCorruptSlot) {
				t.Fatalf("dequeue: unexpected %v", err)
			}
			if err == nil && len(m.Payload) > l.Config().PayloadCap() {
				t.Fatalf("payload %d past slot", len(m.Payload))
			}
		}
		for range l.Cap() + 1 {
			if err := p.TryEnqueue(&Message{Payload: []byte("x")}); err != nil {
				break
			}
		}
		_ = l.Stats()
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
