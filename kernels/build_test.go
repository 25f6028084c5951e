package kernels_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/kernels"
)

// countingCompiler records what it was asked to compile.
type countingCompiler struct {
	calls int
	fail  bool
}

func (c *countingCompiler) PTX(name, code string, _ map[string]string, arch string, _ ...string) ([]byte, error) {
	c.calls++
	if c.fail {
		return nil, &cuda.CompileError{Name: name, Arch: arch, Log: "line 1: error: expected a ;"}
	}
	return []byte("// " + arch + "\n" + code), nil
}

// Built-ins for the shipped arch need no compiler; other arches and user
// ops compile once per distinct source and are served from the cache after.
var buildRuns atomic.Int64

func TestBuildCachesBySourceHash(t *testing.T) {
	op, _ := kernels.Lookup("relu")
	if _, err := kernels.Build(nil, op, kernels.ShippedArch); err != nil {
		t.Fatalf("shipped PTX needs no NVRTC: %v", err)
	}
	// The cache outlives a run: a source of this run's own (-count=N).
	op.CUDA += fmt.Sprintf("\n// run %d\n", buildRuns.Add(1))
	c := &countingCompiler{}
	a, err := kernels.Build(c, op, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	b, err := kernels.Build(c, op, "sm_90")
	if err != nil || string(a) != string(b) || c.calls != 1 {
		t.Fatalf("second build of the same source compiled again (%d calls) or differed: %v", c.calls, err)
	}
	changed := op
	changed.CUDA += "\n// changed\n"
	if _, err := kernels.Build(c, changed, "sm_90"); err != nil || c.calls != 2 {
		t.Fatalf("a changed source was served from the cache: %d calls, %v", c.calls, err)
	}
	if _, err := kernels.Build(c, changed, kernels.ShippedArch); err != nil || c.calls != 3 {
		t.Fatalf("a changed built-in used the shipped PTX: %d calls, %v", c.calls, err)
	}
	if _, err := kernels.Build(c, op, kernels.ShippedArch); err != nil || c.calls != 4 {
		t.Fatalf("this run's relu used the shipped PTX: %d calls, %v", c.calls, err)
	}
	if !strings.Contains(kernels.RingSource(op).Code, "RA_RING_KERNEL(ra_relu)") {
		t.Fatal("ring source lacks the loop")
	}
}

func TestBuildErrors(t *testing.T) {
	op := kernels.Op{Name: "nosrc"}
	if _, err := kernels.Build(&countingCompiler{}, op, "sm_90"); err == nil || !strings.Contains(err.Error(), "no CUDA source") {
		t.Fatalf("op without CUDA: %v", err)
	}
	op.CUDA = "RA_STAGE(ra_nosrc) { return 0 }"
	if _, err := kernels.Build(nil, op, "sm_90"); !errors.Is(err, kernels.ErrNoCompiler) {
		t.Fatalf("no compiler: %v", err)
	}
	var ce *cuda.CompileError
	if _, err := kernels.Build(&countingCompiler{fail: true}, op, "sm_90"); !errors.As(err, &ce) || !strings.Contains(err.Error(), "expected a ;") {
		t.Fatalf("compile error without its log: %v", err)
	}
	if got := kernels.Symbol("my.stage-2"); got != "ra_my_stage_2" {
		t.Fatalf("Symbol: %q", got)
	}
}
