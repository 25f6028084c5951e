package buffers

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

// slowMem is a devmem.Backend whose Write waits until released, and that
// counts what it frees.
type slowMem struct {
	entered, release chan struct{}
	mu               sync.Mutex
	freed            int
}

func (m *slowMem) AllocBuffer(_ context.Context, device, size int, kind devmem.Kind) (devmem.Buffer, error) {
	return devmem.Buffer{Device: device, Size: size, Kind: kind, Addr: 0x1000}, nil
}

func (m *slowMem) Write(context.Context, devmem.Buffer, int, []byte) error {
	m.entered <- struct{}{}
	<-m.release
	return nil
}
func (m *slowMem) Read(context.Context, devmem.Buffer, int, []byte) error { return nil }
func (m *slowMem) Copy(context.Context, devmem.Buffer, int, devmem.Buffer, int, int) (p2pqueue.Path, error) {
	return p2pqueue.PathLocal, nil
}

func (m *slowMem) FreeBuffer(devmem.Buffer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.freed++
	return nil
}

func (m *slowMem) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.freed
}

// A Free while a call is under way refuses later calls at once, but gives
// the memory back only when that call has ended, once.
func TestFreeWaitsForACallUnderWay(t *testing.T) {
	ctx := context.Background()
	mem := &slowMem{entered: make(chan struct{}), release: make(chan struct{})}
	s := New(mem, testRegistry(), errors.New("closed"))
	b, err := s.Alloc(ctx, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- b.Write(ctx, 0, []byte{1}) }()
	<-mem.entered
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Read(ctx, 0, make([]byte, 1)); !errors.Is(err, ErrFreed) {
		t.Fatalf("Read after Free: %v", err)
	}
	if n := mem.count(); n != 0 {
		t.Fatalf("freed %d times while a Write was under way", n)
	}
	close(mem.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, live := mem.count(), s.Live(); n != 1 || live != 0 {
		t.Fatalf("after the Write: freed %d times, %d live; want 1 and 0", n, live)
	}
	if err := b.Free(); err != nil || mem.count() != 1 {
		t.Fatalf("a second Free: %v, freed %d times", err, mem.count())
	}
	if n, err := s.Close(); n != 0 || err != nil {
		t.Fatalf("Close freed %d (%v), want none left", n, err)
	}
	if _, err := s.Alloc(ctx, 0, 64); err == nil || err.Error() != "closed: cannot allocate a buffer; make a new Runtime" {
		t.Fatalf("Alloc after Close: %v", err)
	}
}

// Pin holds every buffer of every stage until unpin, and on a refusal
// holds none.
func TestPinHoldsUntilUnpin(t *testing.T) {
	ctx := context.Background()
	mem := &slowMem{}
	s := New(mem, testRegistry(), errors.New("closed"))
	a, _ := s.Alloc(ctx, 0, 64)
	b, _ := s.Alloc(ctx, 0, 64)
	if _, err := s.Pin([]Binding{{Stage: "x", Device: 0, Uses: []Use{{Buffer: a}, {Buffer: nil}}}}); !errors.Is(err, ErrBadBuffer) {
		t.Fatalf("a nil buffer: %v", err)
	}
	if err := a.Free(); err != nil {
		t.Fatalf("a buffer of a refused Pin stays held: %v", err)
	}
	if _, err := s.Pin([]Binding{{Stage: "x", Device: 0, Uses: []Use{{Buffer: b}, {Buffer: a}}}}); !errors.Is(err, ErrFreed) {
		t.Fatalf("a freed buffer: %v", err)
	}
	unpin, err := s.Pin([]Binding{{Stage: "x", Device: 0, Uses: []Use{{Buffer: b}}}, {Stage: "y", Device: 0, Uses: []Use{{Buffer: b, Write: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); !errors.Is(err, ErrInUse) {
		t.Fatalf("Free of a pinned buffer: %v", err)
	}
	unpin()
	unpin() // once only
	if err := b.Free(); err != nil {
		t.Fatalf("Free after unpin: %v", err)
	}
}

// testRegistry is one simulated GPU and the CPU.
func testRegistry() *rk.Registry {
	return rk.NewRegistry(rk.Kind{Name: "sim"}, []rk.Device{{ID: 0, Name: "sim-0", Kind: rk.KindGPU, MemoryBytes: 1 << 20}},
		rk.Device{ID: 1, Name: rk.CPUName, Kind: rk.KindCPU}, "")
}
