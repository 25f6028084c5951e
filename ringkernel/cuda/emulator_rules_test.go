package cuda

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/kernels"
)

// The emulated driver's rules, each proven to fire: with a ring kernel
// running in the context, every call that waits for the device or loads
// code into it fails with CUDA_ERROR_NOT_PERMITTED and counts one
// violation; once the kernel has ended the same calls succeed. (On a real
// driver such a call waits for a kernel that never ends.) The rest of the
// suite runs with the count at 0: cudatest.CheckRules in TestMain.
func TestEmulatorRules(t *testing.T) {
	b, d := emulatedDevice(t)
	c := d.ctx
	// Everything the calls use exists before the kernel runs.
	p, err := c.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.AllocHost(4096, false)
	if err != nil {
		t.Fatal(err)
	}
	ptx, _ := kernels.ShippedPTX("identity")
	ptx = append([]byte("// a second copy\n"), ptx...)
	m, err := c.LoadModule("rules.ptx", ptx)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Destroy()

	k := spin(t, b, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.Activate(ctx); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	var ks *drv.Stream
	for l := range d.live {
		ks = l.stream
	}
	d.mu.Unlock()
	if ks == nil {
		t.Fatal("no live kernel on device 0")
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"cuCtxSynchronize", c.Synchronize},
		{"cuMemFree", func() error { return c.Free(p) }},
		{"cuMemFreeHost", func() error { return c.FreeHost(h) }},
		{"cuModuleLoadDataEx", func() error {
			_, err := c.LoadModule("new.ptx", append([]byte("// a third copy\n"), ptx...))
			return err
		}},
		{"cuModuleGetFunction", func() error { _, err := m.Function("ra_identity_ring"); return err }},
		{"cuModuleUnload", m.Unload},
		{"cuStreamSynchronize", ks.Synchronize},
		{"cuEventSynchronize", func() error {
			if err := ev.Record(ks); err != nil {
				return err
			}
			return ev.Synchronize()
		}},
	}
	for _, cl := range calls {
		refused(t, cl.name, cl.call)
	}

	if err := k.Terminate(ctx, false); err != nil {
		t.Fatal(err)
	}
	waitNoRings(t, d)
	before := cudatest.Violations(t)
	for _, cl := range calls {
		if cl.name == "cuModuleLoadDataEx" || cl.name == "cuModuleGetFunction" {
			continue // the module goes with cuModuleUnload; loads are checked by the backend's preload
		}
		if err := cl.call(); err != nil {
			t.Errorf("%s once the kernel ended: %v", cl.name, err)
		}
	}
	if n := cudatest.Violations(t) - before; n != 0 {
		t.Errorf("%d violations with no ring kernel running", n)
	}
}

// The synchronous copies and memset run on the legacy stream, which waits
// for every blocking stream's work: with a kernel that waits for the host
// on the legacy stream (the clock kernel, waiting for a flag the host has
// not raised), they would wait for ever; the backend launches ring kernels
// on non-blocking streams only, so its own copies never do.
func TestEmulatorRuleSyncCopies(t *testing.T) {
	_, d := emulatedDevice(t)
	c := d.ctx
	p, err := c.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(p)
	buf, off, err := d.pinArena.alloc(16) // the flag, then one answer
	if err != nil {
		t.Fatal(err)
	}
	defer d.pinArena.release(off)
	flag := (*uint32)(unsafe.Pointer(&buf.Bytes[0]))
	atomic.StoreUint32(flag, 0)
	one := drv.Dim3{X: 1, Y: 1, Z: 1}
	if err := c.Launch(d.clock, one, one, 0, nil, buf.Device, buf.Device+8, uint32(1)); err != nil {
		t.Fatal(err)
	}
	ended := false
	defer func() {
		if !ended { // never leave it spinning
			atomic.StoreUint32(flag, ^uint32(0))
		}
	}()
	calls := []struct {
		name string
		call func() error
	}{
		{"cuMemcpyHtoD", func() error { return c.CopyToDevice(p, make([]byte, 64)) }},
		{"cuMemcpyDtoH", func() error { return c.CopyFromDevice(make([]byte, 64), p) }},
		{"cuMemsetD8", func() error { return c.Memset(p, 0, 64) }},
	}
	for _, cl := range calls {
		refused(t, cl.name, cl.call)
	}
	atomic.StoreUint32(flag, ^uint32(0))
	ended = true
	waitNoRings(t, d)
	for _, cl := range calls {
		if err := cl.call(); err != nil {
			t.Errorf("%s once the kernel ended: %v", cl.name, err)
		}
	}
}

// waitNoRings waits until no kernel that waits for the host runs on d (the
// emulator counts them: device attribute 9101).
func waitNoRings(t *testing.T, d *device) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := d.ctx.Device().Attribute(9101)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d kernel(s) still running on device %d after they were told to stop", n, d.id)
		}
		time.Sleep(time.Millisecond)
	}
}

