package kernels

import (
	"errors"
	"math"
	"testing"
)

// The collectives' ops against hand-written results: reductions to one
// float (with the identity for an empty message) and pairwise combination
// of a message's two halves.
func TestCollectiveOpsReference(t *testing.T) {
	inf := float32(math.Inf(1))
	in := []float32{3, -1.5, 7, 0.25, -4}
	cases := []struct {
		op   string
		in   []float32
		want []float32
	}{
		{"reduce_sum", in, []float32{4.75}},
		{"reduce_min", in, []float32{-4}},
		{"reduce_max", in, []float32{7}},
		{"reduce_sum", nil, []float32{0}},
		{"reduce_min", nil, []float32{inf}},
		{"reduce_max", nil, []float32{-inf}},
		{"reduce_min", []float32{float32(math.NaN()), 2, 1}, []float32{1}},
		{"pair_sum", []float32{1, 2, 3, 10, 20, 30}, []float32{11, 22, 33}},
		{"pair_min", []float32{1, 25, 3, 10, 20, -30}, []float32{1, 20, -30}},
		{"pair_max", []float32{1, 25, 3, 10, 20, -30}, []float32{10, 25, 3}},
		{"pair_sum", nil, nil},
	}
	for _, c := range cases {
		op, err := Lookup(c.op)
		if err != nil {
			t.Fatal(err)
		}
		if op.Stateful() || op.Params != 0 {
			t.Fatalf("%s: want a stateless op without params", c.op)
		}
		out := make([]float32, 8)
		n, err := op.Go(nil, nil, c.in, out)
		if err != nil {
			t.Fatalf("%s%v: %v", c.op, c.in, err)
		}
		if n != len(c.want) {
			t.Fatalf("%s%v: %v, want %v", c.op, c.in, out[:n], c.want)
		}
		for i := range c.want {
			if out[i] != c.want[i] {
				t.Fatalf("%s%v: %v, want %v", c.op, c.in, out[:n], c.want)
			}
		}
	}
	for _, name := range []string{"pair_sum", "pair_min", "pair_max"} {
		op, _ := Lookup(name)
		if _, err := op.Go(nil, nil, []float32{1, 2, 3}, make([]float32, 4)); !errors.Is(err, ErrOddPair) {
			t.Errorf("%s of 3 floats: %v, want ErrOddPair", name, err)
		}
		if _, err := op.Go(nil, nil, []float32{1, 2, 3, 4}, make([]float32, 1)); !errors.Is(err, ErrOutputTooSmall) {
			t.Errorf("%s into a small out: %v, want ErrOutputTooSmall", name, err)
		}
	}
	for _, name := range []string{"reduce_sum", "reduce_min", "reduce_max"} {
		op, _ := Lookup(name)
		if _, err := op.Go(nil, nil, []float32{1}, nil); !errors.Is(err, ErrOutputTooSmall) {
			t.Errorf("%s into no room: %v, want ErrOutputTooSmall", name, err)
		}
	}
}
