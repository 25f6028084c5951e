package cuda_test

// These tests need a GPU: a real one, or the emulated driver
// (internal/cudaemu), where make test points RINGACTOR_LIBCUDA. They go
// through cuda.LoadDriver and cudatest, so they skip with the reason where
// there is none (set RINGACTOR_REQUIRE_GPU=1 to make that a failure).

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
)

// gpuTestPTX is written by hand: ra_test_store stores v at p (generic
// address, converted to global as nvcc does for pointer parameters), and
// ra_test_nop does nothing, to time launches. The emulated driver has host
// builds of both.
const gpuTestPTX = `
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
`

// gpu returns device 0 and its retained primary context, or skips.
func gpu(t *testing.T) (*cuda.Device, *cuda.Context) {
	t.Helper()
	return cudatest.Device(t, 0), cudatest.Context(t, 0)
}

func TestGPUDeviceInfo(t *testing.T) {
	dev, _ := gpu(t)
	d := cudatest.Driver(t)
	name, _ := dev.Name()
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := dev.TotalMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s, CUDA %d.%d; device 0: %s, sm_%d%d, %.1f GiB", d.Path(), d.Version()/1000, d.Version()%1000/10,
		name, major, minor, float64(mem)/(1<<30))
	for _, a := range []struct {
		name string
		attr cuda.Attribute
	}{
		{"SMs", cuda.AttrMultiprocessorCount},
		{"max threads/SM", cuda.AttrMaxThreadsPerMultiprocessor},
		{"host-native atomics", cuda.AttrHostNativeAtomicSupported},
		{"cooperative launch", cuda.AttrCooperativeLaunch},
		{"unified addressing", cuda.AttrUnifiedAddressing},
		{"can map host memory", cuda.AttrCanMapHostMemory},
		{"pageable memory access", cuda.AttrPageableMemoryAccess},
		{"PCI bus", cuda.AttrPCIBusID},
	} {
		v, err := dev.Attribute(a.attr)
		if err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		t.Logf("  %-24s %d", a.name, v)
	}
	if major < 7 {
		t.Errorf("sm_%d%d: ringactor's kernels need sm_70 or newer", major, minor)
	}
}

func TestGPUMemory(t *testing.T) {
	_, c := gpu(t)
	const n = 1 << 20
	p, err := c.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(p)
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(rand.IntN(256))
	}
	if err := c.CopyToDevice(p, src); err != nil {
		t.Fatal(err)
	}
	if err := c.Memset(p, 0xee, 64); err != nil {
		t.Fatal(err)
	}
	copy(src, bytes.Repeat([]byte{0xee}, 64))
	got := make([]byte, n)
	if err := c.CopyFromDevice(got, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("device round trip changed the bytes")
	}

	h, err := c.AllocHost(4096, true)
	if err != nil {
		t.Fatal(err)
	}
	defer c.FreeHost(h)
	if h.Device == 0 || len(h.Bytes) != 4096 || !bytes.Equal(h.Bytes, make([]byte, 4096)) {
		t.Fatalf("mapped host memory: device %#x, %d bytes, zeroed %v", h.Device, len(h.Bytes), bytes.Equal(h.Bytes, make([]byte, 4096)))
	}
	copy(h.Bytes, "mapped")
	back := make([]byte, 6)
	if err := c.CopyFromDevice(back, h.Device); err != nil || string(back) != "mapped" {
		t.Fatalf("reading mapped memory through its device address: %q, %v", back, err)
	}
}

