package kernels_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/kernels"
)

var brokenStageRuns atomic.Int64

// A user stage whose CUDA source does not compile: building it through
// NVRTC, as the cuda backend does at launch (kernels.Build for
// ShippedArch), fails with a *cuda.CompileError whose text carries NVRTC's
// log line naming the error, so the user sees what to fix. A failure is
// not cached: the next build compiles (and fails) again. Skips without
// NVRTC; fails under RINGACTOR_REQUIRE_NVRTC=1.
func TestUserStageCompileErrorCarriesLog(t *testing.T) {
	n := cudatest.NVRTC(t)
	name := fmt.Sprintf("test.broken_%d", brokenStageRuns.Add(1)) // fresh under -count=N
	sym := kernels.Symbol(name)
	if err := kernels.Register(kernels.Op{
		Name: name,
		Go:   func(_, _, in, out []float32) (int, error) { return copy(out, in), nil },
		CUDA: `#include "ringactor.cuh"
RA_STAGE(` + sym + `) {
    for (int i = 0; i < n; i++) out[i] = ra_no_such_helper(in[i]);
    return n;
}
`,
	}); err != nil {
		t.Fatal(err)
	}
	op, err := kernels.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	for try := range 2 {
		ptx, err := kernels.Build(n, op, kernels.ShippedArch)
		var ce *cuda.CompileError
		if !errors.As(err, &ce) {
			t.Fatalf("try %d: a broken stage built (%d bytes of PTX) or failed without a compile error: %v", try, len(ptx), err)
		}
		msg := err.Error()
		if try == 0 {
			t.Logf("%v", err)
		}
		// NVRTC's line: "<file>(3): error: identifier "ra_no_such_helper" is undefined".
		if !strings.Contains(ce.Log, `"ra_no_such_helper" is undefined`) || !strings.Contains(msg, `error: identifier "ra_no_such_helper" is undefined`) {
			t.Fatalf("try %d: the error does not carry NVRTC's log line: %v\nlog: %s", try, err, ce.Log)
		}
		if !strings.Contains(msg, name) || !strings.Contains(msg, sym+".cu(3)") {
			t.Fatalf("try %d: the error does not name the op %q and the line %s.cu(3): %v", try, name, sym, err)
		}
	}
}
