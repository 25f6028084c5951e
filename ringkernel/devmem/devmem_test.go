package devmem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestOutOfMemoryErrorSaysWhatAndWhere(t *testing.T) {
	var err error = fmt.Errorf("alloc: %w", &OutOfMemoryError{Device: 2, Name: "sim-2", Free: 1024, Asked: 4096})
	if !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("%v does not match ErrOutOfMemory", err)
	}
	want := "alloc: out of device memory: device 2 (sim-2) has 1024 bytes free, 4096 bytes asked; free buffers on it, or allocate on another device"
	if err.Error() != want {
		t.Fatalf("got %q\nwant %q", err, want)
	}
}

func TestCheckRange(t *testing.T) {
	b := Buffer{Device: 1, Size: 16}
	for _, c := range []struct {
		off, n int
		ok     bool
	}{{0, 16, true}, {16, 0, true}, {8, 8, true}, {8, 9, false}, {-1, 1, false}, {0, -1, false}, {17, 0, false}} {
		if err := CheckRange("read", b, c.off, c.n); (err == nil) != c.ok {
			t.Errorf("CheckRange(%d, %d) = %v, want ok %v", c.off, c.n, err, c.ok)
		}
	}
}

func TestCheckAlloc(t *testing.T) {
	live, done := context.Background(), cancelled()
	for _, c := range []struct {
		ctx                   context.Context
		devices, device, size int
		kind                  Kind
		want                  string // "" ok; else a part of the error
	}{
		{live, 2, 1, 16, DeviceMemory, ""},
		{live, 0, 7, 16, Managed, ""}, // no bound known
		{live, 2, 2, 16, DeviceMemory, "no device 2: this backend has devices 0..1"},
		{live, 2, -1, 16, DeviceMemory, "no device -1"},
		{done, 2, 0, 16, DeviceMemory, context.Canceled.Error()},
		{live, 2, 0, 0, DeviceMemory, "a buffer of 0 bytes; ask for at least 1"},
		{live, 2, 0, 16, Kind(9), "buffer kind Kind(9); want devmem.DeviceMemory or devmem.Managed"},
		{done, 2, 5, 16, DeviceMemory, "no device 5"}, // the device first
	} {
		err := CheckAlloc(c.ctx, "tb", c.devices, c.device, c.size, c.kind)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckAlloc(devices %d, device %d, size %d, %v) = %v, want %q", c.devices, c.device, c.size, c.kind, err, c.want)
		}
	}
	if err := CheckAlloc(cancelled(), "tb", 1, 0, 1, DeviceMemory); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled ctx: %v, want context.Canceled", err)
	}
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestCheckCopy(t *testing.T) {
	dst, src := Buffer{Device: 0, Size: 8}, Buffer{Device: 1, Size: 16}
	if err := CheckCopy(dst, 0, src, 8, 8); err != nil {
		t.Fatal(err)
	}
	if err := CheckCopy(dst, 1, src, 0, 8); err == nil || !strings.Contains(err.Error(), "copy destination") {
		t.Errorf("past the destination: %v", err)
	}
	if err := CheckCopy(dst, 0, src, 9, 8); err == nil || !strings.Contains(err.Error(), "copy source") {
		t.Errorf("past the source: %v", err)
	}
}
