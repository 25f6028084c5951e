package devreg

import (
	"slices"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/ringkernel/sim"
)

// simRegistry is a registry of n simulated GPUs joined as topo says, and
// the CPU.
func simRegistry(t *testing.T, n int, topo string) *Registry {
	t.Helper()
	devs, err := (&sim.Backend{Devices: n, Topology: topo}).ListDevices()
	if err != nil {
		t.Fatal(err)
	}
	return New("sim", devs, cpuDevice(sim.NewCPU(0), n), "")
}

// Chain follows the fastest links: NVLink first, then PCIe, and one GPU
// takes every stage.
func TestChainPrefersTheFastestLink(t *testing.T) {
	for _, c := range []struct {
		gpus int
		topo string
		n    int
		want []int
	}{
		{4, "0-3:nv4,3-1:nv2,*:sys", 3, []int{0, 3, 1}},
		{4, "0-3:nv4,3-1:nv2,*:sys", 2, []int{0, 3}},
		{4, "1-2:nv8,2-3:nv8,0-1:nv2,*:sys", 3, []int{1, 2, 3}}, // two NV8 links beat NV8 then NV2
		{4, "2-3:pix,1-2:pxb,*:sys", 3, []int{1, 2, 3}},
		{4, "none", 3, []int{0, 1, 2}},
		{4, "all", 6, []int{0, 1, 2, 3, 0, 1}},
		{1, "", 3, []int{0, 0, 0}},
	} {
		r := simRegistry(t, c.gpus, c.topo)
		got, err := r.Chain(c.n)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%d GPUs %q: Chain(%d) = %v, %v; want %v", c.gpus, c.topo, c.n, got, err, c.want)
		}
	}
	r := New("sim", nil, cpuDevice(nil, 0), "")
	if _, err := r.Chain(2); err == nil || !strings.Contains(err.Error(), "place them on the CPU, device 0") {
		t.Errorf("no GPUs: %v", err)
	}
}
