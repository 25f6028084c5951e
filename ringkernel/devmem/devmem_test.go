package devmem

import (
	"errors"
	"fmt"
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
