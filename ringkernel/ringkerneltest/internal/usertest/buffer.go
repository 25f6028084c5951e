package usertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

// pattern is the bytes device d's buffer is filled with.
func pattern(d, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + d*31 + 1)
	}
	return p
}

// Buffers on every device the backend lists: allocate, fill, read back,
// copy between every ordered pair (the path each copy takes is the one
// p2pqueue.PathOf gives for the pair by the backend's peer matrix), managed
// memory where a device reports it, free, out of memory refused naming the
// device, its free memory and the size, and a cancelled ctx honoured.
func Buffers(t *testing.T, s Suite) {
	bb, ok := s.Backend().(devmem.Backend)
	if !ok {
		t.Fatalf("%s backend (%T) has no buffers: implement devmem.Backend, or list Buffers in Options.Lacks with the reason", s.Name(), s.Backend())
	}
	lister, ok := s.Backend().(rk.DeviceLister)
	if !ok {
		t.Fatalf("%s: a buffer backend must list its devices (ringkernel.DeviceLister)", s.Name())
	}
	devs, err := lister.ListDevices()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const size = 64<<10 + 3
	src := make([]devmem.Buffer, len(devs))
	dst := make([]devmem.Buffer, len(devs))
	for d := range devs {
		for _, b := range []*devmem.Buffer{&src[d], &dst[d]} {
			if *b, err = bb.AllocBuffer(ctx, d, size, devmem.DeviceMemory); err != nil {
				t.Fatalf("device %d: %v", d, err)
			}
			if b.Device != d || b.Size != size {
				t.Fatalf("device %d: AllocBuffer gave %+v", d, *b)
			}
		}
		zero := make([]byte, size)
		if err := bb.Read(ctx, dst[d], 0, zero); err != nil || !bytes.Equal(zero, make([]byte, size)) {
			t.Fatalf("device %d: a new buffer reads %v (err %v), want zeroes", d, zero[:8], err)
		}
		if err := bb.Write(ctx, src[d], 0, pattern(d, size)); err != nil {
			t.Fatalf("device %d: write: %v", d, err)
		}
		got := make([]byte, size)
		if err := bb.Read(ctx, src[d], 0, got); err != nil || !bytes.Equal(got, pattern(d, size)) {
			t.Fatalf("device %d: read back differs (err %v)", d, err)
		}
	}
	topo := p2pqueue.PeerFunc(func(a, b int) bool { return b < len(devs[a].P2P) && devs[a].P2P[b] })
	paths := map[p2pqueue.Path]int{}
	for a := range devs {
		for b := range devs {
			const off, n = 5, size - 9
			path, err := bb.Copy(ctx, dst[b], 3, src[a], off, n)
			if err != nil {
				t.Fatalf("copy %d → %d: %v", a, b, err)
			}
			if want := p2pqueue.PathOf(a, b, topo); path != want {
				t.Errorf("copy %d → %d went %v; the pair's path is %v", a, b, path, want)
			}
			paths[path]++
			got := make([]byte, size)
			if err := bb.Read(ctx, dst[b], 0, got); err != nil {
				t.Fatalf("read of the copy %d → %d: %v", a, b, err)
			}
			if want := pattern(a, size)[off : off+n]; !bytes.Equal(got[3:3+n], want) {
				t.Fatalf("copy %d → %d (%v): the bytes differ", a, b, path)
			}
		}
	}
	t.Logf("%s: %d devices, copies by path: %v", s.Name(), len(devs), paths)

	// Managed memory where the device has it: the host's view is the buffer.
	managed := 0
	for d, dv := range devs {
		if !dv.Managed {
			continue
		}
		m, err := bb.AllocBuffer(ctx, d, 4096, devmem.Managed)
		if err != nil {
			t.Fatalf("managed buffer on device %d: %v", d, err)
		}
		if err := bb.Write(ctx, m, 0, pattern(d, 4096)); err != nil || len(m.Bytes) != 4096 || !bytes.Equal(m.Bytes, pattern(d, 4096)) {
			t.Fatalf("managed buffer on device %d: its host view does not show what was written (err %v)", d, err)
		}
		// The host's writes to the view are what the device reads, and
		// copies to and from device memory take them.
		copy(m.Bytes, pattern(d+1, 4096))
		got := make([]byte, 4096)
		if err := bb.Read(ctx, m, 0, got); err != nil || !bytes.Equal(got, pattern(d+1, 4096)) {
			t.Fatalf("managed buffer on device %d: Read does not show the host's writes (err %v)", d, err)
		}
		if _, err := bb.Copy(ctx, dst[d], 0, m, 0, 4096); err != nil {
			t.Fatal(err)
		}
		if _, err := bb.Copy(ctx, m, 0, src[d], 0, 4096); err != nil || !bytes.Equal(m.Bytes, pattern(d, 4096)) {
			t.Fatalf("managed buffer on device %d: a copy into it (err %v) is not in its host view", d, err)
		}
		if err := bb.Read(ctx, dst[d], 0, got); err != nil || !bytes.Equal(got, pattern(d+1, 4096)) {
			t.Fatalf("managed buffer on device %d: a copy out of it differs (err %v)", d, err)
		}
		if err := bb.FreeBuffer(m); err != nil {
			t.Fatal(err)
		}
		managed++
	}
	t.Logf("%s: managed buffers on %d of %d devices", s.Name(), managed, len(devs))

	// A cancelled ctx stops every call before it copies.
	done, stop := context.WithCancel(ctx)
	stop()
	if _, err := bb.AllocBuffer(done, 0, 16, devmem.DeviceMemory); !errors.Is(err, context.Canceled) {
		t.Errorf("AllocBuffer with a cancelled ctx: %v, want context.Canceled", err)
	}
	if err := bb.Write(done, src[0], 0, make([]byte, 16)); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with a cancelled ctx: %v, want context.Canceled", err)
	}
	if err := bb.Read(done, src[0], 0, make([]byte, 16)); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a cancelled ctx: %v, want context.Canceled", err)
	}
	if _, err := bb.Copy(done, dst[0], 0, src[len(devs)-1], 0, 16); !errors.Is(err, context.Canceled) {
		t.Errorf("Copy with a cancelled ctx: %v, want context.Canceled", err)
	}
	got := make([]byte, 16)
	if err := bb.Read(ctx, src[0], 0, got); err != nil || !bytes.Equal(got, pattern(0, 16)) {
		t.Errorf("a cancelled Write changed the buffer: %v (err %v)", got, err)
	}

	// Out of memory: more than the device has, refused, saying so.
	for d, dv := range devs {
		ask := dv.MemoryBytes + 1<<20
		b, err := bb.AllocBuffer(ctx, d, int(ask), devmem.DeviceMemory)
		var oom *devmem.OutOfMemoryError
		if !errors.As(err, &oom) || !errors.Is(err, devmem.ErrOutOfMemory) {
			if err == nil {
				_ = bb.FreeBuffer(b)
			}
			t.Fatalf("device %d: a buffer of %d bytes (it has %d): %v, want an out-of-memory error", d, ask, dv.MemoryBytes, err)
		}
		msg := err.Error()
		if oom.Device != d || oom.Asked != ask || oom.Free > dv.MemoryBytes ||
			!strings.Contains(msg, fmt.Sprintf("device %d", d)) || !strings.Contains(msg, fmt.Sprint(ask)) || !strings.Contains(msg, fmt.Sprintf("%d bytes free", oom.Free)) {
			t.Errorf("device %d: out of memory says %q (%+v); want the device, its free memory and %d bytes asked", d, msg, *oom, ask)
		}
	}

	// Under a running ring kernel: a buffer is allocated, filled, copied
	// and freed on its device, and the kernel goes on (a CUDA backend must
	// not free device memory under it: cuMemFree waits for the device).
	r := s.Launch(t, rk.Stage{Name: "id", Op: "identity"}, 16, 4, true)
	kd := s.Device(1)
	live, err := bb.AllocBuffer(ctx, kd, 4096, devmem.DeviceMemory)
	if err != nil {
		t.Fatalf("a buffer on device %d while a ring kernel runs there: %v", kd, err)
	}
	if err := bb.Write(ctx, live, 0, pattern(9, 4096)); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.Copy(ctx, dst[kd], 0, live, 0, 4096); err != nil {
		t.Fatal(err)
	}
	if err := bb.FreeBuffer(live); err != nil {
		t.Fatalf("freeing a buffer on device %d while a ring kernel runs there: %v", kd, err)
	}
	r.SendFloats(1, []float32{42}, 0)
	if _, v := r.RecvFloats(); len(v) != 1 || v[0] != 42 {
		t.Fatalf("the kernel beside the buffers answered %v, want [42]", v)
	}
	if err := r.Kernel().Terminate(ctx, false); err != nil {
		t.Fatal(err)
	}
	got = make([]byte, 4096)
	if err := bb.Read(ctx, dst[kd], 0, got); err != nil || !bytes.Equal(got, pattern(9, 4096)) {
		t.Fatalf("a copy made while a kernel ran: the bytes differ (err %v)", err)
	}

	for d := range devs {
		for _, b := range []devmem.Buffer{src[d], dst[d]} {
			if err := bb.FreeBuffer(b); err != nil {
				t.Errorf("free on device %d: %v", d, err)
			}
		}
		if err := bb.FreeBuffer(src[d]); err == nil {
			t.Errorf("device %d: a second free of a buffer succeeded", d)
		}
		if err := bb.Read(ctx, src[d], 0, make([]byte, 1)); err == nil {
			t.Errorf("device %d: a read of a freed buffer succeeded", d)
		}
	}
}
