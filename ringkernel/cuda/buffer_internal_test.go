package cuda

import (
	"context"
	"errors"
	"testing"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

// A buffer freed while a ring kernel runs on its device is parked, not
// given to cuMemFree (which would wait for the kernel), and is given back
// to the driver by the first buffer call once no ring kernel runs.
func TestBufferFreedOnceKernelsEnd(t *testing.T) {
	b := gpuBackend(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := spin(t, b, 1)
	buf, err := b.AllocBuffer(ctx, 0, 1<<20, devmem.DeviceMemory)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.FreeBuffer(buf); err != nil {
		t.Fatalf("free under a running kernel: %v", err)
	}
	d, err := b.device(0)
	if err != nil {
		t.Fatal(err)
	}
	p := drv.DevicePtr(buf.Addr)
	if err := d.ctx.Memset(p, 0, 1); err != nil {
		t.Fatalf("the parked buffer is already gone from the driver while the kernel runs: %v", err)
	}
	if err := b.FreeBuffer(buf); err == nil {
		t.Fatal("a second free of the buffer succeeded")
	}
	if err := k.Terminate(ctx, false); err != nil {
		t.Fatal(err)
	}
	// A buffer call frees the parked ones once no kernel runs: a clock
	// kernel a recalibration left running (a loaded host) holds them on
	// a little longer, so call again until it has ended.
	for {
		next, err := b.AllocBuffer(ctx, 0, 4096, devmem.DeviceMemory)
		if err != nil {
			t.Fatal(err)
		}
		err = d.ctx.Memset(p, 0, 1)
		reused := next.Addr == buf.Addr
		if err := b.FreeBuffer(next); err != nil {
			t.Fatal(err)
		}
		if errors.Is(err, drv.ErrReleased) || reused {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the parked buffer was not freed once the kernel ended: Memset says %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
