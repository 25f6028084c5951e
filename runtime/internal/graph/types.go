package graph

import (
	"fmt"

	"github.com/ringactor/ringactor/kernels"
)

// Types gives each stage of an acyclic graph (next, from Of) the message
// type it takes and the type it gives, from its op's In and Out: an op
// that takes any type takes what its feeders give (any, where they give
// different types), and one that takes and gives any type is taken to
// give what it takes (the built-in pass does), and, fed any type, takes
// what the stages it sends to take. An edge whose ends disagree is
// refused, naming both ends and both types (typeName names a type id).
func Types(stages []Stage, next [][]int, typeName func(uint32) string) (in, out []uint32, err error) {
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
		op := stages[i].Op
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
		op := stages[i].Op
		if op.In != kernels.TypeAny || op.Out != kernels.TypeAny || in[i] != kernels.TypeAny || len(next[i]) == 0 {
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
