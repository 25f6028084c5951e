package graph

import (
	"fmt"
	"strings"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/msgtype"
	"github.com/ringactor/ringactor/runtime/internal/naming"
)

// Stage is one stage as the graph sees it.
type Stage struct {
	Name string
	// To names the stages its results go to; none anywhere makes the
	// stages a chain in order.
	To        []string
	Route     rk.Route
	KeyOffset int
	// Exit: with no To the stage is an exit even where no stage names To
	// (the stages are a graph: package lanes made it, lanes explicit).
	Exit bool
	// Op is the stage's resolved op: its Ports for the route, its In and
	// Out for the types.
	Op kernels.Op
}

// Graph is a resolved graph: where each stage's results go, and the
// type each stage takes and gives (Types).
type Graph struct {
	// Next[i] are the stages stage i's results go to, in To's order; a
	// stage with none is an exit, whose results leave the pipeline.
	Next [][]int
	// In[i] is the message type stage i takes (kernels.TypeAny: any),
	// Out[i] the type its results have.
	In, Out []uint32
}

// Resolve checks stages and resolves their graph: Of, then each stage's
// route against its next stages and its op (ringkernel.CheckRoute), then
// Types, and last RouteKey on results that travel as msgpack
// (msgtype.Keyable). stealIn is how many extra in-links the first stage reads (a
// stage group's); typeName names a type id in errors.
func Resolve(stages []Stage, stealIn int, typeName func(uint32) string) (Graph, error) {
	next, err := Of(stages, stealIn)
	if err != nil {
		return Graph{}, err
	}
	for i, s := range stages {
		if err := rk.CheckRoute(s.Name, s.Op, len(next[i]), s.Route, s.KeyOffset); err != nil {
			return Graph{}, err
		}
	}
	in, out, err := Types(stages, next, typeName)
	if err != nil {
		return Graph{}, err
	}
	for i, s := range stages {
		if s.Route != rk.RouteKey {
			continue
		}
		if err := msgtype.Keyable(out[i]); err != nil {
			return Graph{}, fmt.Errorf("stage %q routes by key (RouteKey), but its results are %w", s.Name, err)
		}
	}
	return Graph{Next: next, In: in, Out: out}, nil
}

// Of resolves the stages' To lists into indices: next[i] are where stage
// i's results go, in To's order; a stage with none is an exit whose
// results leave the pipeline. With no To anywhere the stages are a chain
// in order. It refuses unknown or repeated names, a route other than
// RouteOne on a stage that sends to none, in-link and out-link counts
// past the device loop's limits, and cycles (bounded queues in a cycle
// can deadlock). It refuses first a stage name the name rule refuses
// (package naming) and two stages of one name.
func Of(stages []Stage, stealIn int) ([][]int, error) {
	idx := make(map[string]int, len(stages))
	for i, s := range stages {
		if err := naming.Check("stage", s.Name, ""); err != nil {
			return nil, fmt.Errorf("stage %d: %w", i, err)
		}
		if _, ok := idx[s.Name]; ok {
			return nil, fmt.Errorf("two stages are named %q; stage names are unique", s.Name)
		}
		idx[s.Name] = i
	}
	next := make([][]int, len(stages))
	graph := false
	for _, s := range stages {
		graph = graph || len(s.To) > 0 || s.Exit
	}
	for i, s := range stages {
		switch {
		case !graph && i+1 < len(stages):
			next[i] = []int{i + 1}
		case graph:
			seen := map[string]bool{}
			for _, to := range s.To {
				j, ok := idx[to]
				switch {
				case !ok:
					return nil, fmt.Errorf("stage %q sends to %q, which is not a stage of the pipeline; stages: %s", s.Name, to, names(stages))
				case j == i:
					return nil, fmt.Errorf("stage %q sends to itself: a cycle (bounded queues in a cycle can deadlock)", s.Name)
				case seen[to]:
					return nil, fmt.Errorf("stage %q names %q twice in To", s.Name, to)
				}
				seen[to] = true
				next[i] = append(next[i], j)
			}
		}
		if len(next[i]) > rk.MaxDeviceOutLinks {
			return nil, fmt.Errorf("stage %q sends to %d stages; a stage routes over at most %d", s.Name, len(next[i]), rk.MaxDeviceOutLinks)
		}
		if len(next[i]) == 0 && s.Route != rk.RouteOne {
			return nil, fmt.Errorf("stage %q routes %s but sends to no stage: its results leave the pipeline; name the stages in To, or drop Route", s.Name, s.Route)
		}
	}
	ins := make([]int, len(stages))
	for i := range stages {
		for _, j := range next[i] {
			ins[j]++
		}
	}
	for j, s := range stages {
		n := 1 + ins[j] // its ingress, and a link from each stage feeding it
		if j == 0 {
			n += stealIn
		}
		if n > rk.MaxDeviceInLinks {
			return nil, fmt.Errorf("stage %q has %d in-links (its ingress and %d stages feeding it); a stage reads at most %d", s.Name, n, ins[j], rk.MaxDeviceInLinks)
		}
	}
	if c := Cycle(next); c != nil {
		path := make([]string, len(c))
		for k, i := range c {
			path[k] = stages[i].Name
		}
		return nil, fmt.Errorf("the stages form a cycle, %s (bounded queues in a cycle can deadlock); break it, or loop in the caller", strings.Join(path, " → "))
	}
	return next, nil
}

// Cycle returns a cycle of next as stage indices, the first repeated at
// the end, or nil when there is none.
func Cycle(next [][]int) []int {
	const (
		white = iota
		grey  // on the current path
		black // done
	)
	color := make([]int, len(next))
	var path []int
	var visit func(int) []int
	visit = func(i int) []int {
		color[i] = grey
		path = append(path, i)
		for _, j := range next[i] {
			switch color[j] {
			case grey:
				for k, v := range path {
					if v == j {
						return append(append([]int(nil), path[k:]...), j)
					}
				}
			case white:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		color[i] = black
		return nil
	}
	for i := range next {
		if color[i] == white {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

func names(stages []Stage) string {
	ns := make([]string, len(stages))
	for i, s := range stages {
		ns[i] = s.Name
	}
	return strings.Join(ns, ", ")
}

// Fanout is how many messages each result of a stage with route r and
// outs next stages makes downstream: a copy per next stage under
// RouteAll, else one (an exit's goes to its egress).
func Fanout(r rk.Route, outs int) int {
	if r == rk.RouteAll && outs > 0 {
		return outs
	}
	return 1
}

// Upstream is stage i and every stage whose results reach it (in a
// chain, the stages before it), in graph order: each before the stages
// it feeds, i last. A Stop to stage i ends these.
func Upstream(next [][]int, i int) []int {
	feeds := make([][]int, len(next)) // feeds[j]: the stages sending to j
	for a, to := range next {
		for _, b := range to {
			feeds[b] = append(feeds[b], a)
		}
	}
	var order []int
	seen := make([]bool, len(next))
	var visit func(j int)
	visit = func(j int) { // post-order over the stages feeding j: a topological order
		if seen[j] {
			return
		}
		seen[j] = true
		for _, a := range feeds[j] {
			visit(a)
		}
		order = append(order, j)
	}
	visit(i)
	return order
}
