package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/internal/rttest"
)

// backend is the example's -backend for the backend under test: sim, or
// the CUDA backend (a GPU, or the emulated driver with four devices).
func backend(t *testing.T) string {
	t.Helper()
	switch b := rttest.Backend(); b {
	case rttest.Sim:
		return b
	case rttest.CUDA:
		cudatest.NVRTC(t) // the op's PTX comes from NVRTC, on a GPU and over the emulator alike
		if os.Getenv(cuda.DriverEnv) != "" && os.Getenv("RINGACTOR_EMU_DEVICES") == "" {
			t.Setenv("RINGACTOR_EMU_DEVICES", "4") // read when the driver initialises
		}
		return b
	default:
		t.Skipf("the example runs on simulated GPUs or CUDA GPUs, not on %s", b)
		return ""
	}
}

// The example runs end to end on the backend under test (sim, or the
// user op's CUDA source over the emulated driver under make test): every
// replica's energy in every round and every swap decision agree with the
// single-goroutine reference, each pair of neighbouring temperatures is
// attempted every other round, swaps happen (the coordinator checks that
// each replica ran at the temperature the exchanges gave it), and the
// trajectory is the seed's: the same seed gives the same digest, another
// seed another.
func TestTemperingExampleRuns(t *testing.T) {
	b := backend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// One runtime for the three runs (a runtime's first build opens the
	// devices, seconds over the emulated driver): each run's replicas are
	// new stages, whose state starts at zero, so the same seed must still
	// give the same trajectory.
	rt, err := newRuntime(b)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	o := options{backend: b, replicas: 8, size: 16, rounds: 60, sweeps: 5, seed: 1, betaMin: 0.3, betaMax: 0.55}
	runOnce := func(o options) (summary, string) {
		t.Helper()
		var out strings.Builder
		s, err := runOn(ctx, rt, o, &out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		return s, out.String()
	}
	s1, out := runOnce(o)
	t.Logf("\n%s", out)
	want := []string{fmt.Sprintf("tempering on %s: 8 replicas of a 16x16 Ising model on devices ", b),
		"pair    beta    beta  attempts  accepted  rate", "temperature    beta  <E>/site  <|M|>/site",
		"trajectory digest ", "checked 480 energies and 210 swap decisions against the single-goroutine reference: 0 mismatches"}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
	if len(s1.Devices) < 2 {
		t.Errorf("replicas on devices %v: want several", s1.Devices)
	}
	if s1.Mismatches != 0 || len(s1.Pairs) != 7 {
		t.Fatalf("%d mismatches, %d pairs", s1.Mismatches, len(s1.Pairs))
	}
	accepted := 0
	for _, p := range s1.Pairs {
		if p.Attempts != 30 || p.Accepted > p.Attempts {
			t.Errorf("pair %d-%d: %d of %d accepted, want 30 attempts (every other round)", p.T, p.T+1, p.Accepted, p.Attempts)
		}
		accepted += p.Accepted
		row := fmt.Sprintf("%d-%d  %.4f  %.4f        30        %2d  %.2f", p.T, p.T+1, s1.Betas[p.T], s1.Betas[p.T+1], p.Accepted, float64(p.Accepted)/30)
		if !strings.Contains(out, row) {
			t.Errorf("the table lacks the row %q:\n%s", row, out)
		}
	}
	if accepted == 0 {
		t.Fatal("no swap accepted: the exchange was not exercised")
	}
	if !strings.Contains(out, fmt.Sprintf("trajectory digest %016x\n", s1.Digest)) {
		t.Fatalf("digest %016x not printed:\n%s", s1.Digest, out)
	}
	s2, _ := runOnce(o)
	if s2.Digest != s1.Digest {
		t.Errorf("the same seed gave digests %016x and %016x", s1.Digest, s2.Digest)
	}
	o.seed = 2
	s3, _ := runOnce(o)
	if s3.Digest == s1.Digest {
		t.Errorf("seeds 1 and 2 gave the same digest %016x", s1.Digest)
	}

	for _, bad := range []options{
		{backend: b, replicas: 1, size: 16, rounds: 1, sweeps: 1, betaMin: 0.3, betaMax: 0.5},
		{backend: b, replicas: 4, size: 65, rounds: 1, sweeps: 1, betaMin: 0.3, betaMax: 0.5},
		{backend: b, replicas: 4, size: 16, rounds: 1, sweeps: 1 << 16, betaMin: 0.3, betaMax: 0.5},
		{backend: b, replicas: 4, size: 16, rounds: 1, sweeps: 1, betaMin: 0.5, betaMax: 0.3},
		{backend: b, replicas: 4, size: 16, rounds: 1, sweeps: 1, devices: 99, betaMin: 0.3, betaMax: 0.5},
	} {
		if _, err := run(ctx, bad, new(strings.Builder)); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// The op's Go reference is the Metropolis algorithm it says it is: at a
// high β from a hot start the lattice orders (the energy falls toward the
// ground state's -2L²), at β near 0 every flip is accepted; and a message
// it cannot read is refused.
func TestMetropolisReference(t *testing.T) {
	const L = 8
	state := make([]float32, stateFloats)
	out := make([]float32, 3)
	p4, p8 := acceptance(2)
	if _, err := metropolis([]float32{L}, state, []float32{p4, p8, 1, 0}, out); err != nil { // the hot start alone
		t.Fatal(err)
	}
	e0 := out[0]
	if e0 < -L*L/2 {
		t.Errorf("a hot start's energy %v: want near 0", e0)
	}
	for r := range 20 {
		if _, err := metropolis([]float32{L}, state, []float32{p4, p8, float32(r + 2), 10}, out); err != nil {
			t.Fatal(err)
		}
	}
	if out[0] > -1.5*L*L || out[0] >= e0 || int(out[0])%2 != 0 {
		t.Errorf("β=2 after 200 sweeps: E %v (from %v), want near %d", out[0], e0, -2*L*L)
	}
	state = make([]float32, stateFloats)
	if _, err := metropolis([]float32{L}, state, []float32{1, 1, 7, 1}, out); err != nil {
		t.Fatal(err)
	}
	if out[2] != L*L {
		t.Errorf("β=0: %v flips of %d", out[2], L*L)
	}
	for _, in := range [][]float32{{1, 1, 7}, {1, 1, 0.5, 1}, {1, 1, 1 << 24, 1}, {1, 1, 7, -1}} {
		if _, err := metropolis([]float32{L}, state, in, out); err == nil {
			t.Errorf("message %v accepted", in)
		}
	}
}
