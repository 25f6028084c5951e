package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
)

// TestP2PRows measures the P2P rows on three simulated devices, where
// only 0 and 1 are peers: every ordered pair at every size has a staged
// row, the pairs with peer access (and the diagonal) a peer row compared
// with it, and the matrices show both.
func TestP2PRows(t *testing.T) {
	var progress strings.Builder
	rows := small(t, Options{Only: "p2p/", Progress: &progress, Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 3, SimP2P: "0-1"}})
	byName := map[string]Row{}
	for _, r := range rows {
		if _, dup := byName[r.Name]; dup && r.Baseline == "" {
			t.Errorf("row %s twice", r.Name)
		}
		byName[r.Name] = r
		if r.MsgsPerSec <= 0 || r.Backend != "sim" || !strings.Contains(r.Note, "simulated") {
			t.Errorf("row %+v: want msgs/s > 0 on sim, noted as simulated", r)
		}
		if want := r.MsgsPerSec * float64(r.Bytes) / 1e9; r.GBPerSec != want || r.Bytes == 0 {
			t.Errorf("row %s: %g GB/s for %d-byte messages at %g msgs/s, want %g", r.Name, r.GBPerSec, r.Bytes, r.MsgsPerSec, want)
		}
	}
	peers := map[[2]int]bool{{0, 0}: true, {1, 1}: true, {2, 2}: true, {0, 1}: true, {1, 0}: true}
	want := 0
	for _, sz := range p2pSizes {
		for from := range 3 {
			for to := range 3 {
				staged := p2pName(from, to, sz.name, "staged")
				if r, ok := byName[staged]; !ok || r.Bytes != sz.bytes {
					t.Errorf("no row %s of %d-byte messages: %+v", staged, sz.bytes, r)
				}
				want++
				peer := p2pName(from, to, sz.name, "peer")
				r, ok := byName[peer]
				if ok != peers[[2]int{from, to}] {
					t.Errorf("row %s present %v, want %v (peers 0-1 only)", peer, ok, !ok)
					continue
				}
				if !ok {
					continue
				}
				want++
				if r.Baseline != staged || r.Ratio != r.MsgsPerSec/byName[staged].MsgsPerSec {
					t.Errorf("row %s: baseline %q ratio %g, want %s and peer/staged %g", peer, r.Baseline, r.Ratio, staged, r.MsgsPerSec/byName[staged].MsgsPerSec)
				}
			}
		}
	}
	if len(rows) != want {
		t.Errorf("%d rows, want %d", len(rows), want)
	}
	if !strings.Contains(progress.String(), "p2p rows on 3 sim devices") {
		t.Errorf("progress does not say which devices: %q", progress.String())
	}

	var out strings.Builder
	Print(&out, rows)
	for _, sz := range p2pSizes {
		if !strings.Contains(out.String(), fmt.Sprintf("p2p %s messages: GB/s over a peer link / over a host-staged link", sz.name)) {
			t.Errorf("no %s matrix in\n%s", sz.name, out.String())
		}
	}
	// Row 2 of the 64B matrix: no peer to 0 or 1, its own memory to itself.
	matrix := out.String()[strings.Index(out.String(), "p2p 64B messages"):]
	var row2 string
	for _, l := range strings.Split(matrix, "\n") {
		if strings.HasPrefix(l, "2 ") {
			row2 = l
			break
		}
	}
	if strings.Count(row2, "- / ") != 2 || strings.Count(row2, "x)") != 1 {
		t.Errorf("64B matrix row 2 %q: want two staged-only cells and one peer/staged ratio", row2)
	}
}

func TestP2POnly(t *testing.T) {
	devs := ra.DeviceOptions{Backend: "sim", SimDevices: 2}
	rows := small(t, Options{Only: "p2p/1-0/64KiB", Devices: devs})
	if len(rows) != 2 || rows[0].Name != "p2p/1-0/64KiB/peer" || rows[1].Name != "p2p/1-0/64KiB/staged" {
		t.Fatalf("-only p2p/1-0/64KiB ran %+v", rows)
	}
	_, err := Run(context.Background(), Options{Only: "p2p/7-", Devices: devs})
	if !errors.Is(err, ErrNothingSelected) || !strings.Contains(err.Error(), "p2p/0-0/64B/peer ... p2p/1-1/64KiB/peer") {
		t.Fatalf("-only p2p/7-: %v", err)
	}
}

