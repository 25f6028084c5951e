package runtime_test

import (
	"encoding/json"
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

// A zero Registry answers without panicking.
func TestZeroRegistry(t *testing.T) {
	var r ra.Registry
	if r.CPUDevice().ID != -1 || r.CPUDevice().Name != ra.CPUName || r.GPUs() != nil || r.CPU(0) || r.Connection(0, 1).Level != ra.LevelUnknown {
		t.Fatal("zero registry")
	}
	if _, err := r.Chain(2); err == nil {
		t.Fatal("Chain on no devices")
	}
	if _, err := r.DeviceList("cpu", 2); err == nil { //lint:ignore SA1019 Deprecated, still works for one release
		t.Fatal("DeviceList on no devices")
	}
	if _, err := r.Lookup("0"); err == nil || !strings.Contains(err.Error(), "no devices") {
		t.Fatalf("Lookup: %v", err)
	}
}
