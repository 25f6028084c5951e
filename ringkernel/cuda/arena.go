package cuda

import (
	"fmt"
	"sort"
	"sync"
)

// arena sub-allocates one driver allocation: first fit over a sorted free
// list, blocks aligned to align, neighbours coalesced on free. Offsets are
// relative to the allocation's start.
type arena struct {
	mu    sync.Mutex
	size  int
	align int
	free  []span // sorted by off, never adjacent
	used  map[int]int
}

type span struct{ off, n int }

func newArena(size, align int) *arena {
	return &arena{size: size, align: align, free: []span{{0, size}}, used: map[int]int{}}
}

func (a *arena) alloc(n int) (int, error) {
	if n <= 0 {
		return 0, fmt.Errorf("allocation of %d bytes", n)
	}
	n = (n + a.align - 1) / a.align * a.align
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, s := range a.free {
		if s.n < n {
			continue
		}
		if s.n == n {
			a.free = append(a.free[:i], a.free[i+1:]...)
		} else {
			a.free[i] = span{s.off + n, s.n - n}
		}
		a.used[s.off] = n
		return s.off, nil
	}
	return 0, fmt.Errorf("%d bytes do not fit: %d of %d bytes in use", n, a.inUse(), a.size)
}

func (a *arena) release(off int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.used[off]
	if !ok {
		return fmt.Errorf("offset %d was not allocated here (double free?)", off)
	}
	delete(a.used, off)
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].off > off })
	a.free = append(a.free, span{})
	copy(a.free[i+1:], a.free[i:])
	a.free[i] = span{off, n}
	// Coalesce with the next, then the previous neighbour.
	if i+1 < len(a.free) && a.free[i].off+a.free[i].n == a.free[i+1].off {
		a.free[i].n += a.free[i+1].n
		a.free = append(a.free[:i+1], a.free[i+2:]...)
	}
	if i > 0 && a.free[i-1].off+a.free[i-1].n == a.free[i].off {
		a.free[i-1].n += a.free[i].n
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
	return nil
}

func (a *arena) inUse() int {
	t := 0
	for _, n := range a.used {
		t += n
	}
	return t
}
