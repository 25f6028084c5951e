package runtime_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/cuda"
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

// noDriverChildEnv marks the child process TestNoDriverFallsBack starts.
const noDriverChildEnv = "RINGACTOR_TEST_NO_DRIVER_CHILD"

// Without a driver, "cuda" is an error wrapping cuda.ErrNoDriver; "auto"
// says why once and goes on with simulated devices. cuda.LoadDriver loads
// once per process, so this runs in a child process whose
// RINGACTOR_LIBCUDA names no library: the other tests keep the real driver.
func TestNoDriverFallsBack(t *testing.T) {
	if os.Getenv(noDriverChildEnv) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNoDriverFallsBack$", "-test.count=1")
		cmd.Env = append(os.Environ(), noDriverChildEnv+"=1", cuda.DriverEnv+"=/nonexistent/libcuda.so.1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	var log bytes.Buffer
	_, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "cuda", Log: &log})
	if !errors.Is(err, ra.ErrBackend) || !errors.Is(err, cuda.ErrNoDriver) || !strings.Contains(err.Error(), "/nonexistent") {
		t.Fatalf("cuda without a driver: %v", err)
	}
	if _, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "cuda", Log: &log}}); !errors.Is(err, cuda.ErrNoDriver) {
		t.Fatalf("New, cuda without a driver: %v", err)
	}
	r, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "auto", SimDevices: 2, Log: &log})
	if err != nil || r.BackendName() != "sim" || len(r.Devices()) != 2 {
		t.Fatal(r, err)
	}
	if !strings.Contains(log.String(), "no GPU to run on") || !strings.Contains(log.String(), "/nonexistent") || strings.Count(log.String(), "\n") != 1 {
		t.Fatalf("log %q", log.String())
	}
}
