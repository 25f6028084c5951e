package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

func TestMissingDriverIsAClearError(t *testing.T) {
	t.Setenv(DriverEnv, "/nonexistent/libcuda.so.1")
	c := driverCandidates()
	if len(c) != 1 || c[0] != "/nonexistent/libcuda.so.1" {
		t.Fatalf("candidates %v: the environment's choice must be the only one", c)
	}
	_, err := loadDriverFrom(c) // LoadDriver's path without its once
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"/nonexistent/libcuda.so.1", DriverEnv, "install the NVIDIA driver"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestDefaultDriverCandidates(t *testing.T) {
	t.Setenv(DriverEnv, "")
	if c := driverCandidates(); strings.Join(c, " ") != "libcuda.so.1 libcuda.so" {
		t.Fatalf("candidates %v", c)
	}
}

func TestErrorMessageAndIs(t *testing.T) {
	e := &Error{Call: "cuMemAlloc_v2", Result: ErrorOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY", Text: "out of memory"}
	if got, want := e.Error(), "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	wrapped := fmt.Errorf("allocating the queue: %w", e)
	if !errors.Is(wrapped, &Error{Result: 2}) || errors.Is(wrapped, &Error{Result: ErrorInvalidValue}) {
		t.Fatal("Is does not match on Result alone")
	}
	if errors.Is(wrapped, (*Error)(nil)) || errors.Is(wrapped, ErrNoDriver) {
		t.Fatal("Is matches what it should not")
	}
	withLog := &Error{Call: "cuModuleLoadDataEx(k.ptx)", Result: ErrorInvalidPTX, Name: "CUDA_ERROR_INVALID_PTX", Log: "ptxas: line 3: syntax error\n"}
	if got, want := withLog.Error(), "cuda: cuModuleLoadDataEx(k.ptx): CUDA_ERROR_INVALID_PTX:\nptxas: line 3: syntax error"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	if got := (&Error{Call: "cuInit", Result: 7}).Error(); got != "cuda: cuInit: CUresult(7)" {
		t.Fatalf("%q", got)
	}
	var d *Driver
	if e, ok := d.err("cuInit", 999).(*Error); !ok || e.Name != "CUresult(999)" {
		t.Fatalf("nameless error %#v", e)
	}
	if d.err("cuInit", ResultSuccess) != nil {
		t.Fatal("success is an error")
	}
}

func TestEncodeArgs(t *testing.T) {
	buf, offs, err := encodeArgs([]any{uint64(1 << 40), int64(-2), uint32(3), int32(-4), float32(0.5), float64(-0.25), DevicePtr(0xabc), uintptr(7)})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range offs {
		if o != int32(i*argSlot) {
			t.Fatalf("offsets %v", offs)
		}
	}
	if len(buf) != 8*argSlot {
		t.Fatalf("%d bytes", len(buf))
	}
	le := binary.LittleEndian
	slot := func(i int) []byte { return buf[i*argSlot:] }
	if le.Uint64(slot(0)) != 1<<40 || int64(le.Uint64(slot(1))) != -2 || le.Uint32(slot(2)) != 3 ||
		int32(le.Uint32(slot(3))) != -4 || math.Float32frombits(le.Uint32(slot(4))) != 0.5 ||
		math.Float64frombits(le.Uint64(slot(5))) != -0.25 || le.Uint64(slot(6)) != 0xabc || le.Uint64(slot(7)) != 7 {
		t.Fatalf("layout % x", buf)
	}
	if buf, _, err := encodeArgs(nil); err != nil || len(buf) != 0 {
		t.Fatalf("no args: %v %v", buf, err)
	}
	// A struct by value: its bytes at an aligned offset, padded; the next
	// argument after it.
	st := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	buf, offs, err = encodeArgs([]any{uint32(9), st, uint64(5)})
	if err != nil || len(offs) != 3 || offs[1] != 8 || offs[2] != 24 || len(buf) != 32 ||
		string(buf[8:20]) != string(st) || le.Uint64(buf[24:]) != 5 {
		t.Fatalf("struct argument: offs %v, % x, %v", offs, buf, err)
	}
	for _, b := range [][]byte{{}, make([]byte, 4097)} {
		if _, _, err := encodeArgs([]any{b}); err == nil || !strings.Contains(err.Error(), "1 to 4096 bytes") {
			t.Errorf("%d-byte struct: %v", len(b), err)
		}
	}
	for i, bad := range []any{int(1), uint(1), "s", nil, true, &struct{}{}} {
		_, _, err := encodeArgs([]any{uint64(0), bad})
		if err == nil || !strings.Contains(err.Error(), "argument 1") || !strings.Contains(err.Error(), fmt.Sprintf("%T", bad)) {
			t.Errorf("case %d (%T): %v", i, bad, err)
		}
	}
}

func TestAllocationRegistry(t *testing.T) {
	d := &Driver{}
	d.addAlloc(allocation{base: 0x2000, size: 0x100, ctx: 1})
	d.addAlloc(allocation{base: 0x1000, size: 0x10, ctx: 2, host: true})
	d.addAlloc(allocation{base: 0x3000, size: 0x1000, ctx: 1})
	for _, c := range []struct {
		p  DevicePtr
		n  uint64
		ok bool
	}{
		{0x2000, 1, true}, {0x2000, 0x100, true}, {0x20ff, 1, true}, {0x2000, 0x101, false},
		{0x2100, 1, false}, {0x1fff, 1, false}, {0x1000, 0x10, true}, {0x100f, 2, false},
		{0x3800, 0x800, true}, {0x3800, math.MaxUint64, false}, {0, 1, false}, {0x5000, 1, false},
	} {
		if _, ok := d.findAlloc(c.p, c.n); ok != c.ok {
			t.Errorf("findAlloc(%#x, %#x) = %v, want %v", c.p, c.n, ok, c.ok)
		}
	}
	if _, err := d.takeAlloc(0x2001, func(allocation) error { return nil }); !errors.Is(err, ErrReleased) {
		t.Fatalf("took from the middle: %v", err)
	}
	refuse := errors.New("no")
	if _, err := d.takeAlloc(0x2000, func(allocation) error { return refuse }); err != refuse {
		t.Fatalf("check ignored: %v", err)
	}
	if a, err := d.takeAlloc(0x2000, func(allocation) error { return nil }); err != nil || a.size != 0x100 {
		t.Fatalf("take: %+v %v", a, err)
	}
	if _, ok := d.findAlloc(0x2000, 1); ok {
		t.Fatal("taken allocation still found")
	}
	d.dropAllocs(1)
	if _, ok := d.findAlloc(0x3000, 1); ok {
		t.Fatal("dropped context's allocation still found")
	}
	if _, ok := d.findAlloc(0x1000, 1); !ok {
		t.Fatal("other context's allocation dropped")
	}
}

func TestNilHandlesAreErrorsNotPanics(t *testing.T) {
	var (
		d  *Driver
		v  *Device
		c  *Context
		m  *Module
		f  *Function
		s  *Stream
		e  *Event
		g  *Graph
		x  *GraphExec
		ok = func(err error) {
			t.Helper()
			if err == nil {
				t.Error("nil handle accepted")
			}
		}
	)
	if d.Path() != "" || d.Version() != 0 || v.Ordinal() != -1 || c.Device() != nil || m.Name() != "" || m.Log() != "" || f.Name() != "" {
		t.Error("nil accessors")
	}
	_, err := d.DeviceCount()
	ok(err)
	_, err = d.Device(0)
	ok(err)
	_, err = v.Name()
	ok(err)
	_, err = v.Attribute(AttrMultiprocessorCount)
	ok(err)
	_, err = v.TotalMemory()
	ok(err)
	_, _, err = v.ComputeCapability()
	ok(err)
	_, err = v.CanAccessPeer(nil)
	ok(err)
	_, err = v.P2PAttribute(P2PAccessSupported, nil)
	ok(err)
	_, err = v.PrimaryContext()
	ok(err)
	ok(c.Release())
	ok(c.Synchronize())
	ok(c.EnablePeerAccess(nil))
	_, err = c.Alloc(1)
	ok(err)
	ok(c.Free(1))
	ok(c.Memset(1, 0, 1))
	ok(c.CopyToDevice(1, []byte{1}))
	ok(c.CopyFromDevice([]byte{1}, 1))
	_, err = c.AllocHost(1, false)
	ok(err)
	ok(c.FreeHost(nil))
	_, err = c.LoadModule("x", []byte("."))
	ok(err)
	_, err = c.NewStream()
	ok(err)
	_, err = c.NewEvent()
	ok(err)
	ok(c.Launch(nil, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil))
	ok(c.LaunchCooperative(nil, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil))
	_, err = m.Function("k")
	ok(err)
	ok(m.Unload())
	_, err = f.MaxActiveBlocksPerSM(32, 0)
	ok(err)
	_, err = s.Query()
	ok(err)
	ok(s.Synchronize())
	ok(s.Destroy())
	ok(e.Record(nil))
	ok(e.Synchronize())
	_, err = e.Elapsed(nil)
	ok(err)
	ok(e.Destroy())
	ok(s.BeginCapture())
	_, err = s.EndCapture()
	ok(err)
	_, err = g.Instantiate()
	ok(err)
	ok(g.Destroy())
	ok(x.Launch(nil))
	ok(x.Destroy())
	ok(c.CopyToDeviceAsync(1, nil, 0, 1, nil))
	ok(c.CopyFromDeviceAsync(nil, 0, 1, 1, nil))
}

// Eager module loading is chosen before cuInit unless the user chose.
func TestEagerModuleLoadingUnlessSet(t *testing.T) {
	t.Setenv(ModuleLoadingEnv, "")
	os.Unsetenv(ModuleLoadingEnv)
	t.Setenv(MaxConnectionsEnv, "")
	os.Unsetenv(MaxConnectionsEnv)
	eagerModuleLoading()
	if v := os.Getenv(ModuleLoadingEnv); v != "EAGER" {
		t.Fatalf("unset: %s=%q, want EAGER", ModuleLoadingEnv, v)
	}
	if v := os.Getenv(MaxConnectionsEnv); v != "32" || MaxConnections() != 32 {
		t.Fatalf("unset: %s=%q, want 32", MaxConnectionsEnv, v)
	}
	t.Setenv(MaxConnectionsEnv, "4")
	t.Setenv(ModuleLoadingEnv, "LAZY")
	eagerModuleLoading()
	if MaxConnections() != 4 {
		t.Fatalf("%s=4 set by the user: MaxConnections %d", MaxConnectionsEnv, MaxConnections())
	}
	if v := os.Getenv(ModuleLoadingEnv); v != "LAZY" {
		t.Fatalf("set by the user: %s=%q, want it kept", ModuleLoadingEnv, v)
	}
}
