//go:build cgo && (linux || freebsd)

package cuda

// These tests run the binding against the emulated driver
// (internal/cudaemu), the project's one stand-in libcuda, built here with
// the C++ compiler, so they need no GPU. They load it with loadDriverFrom,
// never with LoadDriver, whose once-per-process result belongs to the
// real-GPU tests (gpu_test.go), which make test points at the emulator
// too. Each library here is a variant of its own name (cudaemu.Variant),
// so an instance of its own beside that one, configured by fakeEnv where
// it is loaded.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/ringactor/ringactor/internal/cudaemu"
)

var fake struct {
	once    sync.Once
	dir     string // a temporary directory to remove, when not building in the checkout's .emu
	lib     string // the emulated driver
	oldLib  string // without cuDevicePrimaryCtxRelease_v2 (a driver older than CUDA 11.0)
	noGraph string // without the graph API
	graphV2 string // whose only instantiate is cuGraphInstantiate_v2 (CUDA 11.0 to 11.3)
	skipWhy string // why the emulator could not be built
	d       *Driver
	err     error

	mu     sync.Mutex
	loaded map[string]*Driver // by library: every variant loaded, for TestMain's rule check
}

// fakeEnv is the configuration the tests expect of the emulated driver,
// set where a variant is loaded (its cuInit reads it), whatever the
// environment says: two devices unlike each other, eight co-resident
// blocks per SM, no lagging copies, no jitter, managed memory, a cuInit
// that succeeds.
var fakeEnv = [][2]string{
	{"RINGACTOR_EMU_DEVICES", "2"},
	{"RINGACTOR_EMU_SMS", "4,2"},
	{"RINGACTOR_EMU_BLOCKS_PER_SM", "8"},
	{"RINGACTOR_EMU_MEMORY_MIB", "16384,8192"},
	{"RINGACTOR_EMU_CC", "9.0,8.6"},
	{"RINGACTOR_EMU_PEERS", "all"},
	{"RINGACTOR_EMU_COPY_LAG_US", "0"},
	{"RINGACTOR_EMU_JITTER", "0"},
	{"RINGACTOR_EMU_MANAGED", "1"},
	{"RINGACTOR_EMU_INIT_RESULT", ""},
}

func setFakeEnv(t *testing.T) {
	for _, kv := range fakeEnv {
		t.Setenv(kv[0], kv[1])
	}
}

