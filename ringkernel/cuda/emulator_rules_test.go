package cuda

import (
	"context"
	"strings"
	"testing"
	"time"

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
	if !cudatest.Emulated() {
		t.Skip("the emulated driver's own rules: make test runs this package over it")
	}
	b := gpuBackend(t, Options{})
	d, err := b.device(0)
	if err != nil {
		t.Fatal(err)
	}
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
		before := cudatest.Violations(t)
		err := cl.call()
		if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_PERMITTED") {
			t.Errorf("%s with a ring kernel running: %v, want CUDA_ERROR_NOT_PERMITTED", cl.name, err)
		}
		if n := cudatest.Violations(t) - before; n != 1 {
			t.Errorf("%s counted %d violations, want 1", cl.name, n)
		}
		cudatest.AllowViolations(t, 1)
	}

	if err := k.Terminate(ctx, false); err != nil {
		t.Fatal(err)
	}
	for running := true; running; {
		n, err := d.ctx.Device().Attribute(9101) // the emulator's count of running ring kernels
		if err != nil {
			t.Fatal(err)
		}
		if running = n > 0; running && ctx.Err() != nil {
			t.Fatal("the terminated kernel's thread did not end")
		}
		time.Sleep(time.Millisecond)
	}
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
