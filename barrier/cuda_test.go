package barrier_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/barrier"
	"github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/kernels"
)

// The CUDA header's layout #defines are the Go constants, generated into
// the kernels' layout header (one definition; genlayout's test checks the
// values are current), and the header builds on ringactor.cuh.
func TestCUDAHeaderLayout(t *testing.T) {
	layout := kernels.Headers()["ringactor_layout.h"]
	for _, name := range []string{"RA_BAR_MAGIC", "RA_BAR_VERSION", "RA_BAR_OFF_MAGIC", "RA_BAR_OFF_VERSION",
		"RA_BAR_OFF_PARTICIPANTS", "RA_BAR_HEADER_SIZE", "RA_BAR_LINE_SIZE", "RA_BAR_OFF_GENERATION", "RA_BAR_MAX_PARTICIPANTS"} {
		if !regexp.MustCompile(`(?m)^#define ` + name + `\s`).MatchString(layout) {
			t.Errorf("ringactor_layout.h lacks %s", name)
		}
		if strings.Contains(barrier.CUDAHeader, "#define "+name) {
			t.Errorf("CUDAHeader defines %s itself; it comes from ringactor_layout.h", name)
		}
	}
	if !strings.Contains(layout, fmt.Sprintf("%#xu", barrier.Magic)) {
		t.Errorf("ringactor_layout.h lacks the magic %#x", barrier.Magic)
	}
	if !strings.Contains(barrier.CUDAHeader, "#include \"ringactor.cuh\"") {
		t.Error("CUDAHeader does not build on ringactor.cuh's memory-order helpers")
	}
	// One rule, one place: the barrier header writes no memory-order asm
	// of its own.
	if regexp.MustCompile(`\basm\b|st\.release|ld\.acquire|__threadfence`).MatchString(stripComments(barrier.CUDAHeader)) {
		t.Error("ra_barrier.cuh writes its own memory-order code; use ringactor.cuh's helpers")
	}
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// A tiny kernel using the device-side barrier compiles through NVRTC for
// the shipped virtual architecture and sm_90, and its PTX has the
// system-scope release stores and acquire loads docs/ARCHITECTURE.md §2 asks for, and
// the __nanosleep backoff. Skips where NVRTC is missing, fails under
// RINGACTOR_REQUIRE_NVRTC=1.
func TestCUDABarrierCompiles(t *testing.T) {
	n := cudatest.NVRTC(t)
	probe := `#include "` + barrier.CUDAHeaderName + `"
extern "C" __global__ void barrier_probe(unsigned char *flags, ra_u32 n, ra_u32 me, ra_u64 gen,
                                         const volatile ra_u32 *stop, int *out) {
    if (threadIdx.x == 0 && !ra_barrier_check(flags, n)) { *out = -1; return; }
    __syncthreads();
    if (threadIdx.x == 0) {
        ra_barrier_arrive(flags, me, gen);
        out[0] = ra_barrier_wait(flags, n, gen, stop);
    }
    __syncthreads();
    out[1 + threadIdx.x] = ra_barrier_sync_block(flags, n, me, gen + 1, stop);
}`
	headers := kernels.Headers()
	headers[barrier.CUDAHeaderName] = barrier.CUDAHeader
	for _, arch := range []string{"compute_70", "sm_90"} {
		out, err := n.Compile(cuda.Source{Name: "barrier_probe.cu", Code: probe, Headers: headers}, arch, kernels.CompileOptions...)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		ptx := string(out.PTX)
		if !strings.Contains(ptx, ".entry barrier_probe") {
			t.Fatalf("%s: no barrier_probe kernel in the PTX", arch)
		}
		for _, want := range []string{"st.release.sys.global.u64", "ld.acquire.sys.global.u64", "ld.acquire.sys.global.u32", "nanosleep", "bar.sync"} {
			if !strings.Contains(ptx, want) {
				t.Errorf("%s: PTX lacks %q", arch, want)
			}
		}
		if rmw.MatchString(ptx) {
			t.Errorf("%s: PTX has a read-modify-write; the barrier must use stores and loads only", arch)
		}
		t.Logf("%s: %d st.release.sys, %d ld.acquire.sys", arch, strings.Count(ptx, "st.release.sys"), strings.Count(ptx, "ld.acquire.sys"))
	}
}

// rmw matches a PTX read-modify-write instruction (atom.*, red.*), guarded or not.
var rmw = regexp.MustCompile(`(?m)^\s*(@!?%\w+\s+)?(atom|red)\.`)
