package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/internal/cudaemu"
	"github.com/ringactor/ringactor/internal/demo"
	ra "github.com/ringactor/ringactor/runtime"
)

func TestSimDevicesAndTopology(t *testing.T) {
	var log bytes.Buffer
	t.Setenv(ra.SimDevicesEnv, "6")
	t.Setenv(ra.SimP2PEnv, "0-1,2-3")
	r, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "sim", Log: &log}) // auto would take a GPU where there is one
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.GPUs()); n != 6 {
		t.Fatalf("%d devices, want 6", n)
	}
	if !strings.Contains(log.String(), "6 simulated devices (P2P 0-1,2-3)") {
		t.Fatalf("log line %q", log.String())
	}
	if !r.Peer(1, 0) || !r.Peer(2, 3) || r.Peer(1, 2) || r.Peer(0, 0) || r.Peer(0, 9) {
		t.Fatal("topology not as configured")
	}
	if _, err := r.Device(7); !errors.Is(err, ra.ErrNoDevice) || !strings.Contains(err.Error(), "GPUs are 0..5 and the CPU is 6") {
		t.Fatalf("unknown device: %v", err)
	}
	// The CPU comes after the GPUs, with its cores, and placement treats
	// it as host memory.
	cpu, err := r.Lookup("cpu")
	if err != nil || cpu.ID != 6 || cpu.Kind != ra.KindCPU || cpu.Cores < 1 || !r.CPU(6) || r.CPU(5) || r.Peer(6, 0) || r.Peer(0, 6) {
		t.Fatalf("the CPU device: %+v, %v", cpu, err)
	}
	if d, err := r.Lookup(" 3"); err != nil || d.ID != 3 || d.Kind != ra.KindGPU {
		t.Fatalf("Lookup(3) = %+v, %v", d, err)
	}
	for _, bad := range []string{"gpu", "9", "-1", ""} {
		if _, err := r.Lookup(bad); !errors.Is(err, ra.ErrNoDevice) || !strings.Contains(err.Error(), "the CPU is 6") {
			t.Errorf("Lookup(%q): %v", bad, err)
		}
	}
	if !strings.Contains(log.String(), "the CPU (") {
		t.Errorf("log line %q does not mention the CPU", log.String())
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
		if _, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "sim", SimP2P: bad, Log: &log}); err == nil {
			t.Errorf("topology %q accepted", bad)
		}
	}
	t.Setenv(ra.SimDevicesEnv, "zero")
	if _, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "sim", Log: &log}); err == nil {
		t.Fatal("bad device count accepted")
	}
	if _, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "opencl", Log: &log}); !errors.Is(err, ra.ErrBackend) {
		t.Fatalf("unknown backend: %v", err)
	}
}

// childEnv names the test a child process started by inChild runs.
const childEnv = "RINGACTOR_TEST_CHILD"

// inChild runs test in a child process with RINGACTOR_LIBCUDA=lib and
// reports whether this is the child (which then runs the test's body).
// cuda.LoadDriver loads once per process, so a test of another driver
// library runs in a process of its own and the other tests keep theirs.
func inChild(t *testing.T, lib string) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name(), cuda.DriverEnv+"="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	return false
}

// Without a driver, "cuda" is an error wrapping cuda.ErrNoDriver; "auto"
// says why once and goes on with simulated devices. cuda.LoadDriver loads
// once per process, so this runs in a child process whose
// RINGACTOR_LIBCUDA names no library: the other tests keep the real driver.
func TestNoDriverFallsBack(t *testing.T) {
	if !inChild(t, "/nonexistent/libcuda.so.1") {
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
	if err != nil || r.BackendName() != "sim" || len(r.GPUs()) != 2 {
		t.Fatal(r, err)
	}
	if !strings.Contains(log.String(), "no GPU to run on") || !strings.Contains(log.String(), "/nonexistent") || strings.Count(log.String(), "\n") != 1 {
		t.Fatalf("log %q", log.String())
	}
}

// The CUDA backend lists its devices through the driver: here the
// emulated one (internal/cudaemu) with two GPUs unlike each other, so the
// listing and the backend's lifecycle are tested without a GPU.
func TestCUDADevicesThroughTheDriver(t *testing.T) {
	lib := os.Getenv(cuda.DriverEnv)
	if os.Getenv(childEnv) != t.Name() {
		if _, err := cudaemu.Compiler(); err != nil {
			t.Skipf("skipping: the emulated driver cannot be built: %v", err)
		}
		dir := cudaemu.TestDir()
		if dir == "" {
			dir = t.TempDir()
		}
		var err error
		if lib, err = cudaemu.Build(dir, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, kv := range [][2]string{{"RINGACTOR_EMU_DEVICES", "2"}, {"RINGACTOR_EMU_SMS", "4,2"}, {"RINGACTOR_EMU_MEMORY_MIB", "16384,8192"},
			{"RINGACTOR_EMU_CC", "9.0,8.6"}, {"RINGACTOR_EMU_PEERS", "all"}, {"RINGACTOR_EMU_INIT_RESULT", ""}} {
			t.Setenv(kv[0], kv[1]) // for the child
		}
	}
	if !inChild(t, lib) {
		return
	}
	var log bytes.Buffer
	for _, backend := range []string{"cuda", "auto"} {
		r, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: backend, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		devs := r.GPUs()
		if r.BackendName() != "cuda" || len(devs) != 2 || r.CPUDevice().ID != 2 {
			t.Fatalf("%s: %s backend with %d devices", backend, r.BackendName(), len(devs))
		}
		d := devs[1]
		if d.Name != "ringactor emulated GPU 1" || d.Backend != "cuda" || d.Source != "driver" || d.MemoryBytes != 8<<30 || d.ComputeCapability != "8.6" || d.SMs != 2 || !r.Peer(0, 1) {
			t.Fatalf("%s: device 1: %+v", backend, d)
		}
	}
	if line := log.String(); !strings.Contains(line, "using 2 CUDA GPU(s)") || strings.Contains(line, "simulated") {
		t.Fatalf("log %q", line)
	}
	// The emulator runs the kernels: a pipeline builds across both
	// devices, and Close releases it and the backend.
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "cuda", Log: io.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rt.Build(ctx, demo.Guide("emulated", [3]int{0, 0, 1})); err != nil {
		t.Fatalf("build on the emulated driver: %v", err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
}
