package devreg

import (
	"fmt"
	"slices"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// Connection says how device a reaches device b (LevelUnknown for ids not
// in the registry; the CPU is a host bridge away from every GPU).
func (r *Registry) Connection(a, b int) rk.Connection {
	if a < 0 || a >= len(r.devices) || b < 0 || b >= len(r.devices) {
		return rk.Connection{Level: rk.LevelUnknown}
	}
	if a == b {
		return rk.Connection{Level: rk.LevelSelf}
	}
	if r.CPU(a) || r.CPU(b) {
		return rk.Connection{Level: rk.LevelPHB}
	}
	if t := r.devices[a].Topology; b < len(t) {
		return t[b]
	}
	return rk.Connection{Level: rk.LevelUnknown}
}

// rank orders connections, fastest (lowest) first.
func rank(c rk.Connection) int { return int(c.Level)*100 - c.NVLinks }

// Chain picks GPUs for n consecutive stages, preferring the fastest link
// between each stage and the next (runtime.Registry.Chain says how). For
// each start it walks greedily to the fastest unused GPU; of those walks
// it takes the one whose links, slowest first, compare lowest (then the
// lowest start). With fewer GPUs than stages the chain starts over.
func (r *Registry) Chain(n int) ([]int, error) {
	gpus := len(r.devices) - 1
	switch {
	case n < 1:
		return nil, fmt.Errorf("%w: a chain of %d stages; ask for at least one", rk.ErrNoDevice, n)
	case len(r.devices) == 0:
		return nil, fmt.Errorf("%w: %s", rk.ErrNoDevice, r.idsText())
	case gpus == 0:
		return nil, fmt.Errorf("%w: no GPUs to chain stages over; place them on the CPU, device %d", rk.ErrNoDevice, r.CPUDevice().ID)
	}
	k := min(n, gpus)
	var best []int
	var bestCost []int
	for start := range gpus {
		path := []int{start}
		used := map[int]bool{start: true}
		var cost []int
		for len(path) < k {
			from, next := path[len(path)-1], -1
			for j := range gpus {
				if !used[j] && (next < 0 || rank(r.Connection(from, j)) < rank(r.Connection(from, next))) {
					next = j
				}
			}
			path = append(path, next)
			used[next] = true
			cost = append(cost, rank(r.Connection(from, next)))
		}
		slices.SortFunc(cost, func(a, b int) int { return b - a }) // slowest first
		if best == nil || slices.Compare(cost, bestCost) < 0 {
			best, bestCost = path, cost
		}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = best[i%k]
	}
	return out, nil
}