// loadFakeVariant loads the binding over the variant lib, configured.
func loadFakeVariant(t *testing.T, lib string) (*Driver, error) {
	setFakeEnv(t)
	d, err := loadDriverFrom([]string{lib})
	if err == nil {
		fake.mu.Lock()
		if fake.loaded == nil {
			fake.loaded = map[string]*Driver{}
		}
		fake.loaded[lib] = d
		fake.mu.Unlock()
	}
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	// The binding made no call a real driver would hang or fail on: the
	// emulator counts each (device attribute 9100) and names it on stderr.
	// The drivers checked: every variant loaded here, and LoadDriver's
	// where it is the emulator (the real-GPU tests under make test).
	drivers := fake.loaded
	if driverLib != nil {
		if dev, err := driverLib.Device(0); err == nil {
			if name, _ := dev.Name(); strings.HasPrefix(name, "ringactor emulated GPU") {
				if drivers == nil {
					drivers = map[string]*Driver{}
				}
				drivers[driverLib.Path()] = driverLib
			}
		}
	}
	for lib, d := range drivers {
		dev, err := d.Device(0)
		if err == nil {
			var n int
			if n, err = dev.Attribute(9100); err == nil && n != 0 {
				err = fmt.Errorf("%d call(s) broke a rule of the emulated driver: see the cudaemu: RULE VIOLATION lines above", n)
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", lib, err)
			code = 1
		}
	}
	if fake.dir != "" {
		os.RemoveAll(fake.dir)
	}
	os.Exit(code)
}

// buildFake builds the emulated driver's variants once per test binary,
// in the checkout's .emu (beside make emu's build, whose objects they
// share: usually they only link), and loads the driver.
func buildFake(t *testing.T) {
	t.Helper()
	fake.once.Do(func() {
		if _, err := cudaemu.Compiler(); err != nil {
			fake.skipWhy = err.Error()
			return
		}
		dir := cudaemu.TestDir()
		if dir == "" {
			if dir, fake.err = os.MkdirTemp("", "cudaemu"); fake.err != nil {
				return
			}
			fake.dir = dir
		}
		var graphAPI []string
		for _, s := range (&driverFuncs{}).optionalSymbols() {
			graphAPI = append(graphAPI, s.name)
		}
		var log strings.Builder
		for _, v := range []struct {
			lib     *string
			variant cudaemu.Variant
		}{
			{&fake.lib, cudaemu.Variant{Name: "cuda-test"}},
			{&fake.oldLib, cudaemu.Variant{Name: "cuda-test-old", Without: []string{"cuDevicePrimaryCtxRelease_v2"}}},
			{&fake.noGraph, cudaemu.Variant{Name: "cuda-test-nograph", Without: graphAPI}},
			{&fake.graphV2, cudaemu.Variant{Name: "cuda-test-graphv2", Without: []string{"cuGraphInstantiateWithFlags"}}},
		} {
			if *v.lib, fake.err = cudaemu.BuildVariant(dir, &log, v.variant); fake.err != nil {
				return
			}
		}
		if log.Len() > 0 {
			t.Logf("%s", log.String())
		}
		fake.d, fake.err = loadFakeVariant(t, fake.lib)
	})
	if fake.skipWhy != "" {
		t.Skipf("skipping: %s", fake.skipWhy)
	}
	if fake.err != nil {
		t.Fatal(fake.err)
	}
}

// fakeDriver is the binding loaded over the emulated driver.
func fakeDriver(t *testing.T) *Driver {
	buildFake(t)
	return fake.d
}

// fakeContext retains device ordinal's primary context for the test.
func fakeContext(t *testing.T, ordinal int) *Context {
	t.Helper()
	dev, err := fakeDriver(t).Device(ordinal)
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

// fakeAttr reads one of the emulator's records of what reached it, device
// attributes 9001 to 9019, which no real driver has (internal/cudaemu's
// csrc/cudaemu.cpp, struct Record).
func fakeAttr(t *testing.T, c *Context, a int) int {
	t.Helper()
	v, err := c.Device().Attribute(Attribute(a))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func wantIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want one matching %v", err, target)
	}
}

func wantMention(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestFakeDevices(t *testing.T) {
	d := fakeDriver(t)
	if d.Path() != fake.lib || d.Version() != 12080 {
		t.Fatalf("path %q version %d", d.Path(), d.Version())
	}
	n, err := d.DeviceCount()
	if err != nil || n != 2 {
		t.Fatalf("DeviceCount = %d, %v", n, err)
	}
	for i, want := range []struct {
		sms, major, minor int
		mem               uint64
	}{{4, 9, 0, 16 << 30}, {2, 8, 6, 8 << 30}} {
		dev, err := d.Device(i)
		if err != nil {
			t.Fatal(err)
		}
		if dev.Ordinal() != i {
			t.Errorf("Ordinal = %d", dev.Ordinal())
		}
		if name, err := dev.Name(); err != nil || name != fmt.Sprintf("ringactor emulated GPU %d", i) {
			t.Errorf("Name = %q, %v", name, err)
		}
		if major, minor, err := dev.ComputeCapability(); err != nil || major != want.major || minor != want.minor {
			t.Errorf("ComputeCapability = %d.%d, %v", major, minor, err)
		}
		if mem, err := dev.TotalMemory(); err != nil || mem != want.mem {
			t.Errorf("TotalMemory = %d, %v", mem, err)
		}
		for a, v := range map[Attribute]int{
			AttrMultiprocessorCount: want.sms, AttrMaxThreadsPerBlock: 1024, AttrCanMapHostMemory: 1,
			AttrUnifiedAddressing: 1, AttrMaxThreadsPerMultiprocessor: 2048, AttrCooperativeLaunch: 1,
			AttrHostNativeAtomicSupported: 0, AttrConcurrentManagedAccess: 1, AttrManagedMemory: 1, AttrPageableMemoryAccess: 0,
			AttrPCIBusID: 0x10 + i, AttrPCIDeviceID: 0, AttrKernelExecTimeout: 0,
		} {
			if got, err := dev.Attribute(a); err != nil || got != v {
				t.Errorf("device %d attribute %d = %d, %v; want %d", i, a, got, err, v)
			}
		}
	}
	_, err = d.Device(2)
	wantMention(t, err, "no device 2", "2 device(s)", "ordinals 0 to 1")
	_, err = d.Device(-1)
	wantMention(t, err, "no device -1")
	dev, _ := d.Device(0)
	_, err = dev.Attribute(Attribute(12345))
	wantIs(t, err, &Error{Result: ErrorInvalidValue})
	wantMention(t, err, "cuDeviceGetAttribute(12345)", "CUDA_ERROR_INVALID_VALUE (invalid argument)")
}

func TestFakeErrorNameFallback(t *testing.T) {
	dev, err := fakeDriver(t).Device(0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dev.Attribute(9999) // the emulator answers with a code it has no name for
	var e *Error
	if !errors.As(err, &e) || e.Result != 12345 || e.Name != "CUresult(12345)" || e.Text != "" {
		t.Fatalf("got %#v", err)
	}
	if want := "cuda: cuDeviceGetAttribute(9999): CUresult(12345)"; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}

func TestFakePeers(t *testing.T) {
	d := fakeDriver(t)
	d0, _ := d.Device(0)
	d1, _ := d.Device(1)
	if ok, err := d0.CanAccessPeer(d1); err != nil || !ok {
		t.Fatalf("0->1: %v, %v", ok, err)
	}
	if ok, err := d0.CanAccessPeer(d0); err != nil || ok {
		t.Fatalf("0->0: %v, %v", ok, err)
	}
	if v, err := d1.P2PAttribute(P2PAccessSupported, d0); err != nil || v != 1 {
		t.Fatalf("access supported: %d, %v", v, err)
	}
	if v, err := d1.P2PAttribute(P2PNativeAtomicSupported, d0); err != nil || v != 0 {
		t.Fatalf("native atomics: %d, %v", v, err)
	}
	_, err := d0.P2PAttribute(P2PAccessSupported, d0)
	wantIs(t, err, &Error{Result: ErrorInvalidDevice})

	c0, c1 := fakeContext(t, 0), fakeContext(t, 1)
	for i := 0; i < 2; i++ { // the second time the driver says already enabled
		if err := c0.EnablePeerAccess(c1); err != nil {
			t.Fatalf("enable %d: %v", i, err)
		}
	}
	wantMention(t, c0.EnablePeerAccess(c0), "own peer")
	wantMention(t, c0.EnablePeerAccess(nil), "nil")
}

func TestFakeMemoryRoundTrip(t *testing.T) {
	c := fakeContext(t, 0)
	live := fakeAttr(t, c, 9011)
	const n = 4096
	p, err := c.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(rand.IntN(256))
	}
	if err := c.CopyToDevice(p, src); err != nil {
		t.Fatal(err)
	}
	if err := c.Memset(p+100, 0x7f, 50); err != nil {
		t.Fatal(err)
	}
	copy(src[100:150], bytes.Repeat([]byte{0x7f}, 50))
	got := make([]byte, n)
	if err := c.CopyFromDevice(got, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("round trip changed the bytes")
	}
	part := make([]byte, 16)
	if err := c.CopyFromDevice(part, p+n-16); err != nil || !bytes.Equal(part, src[n-16:]) {
		t.Fatalf("tail copy: %v", err)
	}
	if err := c.CopyToDevice(p, nil); err != nil {
		t.Fatalf("empty copy: %v", err)
	}

	// Out of bounds and bogus pointers are refused before the driver sees them.
	wantMention(t, c.CopyFromDevice(make([]byte, 17), p+n-16), "not inside a live allocation")
	wantMention(t, c.CopyToDevice(p+n, []byte{1}), "not inside a live allocation")
	wantMention(t, c.CopyToDevice(12345, []byte{1}), "not inside a live allocation")
	wantMention(t, c.Memset(p, 0, -1), "negative")
	wantMention(t, c.Free(p+1), "not the start of a live allocation")

	if err := c.Free(p); err != nil {
		t.Fatal(err)
	}
	if got := fakeAttr(t, c, 9011); got != live {
		t.Fatalf("the driver holds %d allocations after Free, had %d before", got, live)
	}
	wantIs(t, c.CopyFromDevice(got, p), ErrReleased)
	wantIs(t, c.CopyToDevice(p, src), ErrReleased)
	wantIs(t, c.Memset(p, 0, 1), ErrReleased)
	wantIs(t, c.Free(p), ErrReleased)
}

func TestFakeAllocErrors(t *testing.T) {
	c := fakeContext(t, 0)
	_, err := c.Alloc(1 << 41)
	wantIs(t, err, &Error{Result: 2})
	wantIs(t, err, &Error{Result: ErrorOutOfMemory})
	wantMention(t, err, "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)", "device 0")
	var e *Error
	if !errors.As(err, &e) || e.Call != "cuMemAlloc_v2" || e.Name != "CUDA_ERROR_OUT_OF_MEMORY" || e.Text != "out of memory" {
		t.Fatalf("error fields %#v", e)
	}
	for _, n := range []int{0, -1} {
		if _, err := c.Alloc(n); err == nil {
			t.Errorf("Alloc(%d) succeeded", n)
		}
		if _, err := c.AllocHost(n, false); err == nil {
			t.Errorf("AllocHost(%d) succeeded", n)
		}
	}
}

func TestFakeHostMemory(t *testing.T) {
	c := fakeContext(t, 0)
	for _, portable := range []bool{false, true} {
		m, err := c.AllocHost(64, portable)
		if err != nil {
			t.Fatal(err)
		}
		wantFlags := 2 // DEVICEMAP
		if portable {
			wantFlags |= 1 // PORTABLE
		}
		if got := fakeAttr(t, c, 9001); got != wantFlags {
			t.Errorf("cuMemHostAlloc flags %#x, want %#x", got, wantFlags)
		}
		if m.Portable != portable || len(m.Bytes) != 64 || m.Device == 0 {
			t.Fatalf("got %+v", m)
		}
		if !bytes.Equal(m.Bytes, make([]byte, 64)) { // the emulator fills it with 0xA5
			t.Fatalf("host memory not zeroed: % x", m.Bytes)
		}
		copy(m.Bytes, "written by the host")
		got := make([]byte, 19)
		if err := c.CopyFromDevice(got, m.Device); err != nil || string(got) != "written by the host" {
			t.Fatalf("device view reads %q, %v", got, err)
		}
		wantMention(t, c.Free(m.Device), "FreeHost")
		if err := c.FreeHost(m); err != nil {
			t.Fatal(err)
		}
		if m.Bytes != nil {
			t.Fatal("Bytes still set after FreeHost")
		}
		wantIs(t, c.FreeHost(m), ErrReleased)
		wantIs(t, c.CopyFromDevice(got, m.Device), ErrReleased)
	}
	wantMention(t, c.FreeHost(nil), "nil")
}

// fakePTX is the test module. The emulated driver resolves each .entry to
// its host build (internal/cudaemu's cudaemu_test_* kernels, which do
// what these bodies do on a GPU): ra_test_store stores v at p, ra_test_nop
// does nothing, ra_test_wait returns once the u32 at flag is not 0, and
// ra_test_args stores its arguments a to g, each in 8 bytes, at out.
const fakePTX = `
.version 7.0
.target sm_70
.address_size 64

.visible .entry ra_test_store(
	.param .u64 p,
	.param .u64 v
)
{
	.reg .b64 %rd<4>;

	ld.param.u64 %rd1, [p];
	ld.param.u64 %rd2, [v];
	cvta.to.global.u64 %rd3, %rd1;
	st.global.u64 [%rd3], %rd2;
	ret;
}

.visible .entry ra_test_nop()
{
	ret;
}

.visible .entry ra_test_wait(
	.param .u64 flag
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;

	ld.param.u64 %rd1, [flag];
$L_wait:
	ld.volatile.u32 %r1, [%rd1];
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra $L_wait;
	ret;
}

.visible .entry ra_test_args(
	.param .u64 out,
	.param .u64 a,
	.param .s64 b,
	.param .u32 c,
	.param .s32 d,
	.param .f32 e,
	.param .f64 f,
	.param .u64 g
)
{
	.reg .b32 %r<4>;
	.reg .f32 %f<2>;
	.reg .b64 %rd<10>;
	.reg .f64 %fd<2>;

	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	ld.param.u64 %rd3, [a];
	st.global.u64 [%rd2], %rd3;
	ld.param.s64 %rd4, [b];
	st.global.u64 [%rd2+8], %rd4;
	ld.param.u32 %r1, [c];
	cvt.u64.u32 %rd5, %r1;
	st.global.u64 [%rd2+16], %rd5;
	ld.param.s32 %r2, [d];
	cvt.u64.u32 %rd6, %r2;
	st.global.u64 [%rd2+24], %rd6;
	ld.param.f32 %f1, [e];
	mov.b32 %r3, %f1;
	cvt.u64.u32 %rd7, %r3;
	st.global.u64 [%rd2+32], %rd7;
	ld.param.f64 %fd1, [f];
	st.global.f64 [%rd2+40], %fd1;
	ld.param.u64 %rd8, [g];
	st.global.u64 [%rd2+48], %rd8;
	ret;
}
`

// loadFake loads the test module into c (unloaded at cleanup) and returns
// it with its ra_test_store kernel.
func loadFake(t *testing.T, c *Context) (*Module, *Function) {
	t.Helper()
	m, err := c.LoadModule("test.ptx", []byte(fakePTX))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Unload() })
	f, err := m.Function("ra_test_store")
	if err != nil {
		t.Fatal(err)
	}
	return m, f
}