// emulatedDevice is a backend of its own and its device 0, on the
// emulated driver; elsewhere t is skipped.
func emulatedDevice(t *testing.T) (*Backend, *device) {
	t.Helper()
	if !cudatest.Emulated() {
		t.Skip("the emulated driver's own rules: make test runs this package over it")
	}
	b := gpuBackend(t, Options{})
	d, err := b.device(0)
	if err != nil {
		t.Fatal(err)
	}
	return b, d
}

// refused checks that call, made while a kernel that waits for the host
// runs, fails with CUDA_ERROR_NOT_PERMITTED and counts one violation (which
// it allows, for CheckRules).
func refused(t *testing.T, name string, call func() error) {
	t.Helper()
	before := cudatest.Violations(t)
	err := call()
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_PERMITTED") {
		t.Errorf("%s with a kernel running that waits for the host: %v, want CUDA_ERROR_NOT_PERMITTED", name, err)
	}
	if n := cudatest.Violations(t) - before; n != 1 {
		t.Errorf("%s counted %d violations, want 1", name, n)
	}
	cudatest.AllowViolations(t, 1)
}

// A calibration whose answers come later than its patience fails with
// errClockLate and leaves the offset alone; the clock kernel it left
// running keeps its buffer until it has ended, and the next calibration
// waits for that, then succeeds. Backend.Close after a late one does not
// synchronize behind it (no rule broken).
func TestLateCalibrationKeepsTheOffset(t *testing.T) {
	_, d := emulatedDevice(t)
	before := d.offset.Load()
	t.Setenv("RINGACTOR_EMU_CLOCK_DELAY_NS", strconv.FormatInt(int64(400*time.Millisecond), 10))
	if _, _, err := d.calibrate(context.Background(), 50*time.Millisecond); !errors.Is(err, errClockLate) {
		t.Fatalf("a calibration with answers 400 ms late and 50 ms of patience: %v, want errClockLate", err)
	}
	if !d.clockHeld {
		t.Fatal("the late calibration's clock kernel still runs, but its buffer was released")
	}
	if got := d.offset.Load(); got != before {
		t.Fatalf("a failed calibration moved the offset from %d to %d", before, got)
	}
	t.Setenv("RINGACTOR_EMU_CLOCK_DELAY_NS", "0")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	off, rt, err := d.calibrate(ctx, maxPatience)
	if err != nil || d.clockHeld {
		t.Fatalf("the next calibration: %v (held %v)", err, d.clockHeld)
	}
	// The emulated device's clock is the host's: the estimate is within
	// half its round trip of 0.
	if abs(off) > int64(rt/2)+int64(time.Millisecond) {
		t.Fatalf("offset %v with round trip %v after a late calibration", time.Duration(off), rt)
	}
	// Late once more, then Close (the test's cleanup) with its kernel held.
	t.Setenv("RINGACTOR_EMU_CLOCK_DELAY_NS", strconv.FormatInt(int64(400*time.Millisecond), 10))
	if _, _, err := d.calibrate(context.Background(), 50*time.Millisecond); !errors.Is(err, errClockLate) {
		t.Fatalf("late again: %v", err)
	}
}

// The first device open opens every device and enables peer access among
// them, before any kernel runs (GPU-REVIEW D7); a device that was not
// opened then is refused while kernels run on another (ErrOpenWhileRunning,
// naming the fix), and opens once they have ended.
func TestFirstOpenOpensEveryDevice(t *testing.T) {
	b, d := emulatedDevice(t)
	n, err := b.drv.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Skipf("the emulated driver has %d device(s)", n)
	}
	b.mu.Lock()
	opened := len(b.devs)
	b.mu.Unlock()
	if opened != n {
		t.Fatalf("after device 0's open, %d of %d devices are open", opened, n)
	}
	// Enabling peer access again fails (the driver says it is enabled):
	// the open enabled it both ways.
	for _, o := range b.devs {
		if o == d {
			continue
		}
		ok, err := d.dev.CanAccessPeer(o.dev)
		if err != nil || !ok {
			continue
		}
		if err := d.ctx.EnablePeerAccess(o.ctx); err != nil {
			t.Errorf("peer access 0->%d: %v", o.id, err)
		}
	}
	// A device closed behind the backend's back stands for one that failed
	// to open at the first open.
	last := n - 1
	b.mu.Lock()
	ld := b.devs[last]
	delete(b.devs, last)
	b.mu.Unlock()
	if err := ld.close(); err != nil {
		t.Fatal(err)
	}
	k := spin(t, b, 7)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.Activate(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = b.device(last)
	if !errors.Is(err, ErrOpenWhileRunning) || !strings.Contains(err.Error(), "before any kernel starts") {
		t.Fatalf("opening device %d while a kernel runs on device 0: %v, want ErrOpenWhileRunning", last, err)
	}
	if err := k.Terminate(ctx, false); err != nil {
		t.Fatal(err)
	}
	waitNoRings(t, d)
	deadline := time.Now().Add(5 * time.Second)
	for d.running() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if _, err := b.device(last); err != nil {
		t.Fatalf("opening device %d once the kernel ended: %v", last, err)
	}
}