func TestGPULaunch(t *testing.T) {
	dev, c := gpu(t)
	m, store := testModule(t, c)
	nop, err := m.Function("ra_test_nop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Function("missing"); !strings.Contains(err.Error(), "CUDA_ERROR_NOT_FOUND") {
		t.Fatalf("missing function: %v", err)
	}
	if n, err := store.MaxActiveBlocksPerSM(128, 0); err != nil || n < 1 {
		t.Fatalf("occupancy: %d, %v", n, err)
	} else {
		t.Logf("ra_test_store: %d blocks of 128 threads per SM", n)
	}

	h, err := c.AllocHost(8, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.FreeHost(h)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const v = uint64(0x0123456789abcdef)
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	if err := c.Launch(store, one, one, 0, s, h.Device, v); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint64(h.Bytes); got != v {
		t.Fatalf("kernel stored %#x in mapped host memory, want %#x", got, v)
	}
	if done, err := s.Query(); err != nil || !done {
		t.Fatalf("Query after Synchronize: %v, %v", done, err)
	}

	if coop, _ := dev.Attribute(cuda.AttrCooperativeLaunch); coop == 1 {
		if err := c.LaunchCooperative(store, one, one, 0, s, h.Device, v+1); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(h.Bytes); got != v+1 {
			t.Fatalf("cooperative kernel stored %#x, want %#x", got, v+1)
		}
	}

	// Launch cost: 1000 empty launches, each waited for.
	start, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer start.Destroy()
	end, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer end.Destroy()
	const launches = 1000
	wall := time.Now()
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < launches; i++ {
		if err := c.Launch(nop, one, one, 0, s); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	if err := end.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	el, err := end.Elapsed(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("empty launch + stream sync: mean %v by events, %v by wall clock (%d launches)",
		el/launches, time.Since(wall)/launches, launches)
}

// TestGPUGraph captures copy in, kernel, copy out on a stream, replays it,
// and times a replay against the same work issued call by call.
func TestGPUGraph(t *testing.T) {
	_, c := gpu(t)
	_, store := testModule(t, c)
	h, err := c.AllocHost(32, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.FreeHost(h)
	p, err := c.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(p)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	work := func() error {
		if err := c.CopyToDeviceAsync(p, h, 0, 8, s); err != nil {
			return err
		}
		if err := c.Launch(store, one, one, 0, s, p+8, uint64(0xfeed)); err != nil {
			return err
		}
		return c.CopyFromDeviceAsync(h, 16, p, 16, s)
	}
	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	if err := work(); err != nil {
		t.Fatal(err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	defer x.Destroy()
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for i := uint64(1); i <= 3; i++ {
		le.PutUint64(h.Bytes, i)
		if err := x.Launch(s); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if got, stored := le.Uint64(h.Bytes[16:]), le.Uint64(h.Bytes[24:]); got != i || stored != 0xfeed {
			t.Fatalf("replay %d: copied back %#x and %#x, want %#x and 0xfeed", i, got, stored, i)
		}
	}

	const n = 2000
	timeIt := func(step func() error) time.Duration {
		t0 := time.Now()
		for range n {
			if err := step(); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(t0) / n
	}
	calls := timeIt(work)
	replay := timeIt(func() error { return x.Launch(s) })
	t.Logf("copy in + kernel + copy out, waited for: %v issued call by call, %v as one graph launch", calls, replay)
}

func TestGPUPeers(t *testing.T) {
	d0, c0 := gpu(t)
	d1 := cudatest.Device(t, 1)
	ok, err := d0.CanAccessPeer(d1)
	if err != nil {
		t.Fatal(err)
	}
	rank, _ := d0.P2PAttribute(cuda.P2PPerformanceRank, d1)
	atomics, _ := d0.P2PAttribute(cuda.P2PNativeAtomicSupported, d1)
	t.Logf("device 0 -> 1: peer access %v, performance rank %d, native atomics %d", ok, rank, atomics)
	if !ok {
		return
	}
	c1 := cudatest.Context(t, 1)
	for i := 0; i < 2; i++ {
		if err := c0.EnablePeerAccess(c1); err != nil {
			t.Fatalf("enable %d: %v", i, err)
		}
	}
}

// testModule loads the test module into c (unloaded at cleanup) and returns
// it with its ra_test_store kernel.
func testModule(t *testing.T, c *cuda.Context) (*cuda.Module, *cuda.Function) {
	t.Helper()
	m, err := c.LoadModule("gpu_test.ptx", []byte(gpuTestPTX))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Unload() })
	store, err := m.Function("ra_test_store")
	if err != nil {
		t.Fatal(err)
	}
	return m, store
}
