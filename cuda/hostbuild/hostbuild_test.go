//go:build cgo && (linux || freebsd)

package hostbuild

// These tests run over the emulated driver (internal/cudaemu), built here
// with the C++ compiler (a variant of its own name, beside make emu's
// build in the checkout's .emu) and loaded with cuda.LoadDriver: this test
// binary points RINGACTOR_LIBCUDA at it, whatever the environment says, so
// they need no GPU and run the same under make test.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/internal/cudaemu"
)

var emu struct {
	d       *cuda.Driver
	skipWhy string
	err     error
}

func TestMain(m *testing.M) {
	dir, tmp := cudaemu.TestDir(), ""
	if _, err := cudaemu.Compiler(); err != nil {
		emu.skipWhy = err.Error()
	} else if dir == "" {
		dir, emu.err = os.MkdirTemp("", "cudaemu")
		tmp = dir
	}
	if emu.skipWhy == "" && emu.err == nil {
		var log strings.Builder
		var lib string
		if lib, emu.err = cudaemu.BuildVariant(dir, &log, cudaemu.Variant{Name: "hostbuild-test"}); emu.err == nil {
			// One device, a cuInit that succeeds, no lagging copies, no jitter.
			for k, v := range map[string]string{cuda.DriverEnv: lib, "RINGACTOR_EMU_DEVICES": "1", "RINGACTOR_EMU_INIT_RESULT": "",
				"RINGACTOR_EMU_COPY_LAG_US": "0", "RINGACTOR_EMU_JITTER": "0"} {
				os.Setenv(k, v)
			}
			emu.d, emu.err = cuda.LoadDriver()
		}
	}
	code := m.Run()
	// The tests made no call a real driver would hang or fail on: the
	// emulator counts each (device attribute 9100) and names it on stderr.
	if emu.d != nil {
		dev, err := emu.d.Device(0)
		if err == nil {
			var n int
			if n, err = dev.Attribute(9100); err == nil && n != 0 {
				err = fmt.Errorf("%d call(s) broke a rule of the emulated driver: see the cudaemu: RULE VIOLATION lines above", n)
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", emu.d.Path(), err)
			code = 1
		}
	}
	if tmp != "" {
		os.RemoveAll(tmp)
	}
	os.Exit(code)
}

// emuContext retains device 0's primary context of the emulated driver
// for the test.
func emuContext(t *testing.T) *cuda.Context {
	t.Helper()
	if emu.skipWhy != "" {
		t.Skipf("skipping: %s", emu.skipWhy)
	}
	if emu.err != nil {
		t.Fatal(emu.err)
	}
	dev, err := emu.d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Release(); err != nil {
			t.Errorf("release: %v", err)
		}
	})
	return c
}

// hostPTX is PTX text naming one kernel, all the emulated driver reads of
// a module whose source it was given (the .entry names). Each call's text
// is its own (a numbered comment): the driver keeps the sources it was
// given by PTX text for the life of the process, so under -count=N a
// later run would find an earlier run's source.
func hostPTX(entry string) []byte {
	return fmt.Appendf(nil, ".version 7.0\n.target sm_70\n.address_size 64\n// text %d\n.visible .entry %s(\n\t.param .align 8 .b8 a[32]\n)\n{\n\tret;\n}\n", hostTexts.Add(1), entry)
}

// hostTexts numbers hostPTX's texts.
var hostTexts atomic.Int64

// hostSource is a ring kernel's CUDA source in the shape the emulated
// driver wraps (one parameter, a struct ra_ring_args): every thread of the
// block stores its index and the block's size at the address in a.out.
const hostSource = `struct ra_ring_args { unsigned long long out, pad[3]; };
extern "C" __global__ void ra_hostbuild_ring(ra_ring_args a) {
    ((unsigned *)a.out)[threadIdx.x] = threadIdx.x + 1000u * blockDim.x;
}
`

