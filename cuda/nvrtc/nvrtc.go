// Package nvrtc binds NVIDIA's runtime compiler (libnvrtc, opened with
// dlopen): CUDA C++ source in, PTX out, for package cuda's LoadModule. It
// needs no GPU and no driver; without the library, Load says what to
// install.
//
// It was package cuda's NVRTC until package cuda grew to its size cap;
// cuda keeps its old names as deprecated aliases of these.
package nvrtc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Env names the environment variable that points at a libnvrtc to use.
const Env = "RINGACTOR_NVRTC"

// ErrNoNVRTC: no NVRTC library could be loaded.
var ErrNoNVRTC = errors.New("cuda: NVRTC not found")

// Source is one CUDA C++ translation unit and the headers it includes by name.
type Source struct {
	Name    string            // file name, shown in compiler messages
	Code    string            // CUDA C++
	Headers map[string]string // include name -> contents
}

// CompileError is a failed NVRTC compile with the compiler's log.
type CompileError struct {
	Name, Arch string
	Result     int
	Log        string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("cuda: nvrtc compile of %s for %s failed (nvrtc result %d):\n%s", e.Name, e.Arch, e.Result, strings.TrimSpace(e.Log))
}

// Compiled is the PTX of a compiled Source.
type Compiled struct {
	PTX []byte
	Log string // warnings, if any
}

var (
	nvrtcOnce sync.Once
	nvrtcLib  *NVRTC
	nvrtcErr  error
)

// Load loads NVRTC once per process and returns it, or an error
// wrapping ErrNoNVRTC that lists where it looked.
func Load() (*NVRTC, error) {
	nvrtcOnce.Do(func() { nvrtcLib, nvrtcErr = loadNVRTC(nvrtcCandidates()) })
	return nvrtcLib, nvrtcErr
}

// nvrtcCandidates lists library names and paths to try, best first.
func nvrtcCandidates() []string {
	var c []string
	if p := os.Getenv(Env); p != "" {
		return []string{p} // an explicit choice is not second-guessed
	}
	c = append(c, "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2")
	var globbed []string
	for _, pat := range []string{
		"/usr/local/cuda/lib64/libnvrtc.so*",
		"/usr/local/cuda/targets/*/lib/libnvrtc.so*",
		"/usr/local/cuda-*/lib64/libnvrtc.so*",
		"/usr/lib/x86_64-linux-gnu/libnvrtc.so*",
		"/usr/lib/aarch64-linux-gnu/libnvrtc.so*",
		"/usr/lib64/libnvrtc.so*",
	} {
		m, _ := filepath.Glob(pat)
		globbed = append(globbed, m...)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(globbed))) // newest version first
	for _, g := range globbed {
		if !strings.Contains(filepath.Base(g), "builtins") {
			c = append(c, g)
		}
	}
	return c
}

func noNVRTC(tried []string, why string) error {
	return fmt.Errorf("%w (tried %s%s); install NVRTC (Debian: libnvrtc11.2 and libnvrtc-builtins11.8 from non-free; or the CUDA toolkit) or set %s to the library's path",
		ErrNoNVRTC, strings.Join(tried, ", "), why, Env)
}

// PTX compiles code (which includes headers by name) for arch and returns
// the PTX: Compile for callers that keep their own source type, such as
// package kernels' Compiler.
func (n *NVRTC) PTX(name, code string, headers map[string]string, arch string, options ...string) ([]byte, error) {
	out, err := n.Compile(Source{Name: name, Code: code, Headers: headers}, arch, options...)
	if err != nil {
		return nil, err
	}
	return out.PTX, nil
}
