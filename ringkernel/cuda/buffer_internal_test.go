package cuda

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
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

// A device without managed memory (the emulated driver with
// RINGACTOR_EMU_MANAGED=0, read at its first cuInit: so in a process of
// its own) reports Device.Managed false and refuses a managed buffer
// with devmem.ErrNoManaged and the fix; with it (the default), a managed
// buffer is allocated, its host view is the buffer, and it is parked, not
// freed, while a ring kernel runs.
func TestManagedBuffers(t *testing.T) {
	if os.Getenv("RINGACTOR_TEST_MANAGED_OFF") == "" && cudatest.Emulated() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestManagedBuffers$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RINGACTOR_EMU_MANAGED=0", "RINGACTOR_TEST_MANAGED_OFF=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "refused: ") {
			t.Fatalf("the run with managed memory off: %v\n%s", err, out)
		}
	}
	b := gpuBackend(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gpus, err := b.listed()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("RINGACTOR_TEST_MANAGED_OFF") != "" {
		if gpus[0].Managed {
			t.Fatal("RINGACTOR_EMU_MANAGED=0, but device 0 reports managed memory")
		}
		_, err := b.AllocBuffer(ctx, 0, 4096, devmem.Managed)
		if !errors.Is(err, devmem.ErrNoManaged) || !strings.Contains(err.Error(), "use devmem.DeviceMemory") {
			t.Fatalf("a managed buffer on a device without: %v, want devmem.ErrNoManaged naming the fix", err)
		}
		fmt.Println("refused:", err)
		return
	}
	if !gpus[0].Managed {
		t.Skip("device 0 has no managed memory with concurrent access")
	}
	k := spin(t, b, 1)
	m, err := b.AllocBuffer(ctx, 0, 3*stagingChunk/2, devmem.Managed)
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != devmem.Managed || len(m.Bytes) != m.Size || m.Bytes[0] != 0 || m.Bytes[m.Size-1] != 0 {
		t.Fatalf("a managed buffer: %+v, want a zeroed host view of its size", m)
	}
	m.Bytes[stagingChunk+1] = 7
	d, err := b.device(0)
	if err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	if err := d.ctx.CopyFromDevice(one, drv.DevicePtr(m.Addr)+stagingChunk+1); err != nil || one[0] != 7 {
		t.Fatalf("the driver reads %v at the managed address (err %v), want the host's 7", one, err)
	}
	if err := b.FreeBuffer(m); err != nil {
		t.Fatalf("free under a running kernel: %v", err)
	}
	if err := d.ctx.Memset(drv.DevicePtr(m.Addr), 0, 1); err != nil {
		t.Fatalf("the parked managed buffer is already gone while the kernel runs: %v", err)
	}
	if err := k.Terminate(ctx, false); err != nil {
		t.Fatal(err)
	}
}

// A staged copy between two devices takes one staging chunk for all its
// chunks and gives it back; the bytes land whole and in order, whatever
// the pair's path would be (stagedCopy is called directly).
func TestStagedCopyOfSeveralChunks(t *testing.T) {
	b := gpuBackend(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n, err := b.drv.DeviceCount(); err != nil || n < 2 {
		t.Skipf("needs two devices (%d, %v)", n, err)
	}
	const n = 3*stagingChunk + 12345
	src, err := b.AllocBuffer(ctx, 0, n, devmem.DeviceMemory)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := b.AllocBuffer(ctx, 1, n+8, devmem.DeviceMemory)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeBuffer(src)
	defer b.FreeBuffer(dst)
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*13 + i/stagingChunk)
	}
	if err := b.Write(ctx, src, 0, want); err != nil {
		t.Fatal(err)
	}
	sd, _, err := b.buffer(src)
	if err != nil {
		t.Fatal(err)
	}
	dd, _, err := b.buffer(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.stagedCopy(ctx, dd, drv.DevicePtr(dst.Addr)+8, sd, drv.DevicePtr(src.Addr), n); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n+8)
	if err := b.Read(ctx, dst, 0, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[8:], want) || !bytes.Equal(got[:8], make([]byte, 8)) {
		t.Fatal("the staged copy of several chunks differs")
	}
	pa, err := b.portable(sd)
	if err != nil {
		t.Fatal(err)
	}
	pa.a.mu.Lock()
	left := len(pa.a.used)
	pa.a.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d staging chunk(s) still taken after the copies", left)
	}
}