// The emulated driver builds a kernel from the CUDA source handed to it
// (Build) and runs that build when the PTX it was compiled from is
// loaded: every thread of the launch sees its own threadIdx and the
// block's blockDim, the driver's (the module is a library of its own,
// RA_HOST_MODULE, whose thread indices are the driver's variables).
func TestBuildRunsTheSource(t *testing.T) {
	t.Setenv("RINGACTOR_EMU_MODULE_DIR", t.TempDir())
	t.Setenv("RINGACTOR_EMU_THREADS", "32")
	c := emuContext(t)
	if !Supported(emu.d) {
		t.Fatal("the emulated driver does not say it builds kernels for the host")
	}
	ptx := hostPTX("ra_hostbuild_ring")
	if _, err := c.LoadModule("before.ptx", ptx); !errors.Is(err, &cuda.Error{Result: cuda.ErrorInvalidPTX}) || !strings.Contains(err.Error(), "cudaemu_module_source") {
		t.Fatalf("a module whose source was not given first: %v, want CUDA_ERROR_INVALID_PTX naming cudaemu_module_source", err)
	}
	if err := Build(emu.d, ptx, cuda.Source{Name: "hostbuild.cu", Code: hostSource}); err != nil {
		t.Fatal(err)
	}
	m, err := c.LoadModule("hostbuild.ptx", ptx)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unload()
	f, err := m.Function("ra_hostbuild_ring")
	if err != nil {
		t.Fatal(err)
	}
	const threads = 8
	h, err := c.AllocHost(4*threads, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.FreeHost(h)
	arg := make([]byte, 32)
	binary.LittleEndian.PutUint64(arg, uint64(h.Device))
	// A stream's synchronize waits for a kernel named *_ring (the driver's
	// rules take it for a persistent one) as long as it ends within 1 s.
	st, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destroy()
	if err := c.Launch(f, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: threads, Y: 1, Z: 1}, 0, st, arg); err != nil {
		t.Fatal(err)
	}
	if err := st.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i := range threads {
		if got, want := binary.LittleEndian.Uint32(h.Bytes[4*i:]), uint32(i+1000*threads); got != want {
			t.Fatalf("thread %d stored %d, want %d", i, got, want)
		}
	}
}

// A source the host compiler rejects is CUDA_ERROR_INVALID_SOURCE with
// the compiler's messages, naming the file and line; no compiler at all
// is CUDA_ERROR_JIT_COMPILER_NOT_FOUND, saying what to install; a kernel
// other than a ring kernel is refused (its parameters are unknown).
func TestBuildErrors(t *testing.T) {
	t.Setenv("RINGACTOR_EMU_MODULE_DIR", t.TempDir())
	emuContext(t)
	bad := cuda.Source{Name: "broken.cu", Code: "struct ra_ring_args { int x; };\nextern \"C\" void ra_broken_ring(ra_ring_args a) { not_declared(a.x); }\n"}
	err := Build(emu.d, hostPTX("ra_broken_ring"), bad)
	var e *cuda.Error
	if !errors.As(err, &e) || e.Result != ErrorInvalidSource || e.Name != "CUDA_ERROR_INVALID_SOURCE" {
		t.Fatalf("a compile error: %v, want CUDA_ERROR_INVALID_SOURCE", err)
	}
	for _, want := range []string{"broken.cu:2:", "not_declared", "cudaemu_module_source(broken.cu)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(e.Log, "/.build-") {
		t.Errorf("the compiler's messages still name the build directory:\n%s", e.Log)
	}

	t.Setenv("CXX", "/nonexistent/c++")
	err = Build(emu.d, hostPTX("ra_hostbuild_ring"), cuda.Source{Name: "hostbuild.cu", Code: hostSource})
	if !errors.Is(err, &cuda.Error{Result: ErrorJITCompilerNotFound}) || !strings.Contains(err.Error(), "install") {
		t.Fatalf("no compiler: %v, want CUDA_ERROR_JIT_COMPILER_NOT_FOUND naming the fix", err)
	}

	err = Build(emu.d, hostPTX("helper"), cuda.Source{Name: "helper.cu", Code: "extern \"C\" __global__ void helper(int *p) {}\n"})
	if !errors.Is(err, &cuda.Error{Result: cuda.ErrorNotSupported}) || !strings.Contains(err.Error(), "_ring") {
		t.Fatalf("a kernel other than a ring kernel: %v, want CUDA_ERROR_NOT_SUPPORTED", err)
	}
}
