package kernels_test

import (
	"strings"
	"testing"

	"github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/kernels"
)

// A few built-in stages of each kind (a plain stage, one with params, a
// routing, a typed, a stateful and a timed one) compile through NVRTC now,
// for the shipped virtual architecture — where the result must be the
// shipped file, so stale PTX fails — and one for sm_90 (H100, H200); a
// failure prints the compiler log. Every op is compiled by make ptx, and
// `make check-ptx` (a step of .ci/run) fails when any shipped file differs
// from a fresh build; TestShippedPTX checks every shipped file's entries.
// Each compile of the loop the stages share takes seconds (three loops
// since the warp loops), hence a few: make test's budget. Skips with the
// reason where NVRTC is missing, fails under RINGACTOR_REQUIRE_NVRTC=1 (CI
// installs it).
func TestStagesCompileWithNVRTC(t *testing.T) {
	n := cudatest.NVRTC(t)
	if srcs := kernels.Sources(); len(srcs) < 7 {
		t.Fatalf("only %d stage sources: %v", len(srcs), srcs)
	}
	for name, more := range map[string][]string{
		"sqrt": nil, "saxpy": nil, "branch": nil, "keyed_count": {"sm_90"}, "ring_sum": nil, "delay": nil,
	} {
		op, err := kernels.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, arch := range append([]string{kernels.ShippedArch}, more...) {
			out, err := n.Compile(cuda.Source(kernels.RingSource(op)), arch, kernels.CompileOptions...)
			if err != nil {
				t.Fatalf("%s for %s: %v", name, arch, err)
			}
			for _, entry := range []string{"_test", "_ring"} {
				if !strings.Contains(string(out.PTX), ".entry ra_"+name+entry) {
					t.Fatalf("%s for %s: no ra_%s%s kernel in the PTX", name, arch, name, entry)
				}
			}
			if arch != kernels.ShippedArch {
				continue
			}
			if shipped, _ := kernels.ShippedPTX(name); string(shipped) != string(kernels.ShippedPTXOf(out.PTX)) {
				t.Fatalf("shipped %s PTX differs from a fresh NVRTC build: run make ptx and commit", name)
			}
		}
	}
}

// Every built-in op has its CUDA side.
func TestBuiltinsHaveCUDA(t *testing.T) {
	for _, name := range []string{"identity", "scale", "offset", "sqrt", "relu", "saxpy", "sum",
		"reduce_sum", "reduce_min", "reduce_max", "pair_sum", "pair_min", "pair_max", "ring_sum", "ring_min", "ring_max"} {
		op, err := kernels.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(op.CUDA, "RA_STAGE(ra_"+name+")") {
			t.Errorf("%s: CUDA source missing or misnamed", name)
		}
	}
}

// The queue helpers (acquire/release at both scopes, the timer, backoff)
// compile and reach the PTX as the memory orders docs/ARCHITECTURE.md §2 asks for.
func TestQueueHelpersEmitOrderedAccesses(t *testing.T) {
	n := cudatest.NVRTC(t)
	probe := `#include "ringactor.cuh"
extern "C" __global__ void probe(unsigned char *base, ra_u64 *out) {
	ra_queue q = {base, 7u, 64u};
	ra_u64 t = ra_load_acquire_sys(ra_q_word(q, RA_Q_OFF_TAIL));
	ra_u64 h = ra_load_acquire_gpu(ra_q_word(q, RA_Q_OFF_HEAD));
	unsigned ns = 0; ra_backoff(&ns);
	out[0] = ra_slot_id(ra_q_slot(q, h)) + t + ra_globaltimer();
	ra_store_release_sys(ra_q_word(q, RA_Q_OFF_HEAD), h + 1);
	ra_store_release_gpu(ra_q_word(q, RA_Q_OFF_TAIL), t + 1);
	ra_ll_store((ra_u64 *)ra_q_slot(q, t), t, false);  // a flagged word: relaxed, at the link's scope
	ra_ll_store((ra_u64 *)ra_q_slot(q, h), h, true);
}`
	out, err := n.Compile(cuda.Source{Name: "probe.cu", Code: probe, Headers: kernels.Headers()}, "compute_70")
	if err != nil {
		t.Fatal(err)
	}
	ptx := string(out.PTX)
	for _, want := range []string{"ld.acquire.sys.global.u64", "ld.acquire.gpu.global.u64",
		"st.release.sys.global.u64", "st.release.gpu.global.u64", "st.relaxed.gpu.global.u64", "st.relaxed.sys.global.u64",
		"%globaltimer", "nanosleep"} {
		if !strings.Contains(ptx, want) {
			t.Errorf("PTX lacks %q", want)
		}
	}
}

// The shipped PTX holds every built-in's ring kernel for ShippedArch, with
// the loop's memory orders, timer and backoff (that it is what a fresh build
// gives: make check-ptx for every file, TestStagesCompileWithNVRTC for a
// few through the embedding).
func TestShippedPTX(t *testing.T) {
	for _, file := range kernels.Sources() {
		name := strings.TrimSuffix(file, ".cu")
		ptx, ok := kernels.ShippedPTX(name)
		if !ok {
			t.Fatalf("no shipped PTX for %s: run make ptx", name)
		}
		for _, want := range []string{".target sm_70", ".entry ra_" + name + "_ring", "st.release.sys.global.u64",
			"ld.acquire.sys.global.u32", "ld.acquire.gpu.global.u64", "%globaltimer", "nanosleep"} {
			if !strings.Contains(string(ptx), want) {
				t.Errorf("%s PTX lacks %q", name, want)
			}
		}
	}
	if got, want := len(kernels.ShippedPTXNames()), len(kernels.Sources()); got != want {
		t.Fatalf("%d PTX files for %d stages: run make ptx", got, want)
	}
}

// The fixed-layout types' header compiles under NVRTC (its static_asserts
// of Go's offsets included), so a device stage reads a kernels.Keyed as
// struct ra_keyed.
func TestTypesHeaderCompilesWithNVRTC(t *testing.T) {
	n := cudatest.NVRTC(t)
	probe := `#include "ringactor_types.h"
extern "C" __global__ void probe(const ra_keyed *in, float *out) {
	out[0] = in->Values[7] + (float)in->Key + (float)in->Count;
}`
	if _, err := n.Compile(cuda.Source{Name: "types.cu", Code: probe, Headers: kernels.Headers()}, "compute_70", kernels.CompileOptions...); err != nil {
		t.Fatal(err)
	}
}