// TestP2PRowsOnTheGPUs measures the P2P rows through the CUDA backend:
// under the emulated driver in make test (RINGACTOR_TEST_BACKEND=cuda),
// on a GPU in the GPU bundle. Every ordered pair of GPUs gets its rows,
// the diagonal a peer (device-local) row against the staged one.
func TestP2PRowsOnTheGPUs(t *testing.T) {
	if rttest.Backend() != rttest.CUDA {
		t.Skip("the P2P rows on the CUDA backend run with RINGACTOR_TEST_BACKEND=cuda (make test runs them under the emulated driver)")
	}
	cudatest.Device(t, 0)
	rows := small(t, Options{Only: "p2p/", Devices: ra.DeviceOptions{Backend: "cuda"}})
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "cuda", Log: io.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	reg := rt.Registry()
	rt.Close()
	byName := map[string]Row{}
	for _, r := range rows {
		byName[r.Name] = r
		if r.Backend != "cuda" || r.MsgsPerSec <= 0 || r.GBPerSec <= 0 {
			t.Errorf("row %+v: want msgs/s and GB/s > 0 on cuda", r)
		}
		if cudatest.Emulated() != strings.Contains(r.Note, "emulated") {
			t.Errorf("row %s: note %q on an emulated driver: %v", r.Name, r.Note, cudatest.Emulated())
		}
	}
	for _, sz := range p2pSizes {
		for _, from := range reg.GPUs() {
			for _, to := range reg.GPUs() {
				if _, ok := byName[p2pName(from.ID, to.ID, sz.name, "staged")]; !ok {
					t.Errorf("no staged row for %d→%d at %s", from.ID, to.ID, sz.name)
				}
				peer, ok := byName[p2pName(from.ID, to.ID, sz.name, "peer")]
				if want := from.ID == to.ID || reg.Peer(from.ID, to.ID); ok != want {
					t.Errorf("peer row for %d→%d at %s: %v, want %v", from.ID, to.ID, sz.name, ok, want)
				} else if ok && peer.Ratio <= 0 {
					t.Errorf("row %s: ratio %g", peer.Name, peer.Ratio)
				}
			}
		}
	}
}

// TestPipelineRowOnTheGPUs measures pipeline/cuda-3stage, the guide's
// pipeline through the CUDA backend (the device loop, under the emulated
// driver in make test), against the same pipeline on simulated devices.
func TestPipelineRowOnTheGPUs(t *testing.T) {
	if rttest.Backend() != rttest.CUDA {
		t.Skip("pipeline/cuda-3stage runs with RINGACTOR_TEST_BACKEND=cuda (make test runs it under the emulated driver)")
	}
	cudatest.Device(t, 0)
	rows := small(t, Options{Only: "pipeline/cuda", Devices: ra.DeviceOptions{Backend: "cuda"}})
	if len(rows) != 2 {
		t.Fatalf("%d rows, want the candidate and its baseline: %+v", len(rows), rows)
	}
	c, b := rows[0], rows[1]
	if c.Name != "pipeline/cuda-3stage" || c.Backend != "cuda" || c.Baseline != "pipeline/sim-3stage" || c.Ratio <= 0 || c.MsgsPerSec <= 0 {
		t.Errorf("candidate row %+v", c)
	}
	if b.Name != "pipeline/sim-3stage" || b.Backend != "sim" || b.MsgsPerSec <= 0 {
		t.Errorf("baseline row %+v", b)
	}
	if cudatest.Emulated() != strings.Contains(c.Note, "emulated") {
		t.Errorf("note %q on an emulated driver: %v", c.Note, cudatest.Emulated())
	}
}

// TestAllReduceRowsOnTheGPUs measures allreduce/cuda-device-links against
// allreduce/cuda-host-hops, both through the CUDA backend (the device loop,
// under the emulated driver in make test), in the same rounds.
func TestAllReduceRowsOnTheGPUs(t *testing.T) {
	if rttest.Backend() != rttest.CUDA {
		t.Skip("allreduce/cuda-* run with RINGACTOR_TEST_BACKEND=cuda (make test runs them under the emulated driver)")
	}
	cudatest.Device(t, 0)
	rows := small(t, Options{Only: "allreduce/cuda", Devices: ra.DeviceOptions{Backend: "cuda"}})
	if len(rows) != 2 {
		t.Fatalf("%d rows, want the candidate and its baseline: %+v", len(rows), rows)
	}
	c, b := rows[0], rows[1]
	if c.Name != "allreduce/cuda-device-links" || c.Backend != "cuda" || c.Baseline != "allreduce/cuda-host-hops" || c.Ratio <= 0 || c.MsgsPerSec <= 0 || c.P50 <= 0 {
		t.Errorf("candidate row %+v", c)
	}
	if b.Name != "allreduce/cuda-host-hops" || b.Backend != "cuda" || b.MsgsPerSec <= 0 {
		t.Errorf("baseline row %+v", b)
	}
	if cudatest.Emulated() != strings.Contains(c.Note, "emulated") || !strings.Contains(c.Note, "floats of each participant's vector") {
		t.Errorf("note %q on an emulated driver: %v", c.Note, cudatest.Emulated())
	}
}

// Without CUDA devices there is no pipeline/cuda-3stage row, and the run
// says so.
func TestPipelineRowNeedsCUDA(t *testing.T) {
	var progress strings.Builder
	_, err := Run(context.Background(), Options{Only: "pipeline/cuda", Quick: true, Scale: 1e-6, Progress: &progress, Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 1}})
	if !errors.Is(err, ErrNothingSelected) {
		t.Errorf("err %v, want ErrNothingSelected", err)
	}
	if !strings.Contains(progress.String(), "pipeline/cuda-3stage left out") {
		t.Errorf("progress does not say why: %q", progress.String())
	}
}
