package cuda

import (
	"math/rand/v2"
	"testing"
)

func TestArenaFirstFitCoalesces(t *testing.T) {
	a := newArena(1024, 128)
	x, _ := a.alloc(100) // rounds to 128
	y, _ := a.alloc(256)
	z, _ := a.alloc(128)
	if x != 0 || y != 128 || z != 384 {
		t.Fatalf("offsets %d %d %d", x, y, z)
	}
	if _, err := a.alloc(1024); err == nil {
		t.Fatal("an allocation larger than what is free must fail")
	}
	for _, o := range []int{y, x, z} {
		if err := a.release(o); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.free) != 1 || a.free[0] != (span{0, 1024}) {
		t.Fatalf("free list after releasing everything: %v", a.free)
	}
	if err := a.release(x); err == nil {
		t.Fatal("double free must be refused")
	}
	if _, err := a.alloc(0); err == nil {
		t.Fatal("zero-byte allocation must be refused")
	}
}

func TestArenaRandomNeverOverlaps(t *testing.T) {
	a := newArena(1<<16, 128)
	r := rand.New(rand.NewPCG(1, 2))
	live := map[int]int{}
	for range 5000 {
		if len(live) > 0 && r.IntN(2) == 0 {
			for off := range live {
				if err := a.release(off); err != nil {
					t.Fatal(err)
				}
				delete(live, off)
				break
			}
			continue
		}
		n := 1 + r.IntN(2000)
		off, err := a.alloc(n)
		if err != nil {
			continue
		}
		if off%128 != 0 {
			t.Fatalf("offset %d not aligned", off)
		}
		for o, m := range live {
			if off < o+m && o < off+n {
				t.Fatalf("[%d,+%d) overlaps [%d,+%d)", off, n, o, m)
			}
		}
		live[off] = n
	}
	for off := range live {
		a.release(off)
	}
	if a.inUse() != 0 || len(a.free) != 1 {
		t.Fatalf("leak: %d in use, free %v", a.inUse(), a.free)
	}
}
