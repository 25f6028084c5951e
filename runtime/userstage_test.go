package runtime_test

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/kernels"
	ra "github.com/ringactor/ringactor/runtime"
)

// userOps registers a fresh pair of user ops (a fresh name per run, so
// -count=N registers anew), each with its CUDA source and its Go
// reference: softplus (params a, b: log1p(exp(a*x)) + b per element, the
// host's libm on the emulated driver, CUDA's on a GPU) and a stateful
// running count and maximum ([count, max] of every element so far).
func userOps(t *testing.T) (softplus, running kernels.Op) {
	t.Helper()
	n := userOpRuns.Add(1)
	sp := fmt.Sprintf("user.softplus_%d", n)
	softplus = kernels.Op{
		Name: sp, Params: 2,
		Go: func(p, _, in, out []float32) (int, error) {
			if len(in) > len(out) {
				return 0, kernels.ErrOutputTooSmall
			}
			for i, x := range in {
				out[i] = float32(math.Log1p(math.Exp(float64(p[0]*x)))) + p[1]
			}
			return len(in), nil
		},
		CUDA: `#include "ringactor.cuh"
RA_STAGE(` + kernels.Symbol(sp) + `) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) out[i] = log1pf(expf(params[0] * in[i])) + params[1];
    return n;
}
`,
	}
	rn := fmt.Sprintf("user.running_%d", n)
	running = kernels.Op{
		Name: rn, StateFloats: 2,
		Go: func(_, s, in, out []float32) (int, error) {
			if len(out) < 2 {
				return 0, kernels.ErrOutputTooSmall
			}
			s[0]++
			for _, x := range in {
				if x > s[1] {
					s[1] = x
				}
			}
			out[0], out[1] = s[0], s[1]
			return 2, nil
		},
		CUDA: `#include "ringactor.cuh"
RA_STAGE(` + kernels.Symbol(rn) + `) {
    if (out_cap < 2) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    state[0] += 1.0f;
    for (int i = 0; i < n; i++)
        if (in[i] > state[1]) state[1] = in[i];
    out[0] = state[0];
    out[1] = state[1];
    return 2;
}
`,
	}
	for _, op := range []kernels.Op{softplus, running} {
		if err := kernels.Register(op); err != nil {
			t.Fatal(err)
		}
	}
	return softplus, running
}

var userOpRuns atomic.Int64

