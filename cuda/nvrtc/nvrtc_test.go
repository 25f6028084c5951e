package nvrtc

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// nvrtcOrSkip is cudatest.NVRTC; that package imports this one, so the
// internal tests keep a copy of its three lines of policy.
func nvrtcOrSkip(t *testing.T) *NVRTC {
	t.Helper()
	n, err := Load()
	if err != nil {
		if os.Getenv("RINGACTOR_REQUIRE_NVRTC") == "1" {
			t.Fatalf("RINGACTOR_REQUIRE_NVRTC=1 but: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return n
}

const saxpySrc = `
#include "params.h"
extern "C" __global__ void saxpy(float *x, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] = A * x[i] + B;
}`

func TestCompileToPTX(t *testing.T) {
	n := nvrtcOrSkip(t)
	major, minor := n.Version()
	t.Logf("NVRTC %d.%d from %s", major, minor, n.Path())
	for _, arch := range []string{"compute_70", "sm_80", "sm_90"} {
		out, err := n.Compile(Source{Name: "saxpy.cu", Code: saxpySrc, Headers: map[string]string{
			"params.h": "#define A 2.0f\n#define B 1.0f\n",
		}}, arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		ptx := string(out.PTX)
		if !strings.Contains(ptx, ".entry saxpy") || !strings.Contains(ptx, ".target") {
			t.Fatalf("%s: no saxpy entry in PTX:\n%s", arch, ptx)
		}
	}
}

func TestCompileErrorCarriesLog(t *testing.T) {
	n := nvrtcOrSkip(t)
	_, err := n.Compile(Source{Name: "broken.cu", Code: "__global__ void k() { undeclared_thing(); }"}, "compute_70")
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("want *CompileError, got %v", err)
	}
	if ce.Name != "broken.cu" || !strings.Contains(ce.Log, "undeclared_thing") {
		t.Fatalf("log does not name the problem: %q", ce.Log)
	}
	if _, err := n.Compile(Source{Name: "k.cu", Code: "__global__ void k() {}"}, "compute_1"); err == nil {
		t.Fatal("bogus architecture accepted")
	}
}

func TestMissingLibraryIsAClearError(t *testing.T) {
	_, err := loadNVRTC([]string{"/nonexistent/libnvrtc.so"})
	if !errors.Is(err, ErrNoNVRTC) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"/nonexistent/libnvrtc.so", Env, "libnvrtc11.2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestEnvOverrideIsTheOnlyCandidate(t *testing.T) {
	t.Setenv(Env, "/opt/custom/libnvrtc.so.99")
	c := nvrtcCandidates()
	if len(c) != 1 || c[0] != "/opt/custom/libnvrtc.so.99" {
		t.Fatalf("candidates %v", c)
	}
}
