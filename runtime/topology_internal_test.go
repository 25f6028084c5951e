package runtime

import (
	"encoding/json"
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
	return newRegistry("sim", devs, cpuDevice(sim.NewCPU(0), n), "")
}

func TestConnectionText(t *testing.T) {
	for _, s := range []string{"X", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS", "?"} {
		c, err := ParseConnection(strings.ToLower(s))
		if err != nil || c.String() != s {
			t.Errorf("ParseConnection(%q) = %v, %v", s, c, err)
		}
		b, _ := json.Marshal(c)
		var back Connection
		if err := json.Unmarshal(b, &back); err != nil || back != c {
			t.Errorf("%s through JSON: %s → %v, %v", s, b, back, err)
		}
	}
	order := []string{"X", "NV8", "NV4", "PIX", "PXB", "PHB", "NODE", "SYS", "?"}
	for i := 1; i < len(order); i++ {
		a, _ := ParseConnection(order[i-1])
		b, _ := ParseConnection(order[i])
		if !a.Faster(b) || b.Faster(a) {
			t.Errorf("%s should be faster than %s", a, b)
		}
	}
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
	r := newRegistry("sim", nil, cpuDevice(nil, 0), "")
	if _, err := r.Chain(2); err == nil || !strings.Contains(err.Error(), "place them on the CPU, device 0") {
		t.Errorf("no GPUs: %v", err)
	}
}

func TestDeviceList(t *testing.T) {
	r := simRegistry(t, 3, "1-2:nv2,*:sys")
	for s, want := range map[string][]int{"auto": {0, 1, 2}, "cpu": {3, 3, 3}, " 0, cpu ,2": {0, 3, 2}, "1": {1, 1, 1}} {
		if got, err := r.DeviceList(s, 3); err != nil || !slices.Equal(got, want) {
			t.Errorf("DeviceList(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for s, want := range map[string]string{"0,1": "names 2 devices", "0,7,1": "no such device 7: GPUs are 0..2 and the CPU is 3", "0,gpu,1": `"gpu"`,
		// an unknown device is named before the list's length is counted
		"0,7": "no such device 7: GPUs are 0..2 and the CPU is 3", "gpu,1": `"gpu"`} {
		if _, err := r.DeviceList(s, 3); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DeviceList(%q): %v, want an error saying %s", s, err, want)
		}
	}
}

// A zero Registry answers without panicking.
func TestZeroRegistry(t *testing.T) {
	var r Registry
	if r.CPUDevice().ID != -1 || r.GPUs() != nil || r.CPU(0) || r.Connection(0, 1).Level != LevelUnknown {
		t.Fatal("zero registry")
	}
	if _, err := r.Chain(2); err == nil {
		t.Fatal("Chain on no devices")
	}
	if _, err := r.DeviceList("cpu", 2); err == nil {
		t.Fatal("DeviceList on no devices")
	}
	if _, err := r.Lookup("0"); err == nil || !strings.Contains(err.Error(), "no devices") {
		t.Fatalf("Lookup: %v", err)
	}
}