func TestFakeLaunchMarshalsArguments(t *testing.T) {
	c := fakeContext(t, 0)
	m, f := loadFake(t, c)
	if m.Name() != "test.ptx" || m.Log() != "cudaemu: resolved to host builds" || f.Name() != "ra_test_store" {
		t.Fatalf("module %q log %q function %q", m.Name(), m.Log(), f.Name())
	}

	// Into mapped host memory, on the default stream.
	h, err := c.AllocHost(8, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.FreeHost(h)
	const v = uint64(0xdeadbeefcafef00d)
	if err := c.Launch(f, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, nil, h.Device, v); err != nil {
		t.Fatal(err)
	}
	if err := c.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint64(h.Bytes); got != v {
		t.Fatalf("kernel stored %#x, want %#x", got, v)
	}
	if fakeAttr(t, c, 9010) != 0 || fakeAttr(t, c, 9009) != 0 {
		t.Fatal("nil stream did not launch on the default stream, or launch was cooperative")
	}

	// Into device memory, on a stream, with a shape and shared memory, and
	// with the pointer passed as a uintptr and arguments of every type,
	// which ra_test_args stores as the driver received them.
	args, err := m.Function("ra_test_args")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Alloc(56)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(p)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	if err := c.Launch(args, Dim3{3, 2, 1}, Dim3{64, 2, 1}, 128, s, uintptr(p), uint64(42),
		int64(-1), uint32(7), int32(-7), float32(1.5), float64(2.5), DevicePtr(9)); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 56)
	if err := c.CopyFromDevice(out, p); err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint64{42, math.MaxUint64, 7, 0xfffffff9, uint64(math.Float32bits(1.5)), math.Float64bits(2.5), 9} {
		if got := binary.LittleEndian.Uint64(out[8*i:]); got != want {
			t.Errorf("argument %d reached the kernel as %#x, want %#x", i+1, got, want)
		}
	}
	for a, want := range map[int]int{9002: 3, 9003: 2, 9004: 1, 9005: 64, 9006: 2, 9007: 1, 9008: 128, 9010: 1} {
		if got := fakeAttr(t, c, a); got != want {
			t.Errorf("launch record %d = %d, want %d", a, got, want)
		}
	}

	// Cooperative: recorded as such, and refused when the grid cannot be
	// co-resident (here: 4 SMs x 8 blocks).
	if err := c.LaunchCooperative(f, Dim3{32, 1, 1}, Dim3{1, 1, 1}, 0, s, p, uint64(43)); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if fakeAttr(t, c, 9009) != 1 {
		t.Error("LaunchCooperative did not use cuLaunchCooperativeKernel")
	}
	err = c.LaunchCooperative(f, Dim3{33, 1, 1}, Dim3{1, 1, 1}, 0, s, p, uint64(44))
	wantIs(t, err, &Error{Result: ErrorCooperativeLaunchTooLarge})
	wantMention(t, err, "cuLaunchCooperativeKernel(ra_test_store)")
	if n, err := f.MaxActiveBlocksPerSM(256, 0); err != nil || n != 8 {
		t.Fatalf("MaxActiveBlocksPerSM = %d, %v", n, err)
	}
	if _, err := f.MaxActiveBlocksPerSM(0, 0); err == nil {
		t.Fatal("block size 0 accepted")
	}
}

