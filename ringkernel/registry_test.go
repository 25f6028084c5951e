package ringkernel_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// simRegistry is a registry of n simulated GPUs joined as topo says, and
// the CPU after them.
func simRegistry(t *testing.T, n int, topo string) *rk.Registry {
	t.Helper()
	devs, err := (&sim.Backend{Devices: n, Topology: topo}).ListDevices()
	if err != nil {
		t.Fatal(err)
	}
	return rk.NewRegistry(rk.Kind{Name: "sim"}, devs, cpuDevice(n), "")
}

// cpuDevice is the CPU as device id.
func cpuDevice(id int) rk.Device {
	return rk.Device{ID: id, Name: rk.CPUName, Kind: rk.KindCPU, MemoryBytes: 1 << 30, P2P: make([]bool, id+1)}
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
	r := rk.NewRegistry(rk.Kind{Name: "sim"}, nil, cpuDevice(0), "")
	if _, err := r.Chain(2); err == nil || !strings.Contains(err.Error(), "place them on the CPU, device 0") {
		t.Errorf("no GPUs: %v", err)
	}
	if _, err := simRegistry(t, 2, "").Chain(0); !errors.Is(err, rk.ErrNoDevice) {
		t.Errorf("Chain(0): %v", err)
	}
}

// Lookup names a device by id or as "cpu"; an unknown one is an error
// saying the ids there are, and how to get more where the kind says.
func TestLookup(t *testing.T) {
	devs, _ := (&sim.Backend{Devices: 1}).ListDevices()
	r := rk.NewRegistry(rk.Kind{Name: "sim", More: "set SimDevices"}, devs, cpuDevice(1), "found one")
	if r.Note() != "found one" || r.BackendName() != "sim" || len(r.Devices()) != 2 || len(r.GPUs()) != 1 {
		t.Fatalf("registry %q %q %v", r.Note(), r.BackendName(), r.Devices())
	}
	if d, err := r.Lookup(" cpu"); err != nil || d.ID != 1 || !r.CPU(1) || r.CPU(0) {
		t.Fatalf("Lookup(cpu) = %+v, %v", d, err)
	}
	if d, err := r.Lookup("0"); err != nil || d.ID != 0 {
		t.Fatalf("Lookup(0) = %+v, %v", d, err)
	}
	for bad, want := range map[string]string{"2": "no such device 2: the GPU is 0 and the CPU is 1 (set SimDevices)", "gpu": `"gpu": name a device by its id or as "cpu"`} {
		if _, err := r.Lookup(bad); !errors.Is(err, rk.ErrNoDevice) || !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(%q): %v; want %s", bad, err, want)
		}
	}
}

// Select takes GPUs meeting the requirements, most memory first, and
// says which requirement ruled the others out.
func TestSelect(t *testing.T) {
	b := &sim.Backend{Devices: 3, Topology: "0-2", MemoryOf: map[int]uint64{2: 32 << 30}}
	devs, err := b.ListDevices()
	if err != nil {
		t.Fatal(err)
	}
	r := rk.NewRegistry(rk.Kind{Name: "sim"}, devs, cpuDevice(3), "")
	got, err := r.Select(rk.Requirements{P2P: true, Count: 2})
	if err != nil || len(got) != 2 || got[0].ID != 2 || got[1].ID != 0 {
		t.Fatalf("Select P2P pair = %v, %v", got, err)
	}
	if _, err := r.Select(rk.Requirements{P2P: true, Count: 3}); !errors.Is(err, rk.ErrNoDevice) || !strings.Contains(err.Error(), "2 of 4 devices meet {MinMemory:0 P2P:true Count:3}") {
		t.Fatalf("Select 3 peers: %v", err)
	}
}

// CPU stands for the CPU's id wherever an id is taken, whatever the
// number of GPUs; Resolve gives the real id and leaves other ids alone.
func TestCPUConstant(t *testing.T) {
	for _, gpus := range []int{1, 3} {
		devs, _ := (&sim.Backend{Devices: gpus}).ListDevices()
		r := rk.NewRegistry(rk.Kind{Name: "sim"}, devs, cpuDevice(gpus), "")
		if r.Resolve(rk.CPU) != gpus || r.Resolve(0) != 0 || r.Resolve(-1) != -1 {
			t.Fatalf("%d GPUs: Resolve(CPU) = %d", gpus, r.Resolve(rk.CPU))
		}
		if d, err := r.Device(rk.CPU); err != nil || d.ID != gpus || d.Kind != rk.KindCPU || !r.CPU(rk.CPU) {
			t.Fatalf("%d GPUs: Device(CPU) = %+v, %v", gpus, d, err)
		}
		if c := r.Connection(0, rk.CPU); c.Level != rk.LevelPHB {
			t.Fatalf("%d GPUs: Connection(0, CPU) = %v, want PHB", gpus, c)
		}
	}
	var empty rk.Registry
	if _, err := empty.Device(rk.CPU); !errors.Is(err, rk.ErrNoDevice) {
		t.Fatalf("an empty registry's CPU: %v", err)
	}
}