// A user's own CUDA stages, registered with their Go references, run on
// the devices under test and agree with the references on every result:
// on sim the references themselves run; on the CUDA backend the CUDA
// source, compiled by NVRTC for a GPU, or (over the emulated driver, as
// make test runs it) built by the host C++ compiler through the shim the
// built-in ops use, so a user's stage is checked in CI without a GPU.
func TestUserCUDAStagesMatchTheirGoReferences(t *testing.T) {
	if onCUDA() {
		cudatest.NVRTC(t) // the PTX comes from NVRTC, on a GPU and over the emulator alike
	}
	e := deviceEnv(t)
	softplus, running := userOps(t)
	params := []float32{0.75, -0.25}
	spec := ra.PipelineSpec{Name: "user-stages", Stages: []ra.StageSpec{
		{Name: "softplus", Op: softplus.Name, Params: params, Device: testDevice(0)},
		// On its own device: a user op's module loads before ring kernels
		// run on the device (ringkernel/cuda refuses it after).
		{Name: "running", Op: running.Name, Stateful: true, Device: testDevice(1)},
	}}
	var mu sync.Mutex
	got := map[uint64][]float32{}
	spec.Deliver.Func = func(r ra.Result) { mu.Lock(); got[r.ID] = r.Floats; mu.Unlock() }
	p := buildStarted(t, e.RT, spec)

	// The reference: both Go functions, in the order the stateful stage
	// sees the messages (one sender, so the order they are sent in).
	const msgs, width = 2000, 7
	want := map[uint64][]float32{}
	state := make([]float32, running.StateFloats)
	batch := make([]ra.Data, 0, 100)
	for i := range msgs {
		in := make([]float32, width)
		for j := range in {
			in[j] = float32((i*width+j)%41-20) / 4 // -5 .. 5
		}
		mid := make([]float32, width)
		if _, err := softplus.Go(params, nil, in, mid); err != nil {
			t.Fatal(err)
		}
		out := make([]float32, 2)
		if _, err := running.Go(nil, state, mid, out); err != nil {
			t.Fatal(err)
		}
		id := uint64(i + 1)
		want[id] = out
		batch = append(batch, ra.Data{ID: id, Floats: in})
		if len(batch) == cap(batch) {
			if n, err := p.SendBatch(ctxT(t), batch); err != nil || n != len(batch) {
				t.Fatal(n, err)
			}
			batch = batch[:0]
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if len(got) != msgs {
		t.Fatalf("%d results for %d messages", len(got), msgs)
	}
	mismatches := 0
	for id, w := range want {
		g := got[id]
		// The count is exact; the maximum of softplus agrees to a few
		// ulps (libm or CUDA's math against Go's, in float64 then rounded).
		if len(g) != 2 || g[0] != w[0] || math.Abs(float64(g[1]-w[1])) > 1e-5*math.Abs(float64(w[1]))+1e-6 {
			if mismatches++; mismatches <= 5 {
				t.Errorf("message %d: %v, want %v", id, g, w)
			}
		}
	}
	if mismatches > 0 {
		t.Fatalf("%d mismatches of %d", mismatches, msgs)
	}
	st := p.Stats()
	if st.Sent != msgs || st.Delivered != msgs || st.DeadLettered != 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A user op whose CUDA source the emulated driver's host build refuses
// (here a warp intrinsic, which NVRTC compiles for a GPU but the shim has
// not) fails the stage's launch with the compiler's message, the op's
// name and the fix, and leaves the runtime working.
func TestUserStageTheHostBuildRefusesIsAClearError(t *testing.T) {
	if !onCUDA() || !cudatest.Emulated() {
		t.Skip("the host build of a user op's source is the emulated driver's: run with make test's emulated suite")
	}
	cudatest.NVRTC(t)
	e := deviceEnv(t)
	name := fmt.Sprintf("user.warp_sum_%d", userOpRuns.Add(1))
	op := kernels.Op{
		Name: name,
		Go:   func(_, _, in, out []float32) (int, error) { return copy(out, in), nil },
		CUDA: `#include "ringactor.cuh"
RA_STAGE(` + kernels.Symbol(name) + `) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) out[i] = __shfl_sync(0xffffffffu, in[i], 0);
    return n;
}
`,
	}
	if err := kernels.Register(op); err != nil {
		t.Fatal(err)
	}
	spec := ra.PipelineSpec{Name: "warp", Stages: []ra.StageSpec{{Name: "warp", Op: name, Device: testDevice(0)}}}
	p, err := e.RT.Build(ctxT(t), spec)
	if err == nil {
		err = p.Start(ctxT(t))
		if cerr := p.Close(ctxT(t), false); cerr != nil {
			t.Errorf("closing the pipeline whose start failed: %v", cerr)
		}
	}
	if err == nil {
		t.Fatal("a user op the host build refuses started")
	}
	for _, want := range []string{name, "CUDA_ERROR_INVALID_SOURCE", "__shfl_sync", kernels.Symbol(name) + ".cu:4:", "fix the op's CUDA source"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	// The runtime still runs stages.
	q := buildStarted(t, e.RT, ra.PipelineSpec{Name: "after", Stages: []ra.StageSpec{{Name: "inc", Op: "offset", Params: []float32{1}, Device: testDevice(0)}}})
	if err := q.Send(ctxT(t), ra.Data{ID: 1, Floats: []float32{41}}); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := q.Stats(); st.Delivered != 1 || st.DeadLettered != 0 {
		t.Fatalf("a pipeline after the refused one: stats %+v", st)
	}
}
