package p2pqueue

import (
	"errors"
	"testing"
)

func TestLayoutFieldsAreAlignedAndDisjoint(t *testing.T) {
	type field struct {
		name      string
		off, size int
	}
	fields := []field{
		{"magic", OffMagic, 4}, {"version", OffVersion, 2}, {"capacity", OffCapacity, 4},
		{"slot_size", OffSlotSize, 4}, {"link_id", OffLinkID, 8},
		{"tail", OffTail, 8}, {"closed", OffClosed, 4}, {"bytes_in", OffBytesIn, 8},
		{"full_waits", OffFullWaits, 8}, {"publishes", OffPublishes, 8},
		{"head", OffHead, 8}, {"parked", OffParked, 4}, {"bytes_out", OffBytesOut, 8},
		{"empty_polls", OffEmptyPolls, 8}, {"releases", OffReleases, 8},
	}
	for i, f := range fields {
		if f.off%f.size != 0 {
			t.Errorf("%s at %d is not %d-byte aligned", f.name, f.off, f.size)
		}
		if f.off+f.size > OffSlots {
			t.Errorf("%s runs into the slots", f.name)
		}
		for _, g := range fields[i+1:] {
			if f.off < g.off+g.size && g.off < f.off+f.size {
				t.Errorf("%s and %s overlap", f.name, g.name)
			}
		}
	}
	// Each side's fields stay in its own line, so the two never share a cache line.
	for _, f := range fields[5:10] {
		if f.off < OffProducerLine || f.off+f.size > OffProducerLine+LineSize {
			t.Errorf("producer field %s leaves the producer line", f.name)
		}
	}
	for _, f := range fields[10:] {
		if f.off < OffConsumerLine || f.off+f.size > OffConsumerLine+LineSize {
			t.Errorf("consumer field %s leaves the consumer line", f.name)
		}
	}
	if OffSlots != OffConsumerLine+LineSize || OffSlots%RegionAlign != 0 {
		t.Errorf("slots start at %d", OffSlots)
	}
	if SlotOffEnqueued+8 != SlotHeaderSize {
		t.Errorf("slot header fields end at %d, header is %d", SlotOffEnqueued+8, SlotHeaderSize)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		cfg  Config
		want error
	}{
		{Config{Capacity: 2, SlotSize: 64}, nil},
		{Config{Capacity: 1 << 20, SlotSize: 128}, nil},
		{Config{Capacity: MaxCapacity, SlotSize: MaxSlotSize}, nil},
		{Config{Capacity: 0, SlotSize: 64}, ErrBadCapacity},
		{Config{Capacity: 1, SlotSize: 64}, ErrBadCapacity},
		{Config{Capacity: 3, SlotSize: 64}, ErrBadCapacity},
		{Config{Capacity: MaxCapacity * 2, SlotSize: 64}, ErrBadCapacity},
		{Config{Capacity: 4, SlotSize: 0}, ErrBadSlotSize},
		{Config{Capacity: 4, SlotSize: 32}, ErrBadSlotSize},
		{Config{Capacity: 4, SlotSize: 100}, ErrBadSlotSize},
		{Config{Capacity: 4, SlotSize: MaxSlotSize + SlotAlign}, ErrBadSlotSize},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%+v: got %v, want %v", c.cfg, err, c.want)
		}
	}
}

func TestConfigFor(t *testing.T) {
	for _, c := range []struct{ payload, slot int }{{0, 64}, {32, 64}, {33, 128}, {64, 128}, {1024, 1088}, {-5, 64}} {
		cfg := ConfigFor(8, c.payload)
		if int(cfg.SlotSize) != c.slot {
			t.Errorf("payload %d: slot %d, want %d", c.payload, cfg.SlotSize, c.slot)
		}
		if cfg.PayloadCap() < c.payload {
			t.Errorf("payload %d does not fit in %d", c.payload, cfg.PayloadCap())
		}
	}
	if err := ConfigFor(8, MaxSlotSize).Validate(); !errors.Is(err, ErrBadSlotSize) {
		t.Errorf("oversize payload: %v", err)
	}
	n, err := Config{Capacity: 4, SlotSize: 64}.RegionSize()
	if err != nil || n != OffSlots+4*64 {
		t.Errorf("RegionSize = %d, %v", n, err)
	}
}

func TestSlotCodecRoundTrip(t *testing.T) {
	slot := make([]byte, 128)
	h := Header{ID: 1<<63 + 7, Type: 9, Flags: FlagSampled | FlagControl, Origin: 3, Enqueued: 12345}
	if err := EncodeSlot(slot, h, []byte("payload")); err != nil {
		t.Fatal(err)
	}
	got, p, err := DecodeSlot(slot)
	if err != nil || got != h || string(p) != "payload" {
		t.Fatalf("got %+v %q %v", got, p, err)
	}
	if err := EncodeSlot(slot, h, make([]byte, 97)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversize: %v", err)
	}
	if err := EncodeSlot(slot[:16], h, nil); err == nil {
		t.Error("short slot accepted")
	}
	slot[SlotOffLen] = 200 // more than the 96 payload bytes
	if _, _, err := DecodeSlot(slot); !errors.Is(err, ErrCorruptSlot) {
		t.Errorf("corrupt length: %v", err)
	}
	if _, _, err := DecodeSlot(slot[:10]); !errors.Is(err, ErrCorruptSlot) {
		t.Errorf("short slot: %v", err)
	}
}
