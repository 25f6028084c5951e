package devreg

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
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
