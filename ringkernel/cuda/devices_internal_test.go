package cuda

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// NVML-shaped input: an HGX-like box where GPUs 0 and 1 share four direct
// NVLinks, GPUs 2 and 3 each have NVLinks to a switch (not a GPU), and the
// PCIe levels NVML reports for the rest map to nvidia-smi's terms.
func TestConnectFromNVML(t *testing.T) {
	pci := func(bus int) pciAddr { return pciAddr{bus: bus} }
	sw := pci(0x90)
	gpus := []nvmlGPU{
		{Device: rk.Device{ID: 0}, pci: pci(0x10), hasPCI: true, ancestor: []int{-1, 10, 20, 50, 30}, nvlinks: []pciAddr{pci(0x20), pci(0x20), pci(0x20), pci(0x20)}},
		{Device: rk.Device{ID: 1}, pci: pci(0x20), hasPCI: true, ancestor: []int{10, -1, 40, 0, -1}, nvlinks: []pciAddr{pci(0x10), pci(0x10), pci(0x10), pci(0x10)}},
		{Device: rk.Device{ID: 2}, pci: pci(0x30), hasPCI: true, ancestor: []int{20, 40, -1, 50, 50}, nvlinks: []pciAddr{sw, sw, sw}},
		{Device: rk.Device{ID: 3}, pci: pci(0x40), hasPCI: true, ancestor: []int{50, 0, 50, -1, 50}, nvlinks: []pciAddr{sw, sw, sw, sw, sw, sw}},
		{Device: rk.Device{ID: 4}, pci: pci(0x50), hasPCI: true, ancestor: []int{30, 30, 50, 50, -1}},
	}
	isGPU := map[pciAddr]bool{}
	for _, g := range gpus {
		isGPU[g.pci] = true
	}
	for _, c := range []struct {
		a, b int
		want string
	}{
		{0, 0, "X"}, {0, 1, "NV4"}, {1, 0, "NV4"}, // direct links
		{2, 3, "NV3"}, {3, 2, "NV3"}, // through a switch: the fewer links
		{0, 2, "PXB"}, {1, 2, "NODE"}, {0, 3, "SYS"}, {1, 3, "PIX"}, // same board counts as PIX
		{0, 4, "PHB"}, {1, 4, "?"}, // NVML did not say
	} {
		if got := connect(gpus[c.a], gpus[c.b], isGPU).String(); got != c.want {
			t.Errorf("connect(%d, %d) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

// The CUDA backend lists the GPUs the driver reports and refuses, saying
// why, an op with no CUDA source.
func TestListDevicesAndSupports(t *testing.T) {
	b := gpuBackend(t, Options{})
	n, err := b.drv.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	devs, err := b.ListDevices()
	if err != nil || len(devs) != n {
		t.Fatalf("%d devices, %v; the driver reports %d", len(devs), err, n)
	}
	for i, d := range devs {
		if d.ID != i || d.Kind != rk.KindGPU || d.Backend != "cuda" || d.Source != "driver" || d.MemoryBytes == 0 || d.ComputeCapability == "" ||
			len(d.P2P) != n || len(d.Topology) != n || d.Topology[i].Level != rk.LevelSelf || !d.MeasuresBusy {
			t.Errorf("device %d: %+v", i, d)
		}
	}
	devs[0].P2P[0] = true // a copy: the backend's list is its own
	if again, _ := b.ListDevices(); again[0].P2P[0] {
		t.Fatal("ListDevices hands out the backend's own slices")
	}
	goOnly := kernels.Op{Name: "go_only", Go: func(_, _, in, out []float32) (int, error) { return copy(out, in), nil }}
	err = b.Supports(0, goOnly)
	if !errors.Is(err, rk.ErrUnsupported) || !strings.Contains(err.Error(), "no CUDA source") || !strings.Contains(err.Error(), "place it on the CPU") {
		t.Fatalf("a Go-only op on GPU 0: %v", err)
	}
	if err := b.Supports(0, kernels.Op{Name: "k", CUDA: "RA_STAGE(ra_k) {}"}); err != nil {
		t.Fatalf("an op with a CUDA source: %v", err)
	}
	if err := b.Supports(n, goOnly); !errors.Is(err, rk.ErrNoDevice) {
		t.Fatalf("device %d of %d: %v", n, n, err)
	}
	if s := b.Sample(); s != nil && len(s) != n {
		t.Fatalf("%d samples for %d GPUs", len(s), n)
	}
	if !slices.ContainsFunc(rk.Kinds(), func(k rk.Kind) bool { return k.Name == "cuda" }) {
		t.Fatal("the cuda kind is not registered")
	}
}
