package ringkernel_test

import (
	"fmt"
	"testing"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// KeyHash is murmur3's 32-bit finalizer (reference values from its
// definition), which device code computes the same way.
func TestKeyHash(t *testing.T) {
	for _, c := range []struct{ in, want uint32 }{{0, 0}, {1, 0x514e28b7}, {0xdeadbeef, 0x0de5c6a9}} {
		if got := rk.KeyHash(c.in); got != c.want {
			t.Errorf("KeyHash(%#x) = %#x, want %#x", c.in, got, c.want)
		}
	}
	if s := fmt.Sprint(rk.RouteKey, rk.RouteAll, rk.Route(42)); s != "key all Route(42)" {
		t.Errorf("route names: %s", s)
	}
}
