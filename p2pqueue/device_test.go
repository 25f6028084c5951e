package p2pqueue

import (
	"errors"
	"sync"
	"testing"

	"github.com/ringactor/ringactor/internal/order"
)

// fakeDevice is device memory as a test sees it: bytes the host may only
// reach through CopyIn/CopyOut, and which a "device loop" (a host Link
// attached to the same bytes) works on directly.
type fakeDevice struct {
	mu     sync.Mutex
	mem    Region // the device's own view
	writes []int  // offsets of CopyIn calls, in order
	fail   error
}

func (f *fakeDevice) CopyIn(off int, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.writes = append(f.writes, off)
	copy(f.mem.Bytes[off:], p)
	return nil
}

func (f *fakeDevice) CopyOut(p []byte, off int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	for i := range p { // word-wise through the queue's own atomics, as a DMA of aligned words would be
		p[i] = 0
	}
	for o := 0; o+8 <= len(p); o += 8 {
		v := order.LoadAcquire64(order.Word64(f.mem.Bytes, off+o))
		for k := range 8 {
			p[o+k] = byte(v >> (8 * k))
		}
	}
	return nil
}

func newFakeDevice(t *testing.T, cfg Config) (*fakeDevice, Region) {
	t.Helper()
	n, err := cfg.RegionSize()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := NewHostRegion(n)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDevice{mem: mem}
	return f, Region{Kind: DeviceMemory, Device: 2, Size: n, DeviceAddr: 0x7f0000000000, Access: f}
}

func TestDeviceLinkFormatsThroughAccessMagicLast(t *testing.T) {
	cfg := Config{Capacity: 8, SlotSize: 64, LinkID: 42}
	f, r := newFakeDevice(t, cfg)
	l, err := Init(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.writes) < 2 || f.writes[0] != OffMagic || f.writes[len(f.writes)-1] != OffMagic {
		t.Fatalf("copy-in order %v: the magic must be invalidated first and written last", f.writes)
	}
	// The device loop attaches to what Init wrote: the header is a real queue.
	devView, err := Attach(f.mem)
	if err != nil {
		t.Fatalf("device side cannot attach to the formatted header: %v", err)
	}
	if devView.Config() != cfg || l.Config() != cfg {
		t.Fatalf("config %+v / %+v, want %+v", devView.Config(), l.Config(), cfg)
	}
	if l.Region().Kind != DeviceMemory || l.Region().Len() != r.Size {
		t.Fatalf("region %+v", l.Region())
	}
}

func TestDeviceLinkObserversReadTheDevice(t *testing.T) {
	cfg := Config{Capacity: 8, SlotSize: 64, LinkID: 7}
	f, r := newFakeDevice(t, cfg)
	l, err := Init(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	devView, err := Attach(f.mem)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := devView.Producer()
	c, _ := devView.Consumer()
	for i := range 5 {
		if err := p.TryEnqueue(msg(uint64(i), "abcd")); err != nil {
			t.Fatal(err)
		}
	}
	var m Message
	if err := c.TryDequeue(&m); err != nil {
		t.Fatal(err)
	}
	if got := l.Len(); got != 4 {
		t.Fatalf("Len through the device link = %d, want 4", got)
	}
	st := l.Stats()
	if st.Published != 5 || st.Consumed != 1 || st.BytesIn != 20 || st.BytesOut != 4 || st.Closed {
		t.Fatalf("stats %+v", st)
	}
	p.Close()
	if !l.Closed() {
		t.Fatal("Closed does not see the device producer's close")
	}
	// A failed read keeps the last good reading rather than garbage.
	f.fail = errors.New("device lost")
	if got := l.Len(); got != 4 {
		t.Fatalf("Len after a failed refresh = %d, want the last reading 4", got)
	}
}

func TestDeviceLinkHostHandlesAreClaimsOnly(t *testing.T) {
	cfg := Config{Capacity: 4, SlotSize: 64, LinkID: 9}
	_, r := newFakeDevice(t, cfg)
	l, err := Init(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Producer()
	if err != nil {
		t.Fatalf("claiming a device link's producer for a device loop: %v", err)
	}
	c, err := l.Consumer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Producer(); !errors.Is(err, ErrClaimed) {
		t.Fatalf("second producer claim: %v", err)
	}
	if err := p.TryEnqueue(msg(1, "x")); !errors.Is(err, ErrNotHostVisible) {
		t.Fatalf("host enqueue into device memory: %v", err)
	}
	var m Message
	if err := c.TryDequeue(&m); !errors.Is(err, ErrNotHostVisible) {
		t.Fatalf("host dequeue from device memory: %v", err)
	}
	p.Close() // a no-op: the device producer closes it
	if l.Closed() {
		t.Fatal("host Close of a device link must not write the device's flag")
	}
}

func TestDeviceLinkRejectsBadRegions(t *testing.T) {
	cfg := Config{Capacity: 8, SlotSize: 64}
	_, r := newFakeDevice(t, cfg)
	small := r
	small.Size = 100
	if _, err := Init(small, cfg); !errors.Is(err, ErrRegionTooSmall) {
		t.Fatalf("too small: %v", err)
	}
	odd := r
	odd.DeviceAddr += 8
	if _, err := Init(odd, cfg); !errors.Is(err, ErrMisaligned) {
		t.Fatalf("misaligned: %v", err)
	}
	noAccess := r
	noAccess.Access = nil
	if _, err := Init(noAccess, cfg); !errors.Is(err, ErrNotHostVisible) {
		t.Fatalf("no access: %v", err)
	}
	failing := r
	failing.Access = &fakeDevice{mem: Region{Bytes: make([]byte, 4096)}, fail: errors.New("copy failed")}
	if _, err := Init(failing, cfg); err == nil {
		t.Fatal("a failed copy-in must fail Init")
	}
}
