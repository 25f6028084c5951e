package runtime_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ringactor/ringactor/internal/rttest"
	"github.com/ringactor/ringactor/ringkernel/devmem"
	ra "github.com/ringactor/ringactor/runtime"
)

// bufferTopology is the simulated GPUs' peer matrix of the buffer
// tests: 0-1 peers, every other pair of GPUs staged. Over the emulated
// driver RINGACTOR_EMU_PEERS sets it (make test: 0-1 of 4).
const bufferTopology = "0-1:nv4,*:sys"

// pattern is n bytes that differ by device and offset.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*31 + i>>8)
	}
	return b
}

// wantPath is the path a copy from device a to device b must take, from
// the registry's topology: the CPU at either end goes through the host.
func wantPath(reg *ra.Registry, a, b int) ra.CopyPath {
	switch {
	case a == b:
		return ra.CopyLocal
	case reg.CPU(a) || reg.CPU(b):
		return ra.CopyHost
	case reg.Peer(a, b):
		return ra.CopyPeer
	}
	return ra.CopyStaged
}

// Buffers on every device of the runtime: allocate, fill, read back (as
// bytes and as float32s), copy between every ordered pair on the path the
// topology gives, free, use after free, and Close frees what is left.
func TestBuffersEveryDeviceAndPair(t *testing.T) {
	e := rttest.Devices(t, ra.DeviceOptions{SimDevices: 4, SimP2P: bufferTopology})
	ctx, rt := rttest.Ctx(t), e.RT
	devs := rt.Registry().Devices()
	const size = 3<<12 + 12
	bufs := make([]*ra.Buffer, len(devs))
	for i, d := range devs {
		b, err := rt.AllocBuffer(ctx, d.ID, size)
		if err != nil {
			t.Fatalf("AllocBuffer on device %d (%s): %v", d.ID, d.Name, err)
		}
		if b.Device() != d.ID || b.Size() != size || b.Managed() {
			t.Fatalf("buffer on device %d: Device %d, Size %d, Managed %v", d.ID, b.Device(), b.Size(), b.Managed())
		}
		zero := make([]byte, size)
		if err := b.Read(ctx, 0, zero); err != nil || !bytes.Equal(zero, make([]byte, size)) {
			t.Fatalf("a new buffer on device %d is not zeroed (%v)", d.ID, err)
		}
		want := pattern(size-100, d.ID)
		if err := b.Write(ctx, 100, want); err != nil {
			t.Fatalf("Write on device %d: %v", d.ID, err)
		}
		got := make([]byte, len(want))
		if err := b.Read(ctx, 100, got); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("device %d: read back differs from what was written (%v)", d.ID, err)
		}
		fs := []float32{1.5, -2, 3.25, 1e-3}
		if err := b.WriteFloat32s(ctx, 1, fs); err != nil {
			t.Fatal(err)
		}
		back := make([]float32, len(fs))
		raw := make([]byte, 4)
		if err := b.ReadFloat32s(ctx, 1, back); err != nil || fmt.Sprint(back) != fmt.Sprint(fs) {
			t.Fatalf("device %d: floats read back %v, want %v (%v)", d.ID, back, fs, err)
		}
		if err := b.Read(ctx, 4, raw); err != nil || !bytes.Equal(raw, []byte{0, 0, 0xc0, 0x3f}) { // 1.5, little-endian, at float offset 1
			t.Fatalf("device %d: float 1.5 at float offset 1 reads %x as bytes at 4 (%v)", d.ID, raw, err)
		}
		if err := b.Write(ctx, size-1, []byte{1, 2}); err == nil {
			t.Fatalf("device %d: a write past the end was taken", d.ID)
		}
		bufs[i] = b
	}
	if n := ra.LiveBuffers(rt); n != len(devs) {
		t.Fatalf("%d buffers live, want %d", n, len(devs))
	}

	seen := map[ra.CopyPath]int{}
	const n, srcOff, dstOff = 5000, 64, 320
	for i, src := range bufs {
		for j, dst := range bufs {
			want := pattern(n, 100*i+j)
			if err := src.Write(ctx, srcOff, want); err != nil {
				t.Fatal(err)
			}
			path, err := src.CopyTo(ctx, dst, dstOff, srcOff, n)
			if err != nil {
				t.Fatalf("copy %d -> %d: %v", src.Device(), dst.Device(), err)
			}
			if w := wantPath(rt.Registry(), src.Device(), dst.Device()); path != w {
				t.Errorf("copy %d -> %d took the %v path, want %v", src.Device(), dst.Device(), path, w)
			}
			seen[path]++
			got := make([]byte, n)
			if err := dst.Read(ctx, dstOff, got); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("copy %d -> %d: the destination holds other bytes (%v)", src.Device(), dst.Device(), err)
			}
		}
	}
	gpus := rt.Registry().GPUs()
	peers, staged := false, false
	for _, a := range gpus {
		for _, b := range gpus {
			peers = peers || (a.ID != b.ID && rt.Registry().Peer(a.ID, b.ID))
			staged = staged || (a.ID != b.ID && !rt.Registry().Peer(a.ID, b.ID))
		}
	}
	if rttest.Backend() != rttest.CUDA && (!peers || !staged) {
		t.Fatalf("the simulated topology %q should have peer and staged pairs", bufferTopology)
	}
	if (peers && seen[ra.CopyPeer] == 0) || (staged && seen[ra.CopyStaged] == 0) || seen[ra.CopyHost] == 0 || seen[ra.CopyLocal] == 0 {
		t.Fatalf("paths seen %v; the topology has peer pairs %v, staged pairs %v", seen, peers, staged)
	}
	t.Logf("copies by path: %v", seen)

	// Free, then every use is refused; a second Free does nothing.
	b := bufs[0]
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Fatalf("a second Free: %v", err)
	}
	if err := b.Write(ctx, 0, []byte{1}); !errors.Is(err, ra.ErrBufferFreed) {
		t.Fatalf("Write after Free: %v, want ErrBufferFreed", err)
	}
	if err := b.ReadFloat32s(ctx, 0, make([]float32, 1)); !errors.Is(err, ra.ErrBufferFreed) {
		t.Fatalf("Read after Free: %v, want ErrBufferFreed", err)
	}
	if _, err := bufs[1].CopyTo(ctx, b, 0, 0, 1); !errors.Is(err, ra.ErrBufferFreed) {
		t.Fatalf("CopyTo a freed buffer: %v, want ErrBufferFreed", err)
	}
	if n := ra.LiveBuffers(rt); n != len(devs)-1 {
		t.Fatalf("%d buffers live after one Free, want %d", n, len(devs)-1)
	}

	// Close frees the rest; the buffers and the runtime refuse from then on.
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if n := ra.LiveBuffers(rt); n != 0 {
		t.Fatalf("%d buffers live after Close", n)
	}
	if err := bufs[1].Write(ctx, 0, []byte{1}); !errors.Is(err, ra.ErrBufferFreed) {
		t.Fatalf("Write after Close: %v, want ErrBufferFreed", err)
	}
	if _, err := rt.AllocBuffer(ctx, 0, 16); !errors.Is(err, ra.ErrRuntimeClosed) {
		t.Fatalf("AllocBuffer after Close: %v, want ErrRuntimeClosed", err)
	}
}

