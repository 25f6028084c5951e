package runtime_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	ra "github.com/ringactor/ringactor/runtime"
)

func TestSimDevicesAndTopology(t *testing.T) {
	var log bytes.Buffer
	t.Setenv(ra.SimDevicesEnv, "6")
	t.Setenv(ra.SimP2PEnv, "0-1,2-3")
	r, err := ra.DiscoverDevices(ra.DeviceOptions{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Devices()); n != 6 {
		t.Fatalf("%d devices, want 6", n)
	}
	if !strings.Contains(log.String(), "6 simulated devices (P2P 0-1,2-3)") {
		t.Fatalf("log line %q", log.String())
	}
	if !r.Peer(1, 0) || !r.Peer(2, 3) || r.Peer(1, 2) || r.Peer(0, 0) || r.Peer(0, 9) {
		t.Fatal("topology not as configured")
	}
	if _, err := r.Device(6); !errors.Is(err, ra.ErrNoDevice) || !strings.Contains(err.Error(), "0..5") {
		t.Fatalf("unknown device: %v", err)
	}
	sel, err := r.Select(ra.Requirements{P2P: true, Count: 2})
	if err != nil || sel[0].ID != 0 || sel[1].ID != 1 {
		t.Fatalf("select P2P pair: %v %v", sel, err)
	}
	if _, err := r.Select(ra.Requirements{P2P: true, Count: 3}); !errors.Is(err, ra.ErrNoDevice) {
		t.Fatalf("3 mutual peers do not exist here: %v", err)
	}
	if _, err := r.Select(ra.Requirements{MinMemory: 1 << 50}); err == nil {
		t.Fatal("selected a device with too little memory")
	}
	for _, bad := range []string{"0-0", "0-9", "x", "1-"} {
		if _, err := ra.DiscoverDevices(ra.DeviceOptions{SimP2P: bad, Log: &log}); err == nil {
			t.Errorf("topology %q accepted", bad)
		}
	}
	t.Setenv(ra.SimDevicesEnv, "zero")
	if _, err := ra.DiscoverDevices(ra.DeviceOptions{Log: &log}); err == nil {
		t.Fatal("bad device count accepted")
	}
	if _, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "opencl", Log: &log}); !errors.Is(err, ra.ErrBackend) {
		t.Fatalf("unknown backend: %v", err)
	}
}

// Without a usable GPU, "cuda" is an error saying why; "auto" says so once
// and goes on with simulated devices.
func TestNoGPUFallsBack(t *testing.T) {
	var log bytes.Buffer
	if _, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "cuda", Log: &log}); !errors.Is(err, ra.ErrBackend) {
		t.Fatalf("cuda without a CUDA backend: %v", err)
	}
	r, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "auto", Log: &log})
	if err != nil || r.BackendName() != "sim" {
		t.Fatal(r, err)
	}
	if !strings.Contains(log.String(), "no GPU to run on") || strings.Count(log.String(), "\n") != 1 {
		t.Fatalf("log %q", log.String())
	}
}
