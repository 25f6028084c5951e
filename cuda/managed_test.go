//go:build cgo && (linux || freebsd)

package cuda

import (
	"bytes"
	"testing"
)

// Managed memory: one address for host and device. What the host writes
// through the view, the device copies read, and the other way round; it
// counts as device memory of its context (Free, not FreeHost, frees it),
// and a second free is refused.
func TestFakeManagedMemory(t *testing.T) {
	c := fakeContext(t, 0)
	for _, a := range []Attribute{AttrManagedMemory, AttrConcurrentManagedAccess} {
		if v := fakeAttr(t, c, int(a)); v != 1 {
			t.Fatalf("attribute %d is %d, want 1 (the emulator has managed memory by default)", a, v)
		}
	}
	live := fakeAttr(t, c, 9011)
	p, host, err := c.AllocManaged(64)
	if err != nil {
		t.Fatal(err)
	}
	if len(host) != 64 || fakeAttr(t, c, 9011) != live+1 {
		t.Fatalf("host view of %d bytes, %d live allocations; want 64 and %d", len(host), fakeAttr(t, c, 9011), live+1)
	}
	copy(host, "written by the host")
	got := make([]byte, 19)
	if err := c.CopyFromDevice(got, p); err != nil || string(got) != "written by the host" {
		t.Fatalf("the device reads %q (err %v)", got, err)
	}
	if err := c.CopyToDevice(p+32, []byte("by the device")); err != nil || !bytes.Equal(host[32:45], []byte("by the device")) {
		t.Fatalf("the host view shows %q (err %v)", host[32:45], err)
	}
	if _, _, err := c.AllocManaged(0); err == nil {
		t.Fatal("a managed allocation of 0 bytes succeeded")
	}
	if err := c.Free(p); err != nil {
		t.Fatal(err)
	}
	wantIs(t, c.Free(p), ErrReleased)
	if fakeAttr(t, c, 9011) != live {
		t.Fatal("the managed allocation outlived its Free")
	}
}
