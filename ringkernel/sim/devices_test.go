package sim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

func TestParseTopology(t *testing.T) {
	conn, p2p, err := sim.ParseTopology("0-1:nv4, 2-3:NV2,1-2, *:node", 5)
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
		conn, p2p, err := sim.ParseTopology(s, 3)
		if err != nil || conn[0][2].String() != cell || p2p[0][2] != conn[0][2].Peerable() || conn[1][1].Level != rk.LevelSelf {
			t.Errorf("%q: 0→2 is %v (peer %v), %v; want %s", s, conn[0][2], p2p[0][2], err, cell)
		}
	}
	for _, bad := range []string{"0-0", "0-9", "x", "1-", "0-1:nv0", "0-1:fast", "*", "*:x", "0-1:?"} {
		if _, _, err := sim.ParseTopology(bad, 4); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q accepted, or the error does not quote it: %v", bad, err)
		}
	}
}

// Ops with a Go side only, a CUDA source only, and both.
var (
	goOnly   = kernels.Op{Name: "go_only", Go: func(_, _, in, out []float32) (int, error) { return copy(out, in), nil }}
	cudaOnly = kernels.Op{Name: "cuda_only", CUDA: "RA_STAGE(ra_cuda_only) {}"}
	both     = kernels.Op{Name: "both", Go: goOnly.Go, CUDA: cudaOnly.CUDA}
)

// The simulator lists the GPUs its options describe, and registers its
// kind as the one "auto" falls back to.
func TestSimListsItsDevices(t *testing.T) {
	b := &sim.Backend{Devices: 3, Topology: "0-1:nv4,*:sys", Memory: 1 << 30, MemoryOf: map[int]uint64{2: 2 << 30}}
	devs, err := b.ListDevices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 3 {
		t.Fatalf("%d devices, want 3", len(devs))
	}
	for i, d := range devs {
		if d.ID != i || d.Kind != rk.KindGPU || d.Backend != "sim" || !d.MeasuresBusy || len(d.P2P) != 3 || len(d.Topology) != 3 {
			t.Errorf("device %d: %+v", i, d)
		}
	}
	if devs[0].MemoryBytes != 1<<30 || devs[2].MemoryBytes != 2<<30 || !devs[0].P2P[1] || devs[0].P2P[2] || devs[1].Topology[0].String() != "NV4" {
		t.Fatalf("memory, peers or links not as asked: %+v", devs)
	}
	t.Setenv(sim.DevicesEnv, "5")
	if devs, err := sim.New(0).ListDevices(); err != nil || len(devs) != 5 {
		t.Fatalf("%s=5: %d devices, %v", sim.DevicesEnv, len(devs), err)
	}
	t.Setenv(sim.DevicesEnv, "lots")
	if _, err := sim.New(0).ListDevices(); !errors.Is(err, rk.ErrNoDevice) || !strings.Contains(err.Error(), "1 to 64") {
		t.Fatalf("a bad count: %v", err)
	}
	kinds := rk.Kinds()
	if len(kinds) == 0 || kinds[len(kinds)-1].Name != "sim" {
		t.Fatalf("the sim kind is not the last auto tries: %v", kinds)
	}
}

// The CPU engine lists the host's CPU, and reads the host's memory.
func TestCPUListsTheHost(t *testing.T) {
	b := sim.NewCPU(0)
	devs, err := b.ListDevices()
	if err != nil || len(devs) != 1 {
		t.Fatalf("%v, %v", devs, err)
	}
	if d := devs[0]; d.Kind != rk.KindCPU || d.Name != "cpu" || d.Cores < 1 || !d.MeasuresBusy {
		t.Fatalf("the CPU: %+v", d)
	}
	if s := b.Sample(); len(s) > 1 || (len(s) == 1 && s[0].UsedBytes > s[0].TotalBytes) {
		t.Fatalf("sample %+v", s)
	}
	if s := sim.New(2).Sample(); s != nil {
		t.Fatalf("a simulated GPU has nothing to read, got %+v", s)
	}
}

// A simulated GPU stands for a real one: it runs ops with a CUDA source
// (and the Go side it runs them by); the CPU runs any op with a Go side.
func TestSupports(t *testing.T) {
	gpu, cpu := sim.New(2), sim.NewCPU(0)
	for _, c := range []struct {
		b      *sim.Backend
		op     kernels.Op
		refuse string // "" where it runs
	}{
		{gpu, both, ""},
		{gpu, goOnly, "op go_only has only a Go side (no CUDA source), so it cannot run on gpu 1 (sim-1); place it on the CPU"},
		{gpu, cudaOnly, "op cuda_only has no Go side"},
		{cpu, goOnly, ""},
		{cpu, both, ""},
		{cpu, cudaOnly, "so it cannot run on cpu 0 (cpu); place it on a GPU"},
	} {
		err := c.b.Supports(min(1, c.b.Devices-1), c.op)
		if c.refuse == "" {
			if err != nil {
				t.Errorf("%s on %s: %v", c.op.Name, c.b.Name(), err)
			}
			continue
		}
		var u *rk.UnsupportedError
		if !errors.Is(err, rk.ErrUnsupported) || !errors.As(err, &u) || !strings.Contains(err.Error(), c.refuse) {
			t.Errorf("%s on %s: %v; want ErrUnsupported saying %q", c.op.Name, c.b.Name(), err, c.refuse)
		}
	}
	if err := gpu.Supports(2, both); err == nil {
		t.Error("device 2 of a 2-device backend")
	}
}
