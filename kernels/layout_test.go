package kernels

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The generated header must compile as C++ (it is included by every kernel
// and its static_asserts check the layout). The host C++ compiler stands in
// for NVRTC here; the NVRTC build of the kernels checks it again.
func TestLayoutHeaderCompiles(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("g++ not found; .ci/run installs it")
		}
		t.Skip("skipping: no g++ to compile the layout header with")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "probe.cpp")
	probe := "#include \"" + LayoutHeaderName + "\"\nstatic_assert(RA_Q_OFF_TAIL == 128, \"tail\");\nint main() { return 0; }\n"
	if err := os.WriteFile(src, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cxx, "-std=c++11", "-fsyntax-only", "-Wall", "-Werror", "-Iinclude", src).CombinedOutput()
	if err != nil {
		t.Fatalf("layout header does not compile: %v\n%s", err, out)
	}
}

func TestEmbeddedHeaderIsTheFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("include", LayoutHeaderName))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != LayoutHeader || !strings.Contains(LayoutHeader, "RA_Q_MAGIC") {
		t.Fatal("embedded LayoutHeader differs from include/ringactor_layout.h")
	}
}
