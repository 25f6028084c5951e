package p2pqueue

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// formatted returns a host region holding a fresh queue of 8 slots of 64 bytes.
func formatted(t *testing.T) Region {
	t.Helper()
	l, err := NewHostQueue(Config{Capacity: 8, SlotSize: 64, LinkID: 42})
	if err != nil {
		t.Fatal(err)
	}
	return l.Region()
}

func TestAttachAcceptsInitialisedQueue(t *testing.T) {
	l, err := Attach(formatted(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config(); got != (Config{Capacity: 8, SlotSize: 64, LinkID: 42}) {
		t.Fatalf("config %+v", got)
	}
	if l.Len() != 0 || l.Cap() != 8 || l.Closed() {
		t.Fatalf("len %d cap %d closed %v", l.Len(), l.Cap(), l.Closed())
	}
}

func TestAttachErrors(t *testing.T) {
	le := binary.LittleEndian
	cases := []struct {
		name   string
		mangle func(r *Region)
		want   error
		says   string
	}{
		{"zeroed memory", func(r *Region) { clear(r.Bytes) }, ErrBadMagic, "p2pqueue.Init"},
		{"bad magic", func(r *Region) { le.PutUint32(r.Bytes[OffMagic:], 0xdeadbeef) }, ErrBadMagic, "0xdeadbeef"},
		{"bad version", func(r *Region) { le.PutUint16(r.Bytes[OffVersion:], 9) }, ErrBadVersion, "9"},
		{"capacity not a power of two", func(r *Region) { le.PutUint32(r.Bytes[OffCapacity:], 6) }, ErrBadCapacity, "power of two"},
		{"capacity zero", func(r *Region) { le.PutUint32(r.Bytes[OffCapacity:], 0) }, ErrBadCapacity, "0 slots"},
		{"capacity one", func(r *Region) { le.PutUint32(r.Bytes[OffCapacity:], 1) }, ErrBadCapacity, "1 slots"},
		{"capacity too large", func(r *Region) { le.PutUint32(r.Bytes[OffCapacity:], 1<<31) }, ErrBadCapacity, "power of two"},
		{"slot size not a multiple", func(r *Region) { le.PutUint32(r.Bytes[OffSlotSize:], 96) }, ErrBadSlotSize, "multiple of 64"},
		{"slot size zero", func(r *Region) { le.PutUint32(r.Bytes[OffSlotSize:], 0) }, ErrBadSlotSize, "0 bytes"},
		{"slot size too large", func(r *Region) { le.PutUint32(r.Bytes[OffSlotSize:], 1<<30) }, ErrBadSlotSize, "multiple of 64"},
		{"slots past the region", func(r *Region) { le.PutUint32(r.Bytes[OffCapacity:], 16) }, ErrRegionTooSmall, "need"},
		{"region shorter than header", func(r *Region) { r.Bytes = r.Bytes[:OffSlots-1] }, ErrRegionTooSmall, "at least"},
		{"nil region", func(r *Region) { r.Bytes = nil }, ErrNotHostVisible, "host mapping"},
		{"device memory", func(r *Region) { r.Kind = DeviceMemory; r.Device = 1 }, ErrNotHostVisible, "device 1"},
		{"misaligned base", func(r *Region) { r.Bytes = r.Bytes[8:] }, ErrMisaligned, "NewHostRegion"},
		{"tail too far ahead", func(r *Region) { le.PutUint64(r.Bytes[OffTail:], 9) }, ErrCorrupt, "apart"},
		{"head ahead of tail", func(r *Region) { le.PutUint64(r.Bytes[OffHead:], 1) }, ErrCorrupt, "apart"},
		{"closed flag garbage", func(r *Region) { le.PutUint32(r.Bytes[OffClosed:], 7) }, ErrCorrupt, "closed flag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := formatted(t)
			c.mangle(&r)
			l, err := Attach(r)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if l != nil {
				t.Fatal("handle returned with an error")
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q does not say %q", err, c.says)
			}
		})
	}
}

func TestInitErrors(t *testing.T) {
	r, err := NewHostRegion(OffSlots + 4*64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Init(r, Config{Capacity: 8, SlotSize: 64}); !errors.Is(err, ErrRegionTooSmall) {
		t.Errorf("too small: %v", err)
	}
	if _, err := Init(r, Config{Capacity: 5, SlotSize: 64}); !errors.Is(err, ErrBadCapacity) {
		t.Errorf("bad capacity: %v", err)
	}
	if _, err := Init(r, Config{Capacity: 4, SlotSize: 65}); !errors.Is(err, ErrBadSlotSize) {
		t.Errorf("bad slot size: %v", err)
	}
	if _, err := NewHostRegion(10); !errors.Is(err, ErrRegionTooSmall) {
		t.Errorf("tiny region: %v", err)
	}
	if _, err := Init(r, Config{Capacity: 4, SlotSize: 64}); err != nil {
		t.Errorf("exact fit: %v", err)
	}
}

func TestReinitResetsQueue(t *testing.T) {
	l, p, c := mustQueue(t, 4, 8)
	m := Message{Payload: []byte("x")}
	if err := p.TryEnqueue(&m); err != nil {
		t.Fatal(err)
	}
	p.Close()
	_ = c
	l2, err := Init(l.Region(), l.Config())
	if err != nil {
		t.Fatal(err)
	}
	if l2.Len() != 0 || l2.Closed() {
		t.Fatalf("reinit left len %d closed %v", l2.Len(), l2.Closed())
	}
}