// More than a device has is refused with the device, its free memory and
// the size asked; a managed buffer where the device has none says so;
// nonsense sizes and devices are refused.
func TestBufferRefusals(t *testing.T) {
	e := rttest.Devices(t, ra.DeviceOptions{SimDevices: 2})
	ctx, rt := rttest.Ctx(t), e.RT
	for _, d := range rt.Registry().Devices() {
		ask := int(d.MemoryBytes) + 1
		_, err := rt.AllocBuffer(ctx, d.ID, ask)
		oom, ok := errors.AsType[*devmem.OutOfMemoryError](err)
		if !ok || !errors.Is(err, devmem.ErrOutOfMemory) {
			t.Fatalf("device %d (%s): %d bytes, more than its %d: %v, want a *devmem.OutOfMemoryError", d.ID, d.Name, ask, d.MemoryBytes, err)
		}
		if oom.Device != d.ID || oom.Asked != uint64(ask) || oom.Free > d.MemoryBytes {
			t.Fatalf("device %d: %+v", d.ID, *oom)
		}
		m, err := rt.AllocBuffer(ctx, d.ID, 64, ra.Managed())
		switch {
		case d.Managed && err != nil:
			t.Fatalf("device %d reports managed memory, but: %v", d.ID, err)
		case d.Managed && !m.Managed():
			t.Fatalf("device %d: a Managed() buffer is not managed", d.ID)
		case !d.Managed && !errors.Is(err, devmem.ErrNoManaged):
			t.Fatalf("device %d has no managed memory: %v, want devmem.ErrNoManaged", d.ID, err)
		}
		if m != nil {
			if err := m.Free(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := rt.AllocBuffer(ctx, 0, 0); err == nil {
		t.Fatal("a 0-byte buffer was allocated")
	}
	if _, err := rt.AllocBuffer(ctx, 99, 16); !errors.Is(err, ra.ErrNoDevice) {
		t.Fatalf("device 99: %v, want ErrNoDevice", err)
	}
	b, err := rt.AllocBuffer(ctx, ra.CPU, 16)
	if err != nil || b.Device() != rt.Registry().CPUDevice().ID {
		t.Fatalf("a buffer on runtime.CPU: %v, %v", b, err)
	}
	other := rttest.Devices(t, ra.DeviceOptions{SimDevices: 2}).RT
	ob, err := other.AllocBuffer(ctx, ra.CPU, 16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CopyTo(ctx, ob, 0, 0, 16); err == nil {
		t.Fatal("a copy to another runtime's buffer was taken")
	}
	if ra.LiveBuffers(rt) != 1 || ra.LiveBuffers(other) != 1 {
		t.Fatalf("live buffers %d and %d, want 1 and 1 (the refused ones hold nothing)", ra.LiveBuffers(rt), ra.LiveBuffers(other))
	}
}
