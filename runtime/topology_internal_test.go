package runtime

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// NVML-shaped input: an HGX-like box where GPUs 0 and 1 share four direct
// NVLinks, GPUs 2 and 3 each have NVLinks to a switch (not a GPU), and the
// PCIe levels NVML reports for the rest map to nvidia-smi's terms.
func TestConnectFromNVML(t *testing.T) {
	pci := func(bus int) pciAddr { return pciAddr{bus: bus} }
	sw := pci(0x90)
	gpus := []nvmlGPU{
		{Device: Device{ID: 0}, pci: pci(0x10), hasPCI: true, ancestor: []int{-1, 10, 20, 50, 30}, nvlinks: []pciAddr{pci(0x20), pci(0x20), pci(0x20), pci(0x20)}},
		{Device: Device{ID: 1}, pci: pci(0x20), hasPCI: true, ancestor: []int{10, -1, 40, 0, -1}, nvlinks: []pciAddr{pci(0x10), pci(0x10), pci(0x10), pci(0x10)}},
		{Device: Device{ID: 2}, pci: pci(0x30), hasPCI: true, ancestor: []int{20, 40, -1, 50, 50}, nvlinks: []pciAddr{sw, sw, sw}},
		{Device: Device{ID: 3}, pci: pci(0x40), hasPCI: true, ancestor: []int{50, 0, 50, -1, 50}, nvlinks: []pciAddr{sw, sw, sw, sw, sw, sw}},
		{Device: Device{ID: 4}, pci: pci(0x50), hasPCI: true, ancestor: []int{30, 30, 50, 50, -1}},
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

func TestParseTopology(t *testing.T) {
	conn, p2p, err := parseTopology("0-1:nv4, 2-3:NV2,1-2, *:node", 5)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for i := range conn {
		var cells []string
		for j := range conn[i] {
			cell := conn[i][j].String()
			if p2p[i][j] {
				cell += "+"
			}
			cells = append(cells, cell)
		}
		rows = append(rows, strings.Join(cells, " "))
	}
	want := []string{
		"X NV4+ NODE NODE NODE",
		"NV4+ X PIX+ NODE NODE",
		"NODE PIX+ X NV2+ NODE",
		"NODE NODE NV2+ X NODE",
		"NODE NODE NODE NODE X",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("topology:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	for s, cell := range map[string]string{"": "PIX", "all": "PIX", "none": "SYS", "0-1": "SYS", "*:pxb": "PXB"} {
		conn, p2p, err := parseTopology(s, 3)
		if err != nil || conn[0][2].String() != cell || p2p[0][2] != conn[0][2].Peerable() || conn[1][1].Level != LevelSelf {
			t.Errorf("%q: 0→2 is %v (peer %v), %v; want %s", s, conn[0][2], p2p[0][2], err, cell)
		}
	}
	for _, bad := range []string{"0-0", "0-9", "x", "1-", "0-1:nv0", "0-1:fast", "*", "*:x", "0-1:?"} {
		if _, _, err := parseTopology(bad, 4); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q accepted, or the error does not quote it: %v", bad, err)
		}
	}
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
		devs, err := simDevices(DeviceOptions{SimDevices: c.gpus, SimP2P: c.topo})
		if err != nil {
			t.Fatal(err)
		}
		r := newRegistry("sim", devs, "")
		got, err := r.Chain(c.n)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%d GPUs %q: Chain(%d) = %v, %v; want %v", c.gpus, c.topo, c.n, got, err, c.want)
		}
	}
	r := newRegistry("sim", nil, "")
	if _, err := r.Chain(2); err == nil || !strings.Contains(err.Error(), "place them on the CPU, device 0") {
		t.Errorf("no GPUs: %v", err)
	}
}

func TestDeviceList(t *testing.T) {
	devs, err := simDevices(DeviceOptions{SimDevices: 3, SimP2P: "1-2:nv2,*:sys"})
	if err != nil {
		t.Fatal(err)
	}
	r := newRegistry("sim", devs, "")
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
