package runtime_test

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	ra "github.com/ringactor/ringactor/runtime"
)

func TestConnectionText(t *testing.T) {
	for _, s := range []string{"X", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS", "?"} {
		c, err := ra.ParseConnection(strings.ToLower(s))
		if err != nil || c.String() != s {
			t.Errorf("ParseConnection(%q) = %v, %v", s, c, err)
		}
		b, _ := json.Marshal(c)
		var back ra.Connection
		if err := json.Unmarshal(b, &back); err != nil || back != c {
			t.Errorf("%s through JSON: %s → %v, %v", s, b, back, err)
		}
	}
	order := []string{"X", "NV8", "NV4", "PIX", "PXB", "PHB", "NODE", "SYS", "?"}
	for i := 1; i < len(order); i++ {
		a, _ := ra.ParseConnection(order[i-1])
		b, _ := ra.ParseConnection(order[i])
		if !a.Faster(b) || b.Faster(a) {
			t.Errorf("%s should be faster than %s", a, b)
		}
	}
}

func TestDeviceList(t *testing.T) {
	r, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "sim", SimDevices: 3, SimP2P: "1-2:nv2,*:sys", Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
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
	var r ra.Registry
	if r.CPUDevice().ID != -1 || r.CPUDevice().Name != ra.CPUName || r.GPUs() != nil || r.CPU(0) || r.Connection(0, 1).Level != ra.LevelUnknown {
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