func TestFakeLaunchRefusesBadInput(t *testing.T) {
	c := fakeContext(t, 0)
	m, f := loadFake(t, c)
	launches := fakeAttr(t, c, 9012)
	one := Dim3{1, 1, 1}
	wantMention(t, c.Launch(f, one, one, 0, nil, DevicePtr(0), "text"), "argument 1", "string")
	wantMention(t, c.Launch(f, one, one, 0, nil, 5), "argument 0", "int", "int32")
	wantMention(t, c.Launch(f, one, one, 0, nil, struct{}{}), "argument 0", "struct {}")
	wantMention(t, c.Launch(f, Dim3{0, 1, 1}, one, 0, nil), "at least 1")
	wantMention(t, c.Launch(f, one, Dim3{1, 0, 1}, 0, nil), "at least 1")
	wantMention(t, c.Launch(f, one, one, -1, nil), "shared memory")
	wantMention(t, c.Launch(nil, one, one, 0, nil), "nil *Function")

	c1 := fakeContext(t, 1)
	wantMention(t, c1.Launch(f, one, one, 0, nil), "another context")
	s1, err := c1.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	wantMention(t, c.Launch(f, one, one, 0, s1), "another context")
	s1.Destroy()
	if got := fakeAttr(t, c, 9012); got != launches {
		t.Fatalf("%d refused launches reached the driver", got-launches)
	}

	if err := m.Unload(); err != nil {
		t.Fatal(err)
	}
	wantIs(t, c.Launch(f, one, one, 0, nil), ErrReleased)
	_, err = f.MaxActiveBlocksPerSM(32, 0)
	wantIs(t, err, ErrReleased)
	_, err = m.Function("ra_test_nop")
	wantIs(t, err, ErrReleased)
	wantIs(t, m.Unload(), ErrReleased)
}

