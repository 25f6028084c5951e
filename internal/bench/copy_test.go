package bench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
)

// TestCopyRows: -only copy/ measures a row for every ordered pair of the
// runtime's devices (the GPUs and the CPU, the diagonal too) at every
// size from 1 KiB to 64 MiB, with GB/s and the path the topology gives
// the pair (peer 0-1, staged 0-2 and 1-2, host to and from the CPU,
// local on the diagonal), labelled as simulated; the table shows them.
// With RINGACTOR_TEST_BACKEND=cuda it runs on the CUDA backend's GPUs
// (make test: four emulated GPUs, peers 0-1), labelled as emulated.
func TestCopyRows(t *testing.T) {
	opts := ra.DeviceOptions{Backend: "sim", SimDevices: 3, SimP2P: "0-1"}
	if rttest.Backend() == rttest.CUDA {
		cudatest.Device(t, 0)
		opts = ra.DeviceOptions{Backend: "cuda"}
	}
	rows := small(t, Options{Only: "copy/", Devices: opts})
	rt := rttest.New(t, opts).RT
	reg := rt.Registry()
	backend := reg.BackendName()
	byName := map[string]Row{}
	for _, r := range rows {
		if !strings.HasPrefix(r.Name, "copy/") {
			t.Errorf("row %s under -only copy/", r.Name)
		}
		byName[r.Name] = r
	}
	if want := len(reg.Devices()) * len(reg.Devices()) * len(copySizes); len(rows) != want {
		t.Errorf("%d rows, want %d: %d devices squared, %d sizes", len(rows), want, len(reg.Devices()), len(copySizes))
	}
	if copySizes[0].bytes != 1<<10 || copySizes[len(copySizes)-1].bytes != 64<<20 {
		t.Errorf("sizes %v, want 1 KiB to 64 MiB", copySizes)
	}
	paths := map[string]bool{}
	for _, sz := range copySizes {
		for _, from := range reg.Devices() {
			for _, to := range reg.Devices() {
				name := copyName(backend, from.ID, to.ID, sz.name)
				r, ok := byName[name]
				if !ok {
					t.Errorf("no row %s", name)
					continue
				}
				want := "staged"
				switch {
				case from.ID == to.ID:
					want = "local"
				case reg.CPU(from.ID) || reg.CPU(to.ID):
					want = "host"
				case reg.Peer(from.ID, to.ID):
					want = "peer"
				}
				paths[r.Path] = true
				if r.Path != want || r.Bytes != sz.bytes || r.GBPerSec <= 0 || r.Backend != backend {
					t.Errorf("row %+v: want path %s, %d bytes, GB/s > 0, backend %s", r, want, sz.bytes, backend)
				}
				if label := map[bool]string{true: "emulated", false: "simulated"}[backend == "cuda"]; !strings.Contains(r.Note, label) {
					t.Errorf("row %s: note %q, want it to say %s", name, r.Note, label)
				}
			}
		}
	}
	if backend == "sim" && len(paths) != 4 {
		t.Errorf("paths seen %v, want peer, staged, host and local", paths)
	}
	var table strings.Builder
	Print(&table, rows)
	for _, sz := range copySizes {
		if !strings.Contains(table.String(), fmt.Sprintf("copy %s buffers: GB/s and path on %s", sz.name, backend)) {
			t.Errorf("the table has no %s copy matrix:\n%s", sz.name, table.String())
		}
	}
}
