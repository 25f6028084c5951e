package cuda_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
	"github.com/ringactor/ringactor/ringkernel/ringkerneltest"
)

// options is the CUDA backend's entry in the conformance suite: its skip
// table, the one place that says what the device loop cannot run and why.
// Its kernels all run on GPU 0.
func options() ringkerneltest.Options {
	o := ringkerneltest.Options{Name: "cuda", Devices: 1, StressMessages: 1_000_000, Lacks: map[ringkerneltest.Capability]string{
		ringkerneltest.GoStageFunctions: "the device loop runs CUDA device functions: an op with a Go side only runs on the CPU device, and a device function that hangs cannot be cut off (docs/ARCHITECTURE.md §3.1)",
		ringkerneltest.Workers:          "on a GPU the workers are the block's threads, not Stage.Workers goroutines",
		ringkerneltest.ErrorTexts:       "device code reports an ErrorCode, not an error's text",
	}}
	// A user stage's PTX comes from NVRTC on a GPU and over the emulated
	// driver alike (which then builds the stage's source for the CPU and
	// runs that); CI installs NVRTC and requires it.
	if os.Getenv(cudatest.RequireNVRTCEnv) != "1" {
		if _, err := cuda.LoadNVRTC(); err != nil {
			o.Lacks[ringkerneltest.UserStages] = "no NVRTC to compile the user stage: " + err.Error()
		}
	}
	return o
}

// The conformance suite on the CUDA backend: on a GPU, or over the
// emulated driver (RINGACTOR_LIBCUDA); skipped, saying why, without a
// driver (failed instead under RINGACTOR_REQUIRE_GPU=1). One backend
// serves every case (opening a device takes its module loads and
// calibration once) and is closed after them.
func TestConformance(t *testing.T) {
	cudatest.Driver(t)
	b, err := rkcuda.New(rkcuda.Options{})
	if err != nil {
		t.Fatalf("cuda backend: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil { // a faulted case's kernel may still be ending
			t.Errorf("closing the cuda backend: %v", err)
		}
	})
	var backend rk.Backend = b
	if v := loopVariant(t); v != rk.LoopClassic {
		backend = variantBackend{b, v}
	}
	ringkerneltest.Run(t, func(testing.TB) rk.Backend { return backend }, options())
}

// LoopEnv names the device loop every kernel of the conformance suite
// runs (Spec.Variant): "warp" (ringkernel.LoopWarp), "warp-prefetch"
// (LoopWarpPrefetch) or "classic" (the default). `make test` runs the
// suite once more with each warp loop.
const LoopEnv = "RINGACTOR_TEST_LOOP"

func loopVariant(t *testing.T) rk.LoopVariant {
	switch v := os.Getenv(LoopEnv); v {
	case "", "classic":
		return rk.LoopClassic
	case "warp":
		t.Logf("%s=warp: every kernel runs the warp loop (ringkernel.LoopWarp)", LoopEnv)
		return rk.LoopWarp
	case "warp-prefetch":
		t.Logf("%s=warp-prefetch: every kernel runs the warp loop with the pipelined ingress (ringkernel.LoopWarpPrefetch)", LoopEnv)
		return rk.LoopWarpPrefetch
	default:
		t.Fatalf("%s=%q: want classic, warp or warp-prefetch", LoopEnv, v)
		return 0
	}
}

// variantBackend is the CUDA backend with every kernel launched in one
// loop variant; its other methods (buffers, devices) are the backend's.
type variantBackend struct {
	*rkcuda.Backend
	v rk.LoopVariant
}

func (b variantBackend) Start(job *rk.Job) (rk.Loop, error) {
	job.Spec.Variant = b.v
	return b.Backend.Start(job)
}

// A user stage's CUDA side builds through NVRTC into PTX with its ring
// kernel (the conformance case UserDefinedStage runs it on a GPU).
func TestUserStagePTX(t *testing.T) {
	n := cudatest.NVRTC(t)
	name := fmt.Sprintf("test.ptx_cube_%d", ptxRuns.Add(1))
	sym := kernels.Symbol(name)
	op := kernels.Op{
		Name: name, Params: 1,
		Go: func(p, _, in, out []float32) (int, error) { return copy(out, in), nil },
		CUDA: `#include "ringactor.cuh"
RA_STAGE(` + sym + `) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) out[i] = in[i] * in[i] * in[i] + params[0];
    return n;
}
`,
	}
	ptx, err := kernels.Build(n, op, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ptx), ".entry "+sym+"_ring") {
		t.Fatal("no ring kernel for the user stage in its PTX")
	}
}

var ptxRuns atomic.Int64

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
