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

// The ring steps against hand-written results: a message [offset, x...]
// combined with the params' chunk [len, own...] at that offset, the
// running value first (as pair_*), and a message outside the chunk
// refused.
func TestRingOpsReference(t *testing.T) {
	own := []float32{4, 10, 20, 30, 40} // a chunk of 4 floats
	cases := []struct {
		op   string
		in   []float32
		want []float32
	}{
		{"ring_sum", []float32{0, 1, 2, 3, 4}, []float32{0, 11, 22, 33, 44}},
		{"ring_sum", []float32{2, 0.5, -1}, []float32{2, 30.5, 39}},
		{"ring_min", []float32{1, 25, 31, -5}, []float32{1, 20, 30, -5}},
		{"ring_max", []float32{3, 41}, []float32{3, 41}},
		{"ring_max", []float32{4}, []float32{4}}, // no floats, at the chunk's end
	}
	for _, c := range cases {
		op, err := Lookup(c.op)
		if err != nil {
			t.Fatal(err)
		}
		if op.Stateful() || op.Params != 1 || !op.MoreParams {
			t.Fatalf("%s: want a stateless op taking 1 or more params", c.op)
		}
		out := make([]float32, 8)
		n, err := op.Go(own, nil, c.in, out)
		if err != nil || n != len(c.want) {
			t.Fatalf("%s%v: %v, %v; want %v", c.op, c.in, out[:max(n, 0)], err, c.want)
		}
		for i := range c.want {
			if out[i] != c.want[i] {
				t.Fatalf("%s%v: %v, want %v", c.op, c.in, out[:n], c.want)
			}
		}
	}
	for _, name := range []string{"ring_sum", "ring_min", "ring_max"} {
		op, _ := Lookup(name)
		for _, bad := range []struct {
			params, in []float32
		}{
			{own, []float32{3, 1, 2}},                   // past the chunk's end
			{own, []float32{-1, 1}},                     // before its start
			{own, []float32{0.5, 1}},                    // not a whole offset
			{own, nil},                                  // no offset
			{[]float32{9, 1, 2}, []float32{0, 1, 2, 3}}, // params shorter than they say
			{[]float32{float32(math.Inf(1)), 1}, []float32{5, 1}},
		} {
			if _, err := op.Go(bad.params, nil, bad.in, make([]float32, 8)); !errors.Is(err, ErrRingOffset) {
				t.Errorf("%s(%v) over %v: %v, want ErrRingOffset", name, bad.in, bad.params, err)
			}
		}
		if _, err := op.Go(own, nil, []float32{0, 1, 2}, make([]float32, 2)); !errors.Is(err, ErrOutputTooSmall) {
			t.Errorf("%s into a small out: %v, want ErrOutputTooSmall", name, err)
		}
	}
}
