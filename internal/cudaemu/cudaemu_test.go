package cudaemu_test

import (
	"bytes"
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

// A call that needs a context, made without one current, fails with
// CUDA_ERROR_INVALID_CONTEXT and counts a violation; with one, it works.
func TestRuleNoCurrentContext(t *testing.T) {
	so := built(t)
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) for the probe: %v", cc, err)
	}
	exe := filepath.Join(t.TempDir(), "nocontext")
	if out, err := exec.Command(cc, "-o", exe, filepath.Join("testdata", "nocontext.c"), "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
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
