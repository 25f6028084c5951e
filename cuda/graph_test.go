//go:build cgo && (linux || freebsd)

package cuda

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// contextOf retains device ordinal's primary context of d for the test.
func contextOf(t *testing.T, d *Driver, ordinal int) *Context {
	t.Helper()
	dev, err := d.Device(ordinal)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Release() })
	return c
}

// hostAndDevice allocates n bytes of mapped host memory and of device
// memory in c, and a stream, freed when the test ends.
func hostAndDevice(t *testing.T, c *Context, n int) (*HostMemory, DevicePtr, *Stream) {
	t.Helper()
	h, err := c.AllocHost(n, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.FreeHost(h) })
	p, err := c.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Free(p) })
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Destroy() })
	return h, p, s
}

func TestFakeAsyncCopies(t *testing.T) {
	c := fakeContext(t, 0)
	h, p, s := hostAndDevice(t, c, 32)
	copies := fakeAttr(t, c, 9019)
	copy(h.Bytes, "sixteen bytes in")
	if err := c.CopyToDeviceAsync(p, h, 0, 16, s); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyFromDeviceAsync(h, 16, p, 16, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if string(h.Bytes[16:]) != "sixteen bytes in" {
		t.Fatalf("round trip through the device gave %q", h.Bytes[16:])
	}
	if got := fakeAttr(t, c, 9019) - copies; got != 2 {
		t.Fatalf("%d async copies reached the driver, want 2", got)
	}
	// The default stream, and empty copies.
	if err := c.CopyToDeviceAsync(p, h, 0, 32, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyFromDeviceAsync(h, 32, p, 0, s); err != nil {
		t.Fatal(err)
	}

	// Refused before the driver sees them.
	copies = fakeAttr(t, c, 9019)
	wantMention(t, c.CopyToDeviceAsync(p, h, 30, 4, s), "outside the 32-byte host memory")
	wantMention(t, c.CopyFromDeviceAsync(h, -1, p, 4, s), "outside")
	wantMention(t, c.CopyFromDeviceAsync(h, 0, p, -1, s), "outside")
	wantMention(t, c.CopyToDeviceAsync(p+30, h, 0, 4, s), "not inside a live allocation")
	wantMention(t, c.CopyToDeviceAsync(p, nil, 0, 4, s), "nil *HostMemory")
	c1 := fakeContext(t, 1)
	p1, err := c1.Alloc(8)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Free(p1)
	wantMention(t, c1.CopyToDeviceAsync(p1, h, 0, 8, nil), "pinned for another context", "portable")
	s1, err := c1.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	wantMention(t, c.CopyToDeviceAsync(p, h, 0, 8, s1), "cuMemcpyHtoDAsync_v2", "another context")
	s1.Destroy()
	wantIs(t, c.CopyToDeviceAsync(p, h, 0, 8, s1), ErrReleased)
	if got := fakeAttr(t, c, 9019); got != copies {
		t.Fatalf("%d refused copies reached the driver", got-copies)
	}

	// Portable host memory may be copied from any context.
	ph, err := c.AllocHost(8, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.CopyToDeviceAsync(p1, ph, 0, 8, nil); err != nil {
		t.Fatalf("portable memory from another context: %v", err)
	}
	if err := c.FreeHost(ph); err != nil {
		t.Fatal(err)
	}
	wantIs(t, c.CopyToDeviceAsync(p, ph, 0, 8, nil), ErrReleased)
}

// capturePerMessage captures what a launch per message does: copy in,
// kernel, copy out. The kernel stores v after the 8 bytes copied in, and
// the copy out brings both back after them.
func capturePerMessage(t *testing.T, c *Context, f *Function, h *HostMemory, p DevicePtr, s *Stream, v uint64) *Graph {
	t.Helper()
	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyToDeviceAsync(p, h, 0, 8, s); err != nil {
		t.Fatal(err)
	}
	if err := c.Launch(f, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, s, p+8, v); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyFromDeviceAsync(h, 16, p, 16, s); err != nil {
		t.Fatal(err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestFakeGraphCaptureAndReplay(t *testing.T) {
	c := fakeContext(t, 0)
	_, f := loadFake(t, c)
	h, p, s := hostAndDevice(t, c, 32)
	live, launches, runs := fakeAttr(t, c, 9016), fakeAttr(t, c, 9012), fakeAttr(t, c, 9015)

	g := capturePerMessage(t, c, f, h, p, s, 0xfeed)
	if got := fakeAttr(t, c, 9014); got != captureModeRelaxed {
		t.Errorf("capture mode %d, want CU_STREAM_CAPTURE_MODE_RELAXED (2)", got)
	}
	if !bytes.Equal(h.Bytes[16:], make([]byte, 16)) || fakeAttr(t, c, 9012) != launches {
		t.Fatal("captured work ran during the capture")
	}
	x, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	if fakeAttr(t, c, 9017) != 1 || fakeAttr(t, c, 9018) != 3 {
		t.Fatalf("instantiated through %d with %d nodes, want cuGraphInstantiateWithFlags (1) and 3 nodes",
			fakeAttr(t, c, 9017), fakeAttr(t, c, 9018))
	}
	if fakeAttr(t, c, 9016) != live+2 {
		t.Fatalf("%d live graphs and execs, want %d", fakeAttr(t, c, 9016), live+2)
	}
	// The graph may go once instantiated: the exec stands alone.
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	wantIs(t, g.Destroy(), ErrReleased)
	_, err = g.Instantiate()
	wantIs(t, err, ErrReleased)

	// Each launch re-reads the host memory the copy in was captured from.
	le := binary.LittleEndian
	for i, in := range []uint64{1, 2, 0xabcdef} {
		le.PutUint64(h.Bytes, in)
		if err := x.Launch(s); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if got, stored := le.Uint64(h.Bytes[16:]), le.Uint64(h.Bytes[24:]); got != in || stored != 0xfeed {
			t.Fatalf("launch %d: copied back %#x and %#x, want %#x and 0xfeed", i, got, stored, in)
		}
	}
	if err := x.Launch(nil); err != nil {
		t.Fatalf("launch on the default stream: %v", err)
	}
	if err := c.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if got := fakeAttr(t, c, 9015) - runs; got != 4 {
		t.Fatalf("%d graph launches reached the driver, want 4", got)
	}

	c1 := fakeContext(t, 1)
	s1, err := c1.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	wantMention(t, x.Launch(s1), "cuGraphLaunch", "another context")
	s1.Destroy()

	if err := x.Destroy(); err != nil {
		t.Fatal(err)
	}
	wantIs(t, x.Destroy(), ErrReleased)
	wantIs(t, x.Launch(s), ErrReleased)
	if got := fakeAttr(t, c, 9016); got != live {
		t.Fatalf("%d live graphs and execs after Destroy, want %d", got, live)
	}
}

func TestFakeGraphCaptureErrors(t *testing.T) {
	c := fakeContext(t, 0)
	_, f := loadFake(t, c)
	h, p, s := hostAndDevice(t, c, 32)

	// Ending a capture that never began.
	_, err := s.EndCapture()
	wantIs(t, err, &Error{Result: ErrorIllegalState})
	wantMention(t, err, "cuStreamEndCapture", "CUDA_ERROR_ILLEGAL_STATE")

	// Beginning twice.
	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	err = s.BeginCapture()
	wantIs(t, err, &Error{Result: ErrorIllegalState})
	wantMention(t, err, "cuStreamBeginCapture_v2")

	// Synchronizing a capturing stream fails and invalidates the capture;
	// EndCapture says so, and the stream works again afterwards.
	if err := c.Launch(f, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, s, p, uint64(1)); err != nil {
		t.Fatal(err)
	}
	err = s.Synchronize()
	wantIs(t, err, &Error{Result: ErrorStreamCaptureUnsupported})
	wantMention(t, err, "cuStreamSynchronize", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED")
	g, err := s.EndCapture()
	if g != nil {
		t.Fatal("an invalidated capture gave a graph")
	}
	wantIs(t, err, &Error{Result: ErrorStreamCaptureInvalidated})
	wantMention(t, err, "cuStreamEndCapture", "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED")
	if err := s.Synchronize(); err != nil {
		t.Fatalf("stream after the failed capture: %v", err)
	}
	if err := c.CopyToDeviceAsync(p, h, 0, 8, s); err != nil {
		t.Fatalf("copy after the failed capture: %v", err)
	}

	// A destroyed stream, and a released context.
	s2, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	s2.Destroy()
	wantIs(t, s2.BeginCapture(), ErrReleased)
	_, err = s2.EndCapture()
	wantIs(t, err, ErrReleased)

	c1 := contextOf(t, fakeDriver(t), 1)
	_, f1 := loadFake(t, c1)
	h1, p1, s1 := hostAndDevice(t, c1, 32)
	g1 := capturePerMessage(t, c1, f1, h1, p1, s1, 7)
	x1, err := g1.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.Release(); err != nil {
		t.Fatal(err)
	}
	wantIs(t, x1.Launch(nil), ErrReleased)
	_, err = g1.Instantiate()
	wantIs(t, err, ErrReleased)
	wantIs(t, g1.Destroy(), ErrReleased)
	wantIs(t, x1.Destroy(), ErrReleased)
}

func TestFakeGraphInstantiateV2(t *testing.T) {
	buildFake(t)
	d, err := loadFakeVariant(t, fake.graphV2)
	if err != nil {
		t.Fatal(err)
	}
	c := contextOf(t, d, 0)
	_, f := loadFake(t, c)
	h, p, s := hostAndDevice(t, c, 32)
	g := capturePerMessage(t, c, f, h, p, s, 9)
	defer g.Destroy()
	x, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	defer x.Destroy()
	if got := fakeAttr(t, c, 9017); got != 2 {
		t.Fatalf("instantiated through %d, want cuGraphInstantiate_v2 (2) on a driver without WithFlags", got)
	}
	binary.LittleEndian.PutUint64(h.Bytes, 5)
	if err := x.Launch(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint64(h.Bytes[16:]); got != 5 {
		t.Fatalf("copied back %d, want 5", got)
	}
}

func TestFakeDriverWithoutGraphs(t *testing.T) {
	buildFake(t)
	d, err := loadFakeVariant(t, fake.noGraph)
	if err != nil {
		t.Fatalf("a driver without the graph API must still load: %v", err)
	}
	c := contextOf(t, d, 0)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	err = s.BeginCapture()
	wantIs(t, err, ErrUnsupported)
	wantMention(t, err, "lacks cuStreamBeginCapture_v2", "CUDA 12.8")
	_, err = s.EndCapture()
	wantIs(t, err, ErrUnsupported)
}
