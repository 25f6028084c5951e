package devreg

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/devmem"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// The Mux hands out regions by global id, counts what each device holds,
// and routes Free back to the backend that allocated.
func TestMuxRoutesByGlobalID(t *testing.T) {
	m := NewMux(sim.New(2), 2, sim.NewCPU(0))
	if m.Name() != "sim+cpu" {
		t.Errorf("Name %q", m.Name())
	}
	for _, dev := range []int{1, 2} { // a GPU, then the CPU (its engine's device 0)
		reg, err := m.Alloc(dev, 4096, p2pqueue.DeviceMemory)
		if err != nil {
			t.Fatal(err)
		}
		if reg.Device != dev || m.Held(dev) != uint64(reg.Len()) {
			t.Fatalf("device %d: region on %d, %d bytes held of %d", dev, reg.Device, m.Held(dev), reg.Len())
		}
		if err := m.Free(reg); err != nil || m.Held(dev) != 0 {
			t.Fatalf("device %d: Free: %v, %d bytes still held", dev, err, m.Held(dev))
		}
	}
	if _, err := m.Alloc(3, 64, p2pqueue.DeviceMemory); !errors.Is(err, rk.ErrNoDevice) || !strings.Contains(err.Error(), "devices are 0..2") {
		t.Fatalf("Alloc on device 3: %v", err)
	}
	if m.Held(-1) != 0 || m.Held(3) != 0 || len(m.Sample()) != 3 {
		t.Fatal("Held or Sample out of range")
	}
}

// noBuffers is a backend without buffers (no devmem.Backend).
type noBuffers struct{ rk.Backend }

// Buffers go to the backend of their device under its own ids and come
// back with the global one; a copy between the GPUs' backend and the
// CPU's goes through the host; a backend without buffers is an error
// that says so.
func TestMuxBuffers(t *testing.T) {
	ctx := context.Background()
	m := NewMux(sim.New(2), 2, sim.NewCPU(0))
	gpu, err := m.AllocBuffer(ctx, 1, 64, devmem.DeviceMemory)
	if err != nil || gpu.Device != 1 {
		t.Fatalf("a GPU buffer: %+v, %v", gpu, err)
	}
	cpu, err := m.AllocBuffer(ctx, 2, 64, devmem.DeviceMemory)
	if err != nil || cpu.Device != 2 {
		t.Fatalf("a CPU buffer: %+v, %v", cpu, err)
	}
	want := []byte("sixty-four bytes, or near enough")
	if err := m.Write(ctx, gpu, 8, want); err != nil {
		t.Fatal(err)
	}
	path, err := m.Copy(ctx, cpu, 0, gpu, 8, len(want))
	got := make([]byte, len(want))
	if err == nil {
		err = m.Read(ctx, cpu, 0, got)
	}
	if err != nil || path != p2pqueue.PathHost || string(got) != string(want) {
		t.Fatalf("GPU -> CPU copy: %v path, %q, %v", path, got, err)
	}
	if _, err := m.AllocBuffer(ctx, 2, 1<<62, devmem.DeviceMemory); err == nil {
		t.Fatal("an impossible CPU buffer was allocated")
	} else if oom, ok := errors.AsType[*devmem.OutOfMemoryError](err); !ok || oom.Device != 2 {
		t.Fatalf("out of memory on the CPU names device %v: %v", oom, err)
	}
	for _, b := range []devmem.Buffer{gpu, cpu} {
		if err := m.FreeBuffer(b); err != nil {
			t.Fatal(err)
		}
	}
	bare := NewMux(noBuffers{sim.New(1)}, 1, sim.NewCPU(0))
	if _, err := bare.AllocBuffer(ctx, 0, 64, devmem.DeviceMemory); !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), "does not implement devmem.Backend") {
		t.Fatalf("a backend without buffers: %v", err)
	}
}
