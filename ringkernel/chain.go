package ringkernel

import (
	"fmt"
	"slices"
)

// Connection says how device a reaches device b (LevelUnknown for ids not
// in the registry).
func (r *Registry) Connection(a, b int) Connection {
	a, b = r.Resolve(a), r.Resolve(b)
	if a < 0 || a >= len(r.devices) || b < 0 || b >= len(r.devices) {
		return Connection{Level: LevelUnknown}
	}
	if a == b {
		return Connection{Level: LevelSelf}
	}
	if r.CPU(a) || r.CPU(b) { // the CPU is a host bridge away from every GPU
		return Connection{Level: LevelPHB}
	}
	if t := r.devices[a].Topology; b < len(t) {
		return t[b]
	}
	return Connection{Level: LevelUnknown}
}

// rank orders connections, fastest (lowest) first.
func rank(c Connection) int { return int(c.Level)*100 - c.NVLinks }

// Chain picks GPUs for n consecutive stages (a pipeline's stage i sends to
// stage i+1), preferring the fastest link between each stage and the
// next: distinct GPUs joined by NVLink where there is some, then PCIe
// switches, then host bridges, and so on. Of the chains its greedy walk
// finds from each start, it takes the one whose slowest link is fastest
// (then the next slowest, then the lowest ids). With fewer GPUs than
// stages the chain starts over on the same GPUs, so one GPU takes every
// stage. The CPU is never picked: place stages there by name.
func (r *Registry) Chain(n int) ([]int, error) {
	gpus := len(r.devices) - 1
	switch {
	case n < 1:
		return nil, fmt.Errorf("%w: a chain of %d stages; ask for at least one", ErrNoDevice, n)
	case len(r.devices) == 0:
		return nil, fmt.Errorf("%w: %s", ErrNoDevice, r.idsText())
	case gpus == 0:
		return nil, fmt.Errorf("%w: no GPUs to chain stages over; place them on the CPU, device %d", ErrNoDevice, r.CPUDevice().ID)
	}
	k := min(n, gpus)
	var best []int
	var bestCost []int
	for start := range gpus {
		// Walk greedily to the fastest unused GPU.
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
