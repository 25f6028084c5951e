//go:build cgo && (linux || freebsd)

package cuda

import (
	"bytes"
	"testing"
)

// Device-to-device copies through the emulated driver: within a context
// (cuMemcpyDtoDAsync) and from a peer whose access is enabled
// (cuMemcpyPeerAsync), each waited for on its stream.
func TestFakeDeviceCopies(t *testing.T) {
	c0, c1 := fakeContext(t, 0), fakeContext(t, 1)
	_, a, s0 := hostAndDevice(t, c0, 32)
	_, b, _ := hostAndDevice(t, c0, 32)
	_, p, s1 := hostAndDevice(t, c1, 32)
	copies := fakeAttr(t, c0, 9019)
	want := []byte("thirty-two bytes, device to dev.")
	if err := c0.CopyToDevice(a, want); err != nil {
		t.Fatal(err)
	}
	if err := c0.CopyDeviceAsync(b, a, 32, s0); err != nil {
		t.Fatal(err)
	}
	if err := s0.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 32)
	if err := c0.CopyFromDevice(got, b); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("DtoD copy: %q (err %v), want %q", got, err, want)
	}
	if err := c0.EnablePeerAccess(c1); err != nil {
		t.Fatal(err)
	}
	if err := c1.CopyPeerAsync(p+8, c0, b+8, 24, s1); err != nil {
		t.Fatal(err)
	}
	if err := s1.Synchronize(); err != nil {
		t.Fatal(err)
	}
	clear(got)
	if err := c1.CopyFromDevice(got, p); err != nil || !bytes.Equal(got[8:], want[8:]) || bytes.Equal(got[:8], want[:8]) {
		t.Fatalf("peer copy: %q (err %v), want 8 bytes untouched, then %q", got, err, want[8:])
	}
	if n := fakeAttr(t, c0, 9019) - copies; n != 2 {
		t.Errorf("the driver saw %d async copies, want 2", n)
	}
	wantMention(t, c0.CopyDeviceAsync(b, a, 64, s0), "not inside a live allocation")
	wantMention(t, c1.CopyPeerAsync(p, nil, b, 8, s1), "nil")
}