func TestFakeModuleErrors(t *testing.T) {
	c := fakeContext(t, 0)
	_, err := c.LoadModule("broken.ptx", []byte("this is not ptx"))
	var e *Error
	const log = "cudaemu: not PTX text (no .version or .target)"
	if !errors.As(err, &e) || e.Result != ErrorInvalidPTX || e.Log != log {
		t.Fatalf("got %#v", err)
	}
	wantMention(t, err, "cuModuleLoadDataEx(broken.ptx)", "CUDA_ERROR_INVALID_PTX", log)

	_, err = c.LoadModule("empty.ptx", []byte("\x00// after the NUL"))
	wantMention(t, err, "empty")

	m, _ := loadFake(t, c)
	_, err = m.Function("missing")
	wantIs(t, err, &Error{Result: ErrorNotFound})
	wantMention(t, err, "cuModuleGetFunction(missing)", "CUDA_ERROR_NOT_FOUND")
}

func TestFakeStreamsAndEvents(t *testing.T) {
	c := fakeContext(t, 0)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	if got := fakeAttr(t, c, 9013); got != 1 {
		t.Errorf("stream flags %#x, want CU_STREAM_NON_BLOCKING", got)
	}
	// Busy while a kernel on it waits for the host's flag, done after.
	m, _ := loadFake(t, c)
	wait, err := m.Function("ra_test_wait")
	if err != nil {
		t.Fatal(err)
	}
	flag, err := c.AllocHost(4, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.FreeHost(flag)
	release := func() { atomic.StoreUint32((*uint32)(unsafe.Pointer(&flag.Bytes[0])), 1) }
	defer release() // before the memory goes, should the test fail first
	if err := c.Launch(wait, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, s, flag.Device); err != nil {
		t.Fatal(err)
	}
	if done, err := s.Query(); err != nil || done {
		t.Fatalf("Query while the kernel waits = %v, %v", done, err)
	}
	release()
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if done, err := s.Query(); err != nil || !done {
		t.Fatalf("Query after Synchronize = %v, %v", done, err)
	}

	start, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	end, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Millisecond)
	if err := end.Record(nil); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	el, err := end.Elapsed(start)
	if err != nil || el < 2*time.Millisecond || el > 5*time.Second {
		t.Fatalf("Elapsed = %v, %v", el, err)
	}

	if err := s.Destroy(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Query()
	wantIs(t, err, ErrReleased)
	wantIs(t, s.Synchronize(), ErrReleased)
	wantIs(t, s.Destroy(), ErrReleased)
	wantIs(t, start.Record(s), ErrReleased)

	if err := start.Destroy(); err != nil {
		t.Fatal(err)
	}
	_, err = end.Elapsed(start)
	wantIs(t, err, ErrReleased)
	wantIs(t, start.Record(nil), ErrReleased)
	wantIs(t, start.Destroy(), ErrReleased)
	if err := end.Destroy(); err != nil {
		t.Fatal(err)
	}
}

func TestFakeReleaseEndsEverything(t *testing.T) {
	dev, err := fakeDriver(t).Device(1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	if c.Device() != dev {
		t.Fatal("Context.Device is not the device it came from")
	}
	p, err := c.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	m, f := loadFake(t, c)
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	_, err = c.Alloc(8)
	wantIs(t, err, ErrReleased)
	wantIs(t, c.Synchronize(), ErrReleased)
	wantIs(t, c.Free(p), ErrReleased)
	_, err = s.Query()
	wantIs(t, err, ErrReleased)
	_, err = m.Function("ra_test_store")
	wantIs(t, err, ErrReleased)
	wantIs(t, c.Launch(f, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil), ErrReleased)

	// The context was the device's last retain, so the driver destroyed it
	// with its memory: a new context does not see the old allocation.
	c2 := fakeContext(t, 1)
	wantIs(t, c2.CopyToDevice(p, []byte{1}), ErrReleased)
}

func TestFakeConcurrentUse(t *testing.T) {
	// The current context is per OS thread, the emulator's as the driver's: calls
	// from many goroutines on many threads all find their context current.
	ctxs := []*Context{fakeContext(t, 0), fakeContext(t, 1)}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ctxs[g%2]
			for i := 0; i < 50; i++ {
				p, err := c.Alloc(256)
				if err != nil {
					errs <- err
					return
				}
				buf := bytes.Repeat([]byte{byte(g)}, 256)
				if err := c.CopyToDevice(p, buf); err != nil {
					errs <- err
					return
				}
				got := make([]byte, 256)
				if err := c.CopyFromDevice(got, p); err != nil || !bytes.Equal(got, buf) {
					errs <- fmt.Errorf("goroutine %d: round trip %v", g, err)
					return
				}
				if err := c.Free(p); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestFakeInitFailure(t *testing.T) {
	buildFake(t)
	setFakeEnv(t)
	t.Setenv("RINGACTOR_EMU_INIT_RESULT", "100")
	_, err := loadDriverFrom([]string{fake.lib})
	wantIs(t, err, &Error{Result: ErrorNoDevice})
	wantMention(t, err, fake.lib, "cuInit", "CUDA_ERROR_NO_DEVICE")
}

func TestFakeMissingSymbol(t *testing.T) {
	buildFake(t)
	_, err := loadFakeVariant(t, fake.oldLib)
	wantIs(t, err, ErrNoDriver)
	wantMention(t, err, fake.oldLib, "lacks cuDevicePrimaryCtxRelease_v2", "too old")
}
