package runtime

import (
	"fmt"
	"strings"

	"github.com/ringactor/ringactor/kernels"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// Route picks which of a stage's To gets each of its results
// (ringkernel.Route has the table).
type Route = rk.Route

// The routes a stage may take.
const (
	// RouteOne: every result to the one stage in To (a chain's link).
	RouteOne = rk.RouteOne
	// RouteAll: a copy of every result to each stage in To. Each copy is
	// a message of its own from there on, with the same id: the account
	// counts copies (PipelineStats.Copied), and a request is answered by
	// the first of them to end.
	RouteAll = rk.RouteAll
	// RouteRoundRobin: the results to the stages in To in turn.
	RouteRoundRobin = rk.RouteRoundRobin
	// RouteKey: a result to To[KeyHash(key) mod len(To)], where key is the
	// u32 at the stage's KeyOffset in the result (for a float32 vector,
	// element KeyOffset/4's bits): one key always reaches the same stage.
	RouteKey = rk.RouteKey
	// RoutePort: a result to To[port], the port the stage's op chose (an
	// op with Ports, such as the built-in branch).
	RoutePort = rk.RoutePort
)

// graphOf resolves the stages' To lists into indices: next[i] are where
// stage i's results go, in To's order; a stage with none is an exit whose
// results leave the pipeline. With no To anywhere the stages are a chain
// in order. It refuses unknown or repeated names, routes that do not fit
// their stage's To or op, in-link and out-link counts past the device
// loop's limits, and cycles (bounded queues in a cycle can deadlock).
func graphOf(stages []StageSpec, stealIn int) ([][]int, error) {
	idx := make(map[string]int, len(stages))
	for i, s := range stages {
		idx[s.Name] = i
	}
	next := make([][]int, len(stages))
	graph := false
	for _, s := range stages {
		graph = graph || len(s.To) > 0
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
		if len(next[i]) == 0 && s.Route != RouteOne {
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
	if c := cycle(next); c != nil {
		path := make([]string, len(c))
		for k, i := range c {
			path[k] = stages[i].Name
		}
		return nil, fmt.Errorf("the stages form a cycle, %s (bounded queues in a cycle can deadlock); break it, or loop in the caller", strings.Join(path, " → "))
	}
	return next, nil
}

// cycle returns a cycle of next as stage indices, the first repeated at
// the end, or nil when there is none.
func cycle(next [][]int) []int {
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

func names(stages []StageSpec) string {
	ns := make([]string, len(stages))
	for i, s := range stages {
		ns[i] = s.Name
	}
	return strings.Join(ns, ", ")
}

// fanout is how many messages each result of s makes downstream: a copy
// per stage in To under RouteAll, else one (an exit's goes to its egress).
func (s *stage) fanout() int {
	if s.spec.Route == RouteAll && len(s.outs) > 0 {
		return len(s.outs)
	}
	return 1
}

// flowTypes gives each stage of an acyclic graph the message type it takes
// and the type it gives, from its op's In and Out: an op that takes any
// type takes what its feeders give (any, where they give different
// types), and one that takes and gives any type is taken to give what it
// takes (the built-in pass does), and, fed any type, takes what the
// stages it sends to take. An edge whose ends disagree is refused, naming
// both ends and both types.
func flowTypes(stages []StageSpec, ops []kernels.Op, next [][]int) (in, out []uint32, err error) {
	n := len(stages)
	feeders := make([][]int, n)
	deg := make([]int, n)
	for i := range next {
		for _, j := range next[i] {
			feeders[j] = append(feeders[j], i)
			deg[j]++
		}
	}
	order := make([]int, 0, n) // Kahn's: every stage after its feeders
	for i := range n {
		if deg[i] == 0 {
			order = append(order, i)
		}
	}
	for k := 0; k < len(order); k++ {
		for _, j := range next[order[k]] {
			if deg[j]--; deg[j] == 0 {
				order = append(order, j)
			}
		}
	}
	in, out = make([]uint32, n), make([]uint32, n)
	for _, i := range order {
		op := ops[i]
		in[i] = op.In
		for k, f := range feeders[i] {
			switch {
			case op.In != kernels.TypeAny:
				if out[f] != kernels.TypeAny && out[f] != op.In {
					return nil, nil, fmt.Errorf("stage %q gives %s, but stage %q, which it sends to, takes %s (op %s): convert between them with a stage, or change either op",
						stages[f].Name, typeName(out[f]), stages[i].Name, typeName(op.In), op.Name)
				}
			case k == 0:
				in[i] = out[f]
			case in[i] != out[f]:
				in[i] = kernels.TypeAny // fed several types
			}
		}
		out[i] = op.Out
		if op.Out == kernels.TypeAny && op.In == kernels.TypeAny {
			out[i] = in[i]
		}
	}
	// Back from the exits: a pass-through stage fed any type takes what
	// every stage it sends to takes, so a send of another type is refused
	// at its door rather than dead-lettered a stage later.
	for k := len(order) - 1; k >= 0; k-- {
		i := order[k]
		if ops[i].In != kernels.TypeAny || ops[i].Out != kernels.TypeAny || in[i] != kernels.TypeAny || len(next[i]) == 0 {
			continue
		}
		want := in[next[i][0]]
		for _, j := range next[i][1:] {
			if in[j] != want {
				want = kernels.TypeAny
			}
		}
		in[i], out[i] = want, want
	}
	return in, out, nil
}
