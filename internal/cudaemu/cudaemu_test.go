package cudaemu_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ringactor/ringactor/internal/cudaemu"
	"github.com/ringactor/ringactor/kernels"
)

// The library is built once per test binary, into the repository's .emu
// (where make emu builds it, so usually a cache hit).
var lib struct {
	once sync.Once
	path string
	err  error
}

func built(t *testing.T) string {
	t.Helper()
	if _, err := cudaemu.Compiler(); err != nil {
		t.Skip(err)
	}
	lib.once.Do(func() { lib.path, lib.err = cudaemu.Build(filepath.Join("..", "..", ".emu"), os.Stderr) })
	if lib.err != nil {
		t.Fatal(lib.err)
	}
	return lib.path
}

var entry = regexp.MustCompile(`\.entry\s+([A-Za-z_$][\w$]*)`)

// Every kernel of the shipped PTX has a host build in the table the
// emulated driver resolves PTX entries in.
func TestEveryShippedKernelHasAHostBuild(t *testing.T) {
	src, err := cudaemu.KernelsSource()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range kernels.ShippedPTXNames() {
		ptx, ok := kernels.ShippedPTX(strings.TrimSuffix(strings.TrimPrefix(name, "ra_"), ".ptx"))
		if !ok {
			t.Fatalf("%s listed but not found", name)
		}
		for _, m := range entry.FindAllStringSubmatch(string(ptx), -1) {
			if !strings.Contains(src, `{"`+m[1]+`", `) {
				t.Errorf("%s: kernel %s has no entry in the emulator's table", name, m[1])
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no kernels found in the shipped PTX")
	}
}

// A second Build of the same sources compiles nothing.
func TestBuildIsCached(t *testing.T) {
	first := built(t)
	var log bytes.Buffer
	again, err := cudaemu.Build(filepath.Join("..", "..", ".emu"), &log)
	if err != nil || again != first || log.Len() != 0 {
		t.Fatalf("second build: %q, %v, log %q", again, err, log.String())
	}
}

// A variant links the objects the driver was built from (no compile) and
// exports everything but the entry points it is built without.
func TestVariantLacksOnlyItsEntryPoints(t *testing.T) {
	built(t)
	var log bytes.Buffer
	v := cudaemu.Variant{Name: "cudaemu-test", Without: []string{"cuGraphInstantiateWithFlags", "cuDevicePrimaryCtxRelease_v2"}}
	so, err := cudaemu.BuildVariant(filepath.Join("..", "..", ".emu"), &log, v)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(so) != "libcudaemu-cudaemu-test.so" || strings.Contains(log.String(), "compiling") {
		t.Fatalf("variant %s, log %q", so, log.String())
	}
	exe := probe(t, "symbols")
	out, err := exec.Command(exe, so, "cuGraphInstantiateWithFlags", "cuDevicePrimaryCtxRelease_v2", "cuGraphInstantiate_v2",
		"cuDevicePrimaryCtxRelease", "cuInit", "cuGraphLaunch").CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	want := "cuGraphInstantiateWithFlags 0\ncuDevicePrimaryCtxRelease_v2 0\ncuGraphInstantiate_v2 1\ncuDevicePrimaryCtxRelease 1\ncuInit 1\ncuGraphLaunch 1"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("probe printed\n%s\nwant\n%s", got, want)
	}
}

// A variant is named, and leaves out entry points the driver has.
func TestVariantRefusesWhatItCannotBe(t *testing.T) {
	if _, err := cudaemu.Compiler(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		v    cudaemu.Variant
		want string
	}{
		{cudaemu.Variant{Without: []string{"cuGraphLaunch"}}, "needs a name"},
		{cudaemu.Variant{Name: "a/b"}, "variant name"},
		{cudaemu.Variant{Name: "x", Without: []string{"cuNoSuchCall"}}, `"cuNoSuchCall" is no entry point`},
	} {
		if _, err := cudaemu.BuildVariant(dir, io.Discard, c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error saying %q", c.v, err, c.want)
		}
	}
}

// probe compiles testdata/NAME.c (with -ldl) for the test, or skips it
// without a C compiler.
func probe(t *testing.T, name string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) for the probe: %v", cc, err)
	}
	exe := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command(cc, "-o", exe, filepath.Join("testdata", name+".c"), "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	return exe
}

// A call that needs a context, made without one current, fails with
// CUDA_ERROR_INVALID_CONTEXT and counts a violation; with one, it works.
func TestRuleNoCurrentContext(t *testing.T) {
	so := built(t)
	exe := probe(t, "nocontext")
	var stderr bytes.Buffer
	cmd := exec.Command(exe, so)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(string(out)); got != "201 1 0" {
		t.Fatalf("probe printed %q, want \"201 1 0\" (INVALID_CONTEXT, one violation, then success)", got)
	}
	if !strings.Contains(stderr.String(), "RULE VIOLATION: cuMemAlloc without a current context") {
		t.Fatalf("no violation line on stderr: %q", stderr.String())
	}
}

// The scope and placement rules, each shown to fire once (testdata/scope.c
// says what each case does): a ring kernel's argument block with a pointer
// to another device's memory without peer access, to another context's
// non-portable pinned memory, or to no allocation at all, is refused at
// launch; through the seam hook, a .gpu-scope access to host memory or to
// another device's memory, and a word reached with .gpu scope by one
// device's kernel while another device's kernel touches it, are counted
// once each, and the allowed accesses not at all.
func TestRuleScopeAndPlacement(t *testing.T) {
	so := built(t)
	exe := probe(t, "scope")
	var stderr bytes.Buffer
	cmd := exec.Command(exe, so)
	cmd.Env = append(os.Environ(), "RINGACTOR_EMU_DEVICES=2", "RINGACTOR_EMU_PEERS=all", "RINGACTOR_EMU_JITTER=0", "RINGACTOR_EMU_COPY_LAG_US=0")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v\n%s%s", err, out, stderr.String())
	}
	want := `peer-not-enabled 800 1
pinned-of-another-context 800 1
no-allocation 800 1
seam-allowed 0 0
seam-gpu-on-host-memory 1
seam-gpu-on-a-peer 1
seam-gpu-word-shared-with-another-device 0 1 0
seam-reused-after-the-other-ended 0
done`
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("probe printed\n%s\nwant\n%s\nstderr:\n%s", got, want, stderr.String())
	}
	for _, line := range []string{
		"RULE VIOLATION: cuLaunchKernel of ra_identity_ring: its out-link 0 at",
		"is device memory of device 1, and peer access to device 1 is not enabled in the launching context on device 0",
		"allocated without CU_MEMHOSTALLOC_PORTABLE",
		"is in no allocation of the driver",
		"RULE VIOLATION: ra_host_seam of cudaemu_test_seam: a .gpu-scope access to",
		"which is not device memory (.sys is needed)",
		"device memory of device 1, from a kernel on device 0 (.sys is needed)",
		"of device 0's memory is reached with .gpu scope by a kernel of device 0 while a kernel of device 1 touches it too",
	} {
		if !strings.Contains(stderr.String(), line) {
			t.Errorf("no %q on stderr:\n%s", line, stderr.String())
		}
	}
	if n := strings.Count(stderr.String(), "RULE VIOLATION"); n != 6 {
		t.Errorf("%d violation lines, want 6:\n%s", n, stderr.String())
	}
}
