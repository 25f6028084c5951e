package usertest

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// A user-defined stage, registered from outside package kernels: a CUDA
// device function with the documented signature plus its Go twin. The sim
// backend runs the Go side through a ring kernel; the cuda backend compiles
// the CUDA side with NVRTC for the GPU's own architecture and runs that (over
// the emulated driver, the host build of the same source), skipped, with the
// reason, where the backend lacks UserStages.
func UserDefinedStage(t *testing.T, s Suite) {
	// A fresh name per run, so -count=N registers anew.
	name := fmt.Sprintf("test.cube_plus_%d", userStageRuns.Add(1))
	sym := kernels.Symbol(name)
	op := kernels.Op{
		Name:   name,
		Params: 1,
		Go: func(p, _, in, out []float32) (int, error) {
			if len(in) > len(out) {
				return 0, kernels.ErrOutputTooSmall
			}
			for i, x := range in {
				out[i] = x*x*x + p[0]
			}
			return len(in), nil
		},
		CUDA: `#include "ringactor.cuh"
RA_STAGE(` + sym + `) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) out[i] = in[i] * in[i] * in[i] + params[0];
    return n;
}
`,
	}
	if err := kernels.Register(op); err != nil {
		t.Fatal(err)
	}
	if err := kernels.Register(op); err == nil {
		t.Fatal("a second registration under the same name was accepted")
	}
	r := s.Launch(t, rk.Stage{Name: "cube", Op: op.Name, Params: []float32{0.5}}, 16, 4, true)
	r.SendFloats(1, []float32{1, 2, -3}, 0)
	if _, v := r.RecvFloats(); len(v) != 3 || v[0] != 1.5 || v[1] != 8.5 || v[2] != -26.5 {
		t.Fatalf("user stage gave %v", v)
	}

}

var userStageRuns atomic.Int64
