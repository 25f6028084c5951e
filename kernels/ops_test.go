package kernels

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func run(t *testing.T, name string, params, state, in []float32) []float32 {
	t.Helper()
	op, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(in)+1)
	n, err := op.Go(params, state, in, out)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out[:n]
}

func TestBuiltinsReference(t *testing.T) {
	in := []float32{-2, 0, 1.5, 4}
	cases := []struct {
		op     string
		params []float32
		want   []float32
	}{
		{"identity", nil, []float32{-2, 0, 1.5, 4}},
		{"scale", []float32{2}, []float32{-4, 0, 3, 8}},
		{"offset", []float32{1}, []float32{-1, 1, 2.5, 5}},
		{"relu", nil, []float32{0, 0, 1.5, 4}},
		{"saxpy", []float32{3, 1}, []float32{-5, 1, 5.5, 13}},
		{"delay", []float32{1000, 1}, []float32{-2, 0, 1.5, 4}},
	}
	for _, c := range cases {
		got := run(t, c.op, c.params, nil, in)
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("%s: got %v, want %v", c.op, got, c.want)
				break
			}
		}
	}
	if got := run(t, "sqrt", nil, nil, []float32{0, 4, 2}); got[1] != 2 || math.Abs(float64(got[2])-math.Sqrt2) > 1e-6 {
		t.Errorf("sqrt: %v", got)
	}
	op, _ := Lookup("sqrt")
	if _, err := op.Go(nil, nil, []float32{-1}, make([]float32, 1)); !errors.Is(err, ErrNegativeSqrt) {
		t.Errorf("sqrt(-1): %v", err)
	}
	state := make([]float32, 1)
	for i, want := range []float32{3, 3, 10} {
		got := run(t, "sum", nil, state, [][]float32{{1, 2}, {}, {7}}[i])
		if len(got) != 1 || got[0] != want {
			t.Errorf("sum step %d: %v, want %v", i, got, want)
		}
	}
	if _, err := op.Go(nil, nil, []float32{1, 2}, make([]float32, 1)); !errors.Is(err, ErrOutputTooSmall) {
		t.Errorf("small out: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	if _, err := Lookup("nope"); !errors.Is(err, ErrUnknownOp) {
		t.Fatalf("unknown: %v", err)
	}
	if err := Register(Op{Name: "scale", Go: func(_, _, _, _ []float32) (int, error) { return 0, nil }}); err == nil {
		t.Error("duplicate name accepted")
	}
	if err := Register(Op{Name: "nofunc"}); err == nil {
		t.Error("op without Go function accepted")
	}
	if s, _ := Lookup("sum"); !s.Stateful() {
		t.Error("sum must be stateful")
	}
}

func TestFloatsRoundTrip(t *testing.T) {
	v := []float32{1, -2.5, float32(math.Inf(1))}
	got, err := DecodeFloats(nil, EncodeFloats(nil, v))
	if err != nil || len(got) != 3 || got[1] != -2.5 || !math.IsInf(float64(got[2]), 1) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := DecodeFloats(nil, []byte{1, 2, 3}); err == nil {
		t.Fatal("odd payload accepted")
	}
}

// delay sleeps params[0] + params[1] * in[0] ns, clamped, and hands its
// message on unchanged.
func TestDelay(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		p, in []float32
		want  time.Duration
	}{
		{[]float32{1000, 0}, []float32{5}, time.Microsecond},
		{[]float32{1000, 500}, []float32{4}, 3 * time.Microsecond},
		{[]float32{2e6, 1e3}, nil, 2 * time.Millisecond}, // an empty message: params[0] alone
		{[]float32{0, 1}, []float32{-7}, 0},
		{[]float32{-5, 0}, []float32{1}, 0},
		{[]float32{0, 1}, []float32{nan}, 0},
		{[]float32{0, 1e9}, []float32{1e6}, MaxDelay},
		{[]float32{float32(math.Inf(1)), 0}, []float32{1}, MaxDelay},
	} {
		if got := DelayOf(c.p, c.in); got != c.want {
			t.Errorf("DelayOf(%v, %v) = %v, want %v", c.p, c.in, got, c.want)
		}
	}
	// The reference sleeps at least that long: 3 ms from the message.
	start := time.Now()
	got := run(t, "delay", []float32{1e6, 1e6}, nil, []float32{2, 9})
	if el := time.Since(start); el < 3*time.Millisecond {
		t.Errorf("delay of 3 ms returned after %v", el)
	}
	if len(got) != 2 || got[0] != 2 || got[1] != 9 {
		t.Errorf("delay changed its message: %v", got)
	}
	op, _ := Lookup("delay")
	if _, err := op.Go([]float32{0, 0}, nil, []float32{1, 2}, make([]float32, 1)); !errors.Is(err, ErrOutputTooSmall) {
		t.Errorf("small out: %v", err)
	}
}

// TestBufOps: an op that reads bound buffers registers with GoBuf and
// Buffers (1 to MaxBuffers), no other Go function and no Ports; RunBuf hands
// it its buffers, and refuses a call with the wrong number of them.
func TestBufOps(t *testing.T) {
	look := func(_, _ []float32, bufs [][]byte, in, out []float32) (int, error) {
		table, err := ViewFloats(bufs[0], nil)
		if err != nil {
			return 0, err
		}
		for i, x := range in {
			out[i] = table[int(x)]
		}
		return len(in), nil
	}
	goFn := func(_, _, _, _ []float32) (int, error) { return 0, nil }
	for _, c := range []struct {
		why string
		op  Op
	}{
		{"no buffers", Op{Name: "buf_none", GoBuf: look}},
		{"too many", Op{Name: "buf_many", GoBuf: look, Buffers: MaxBuffers + 1}},
		{"negative", Op{Name: "buf_neg", Go: goFn, Buffers: -1}},
		{"buffers without GoBuf", Op{Name: "buf_go", Go: goFn, Buffers: 1}},
		{"GoBuf and Go", Op{Name: "buf_two", Go: goFn, GoBuf: look, Buffers: 1}},
		{"GoBuf with Ports", Op{Name: "buf_ports", GoBuf: look, Buffers: 1, Ports: 2}},
	} {
		if err := Register(c.op); err == nil {
			t.Errorf("%s: accepted", c.why)
		}
	}
	op := Op{Name: "buf_lookup_test", GoBuf: look, Buffers: 1}
	if _, err := Lookup(op.Name); err != nil {
		if err := Register(op); err != nil {
			t.Fatal(err)
		}
	}
	op, err := Lookup(op.Name)
	if err != nil || op.GoBuf == nil {
		t.Fatalf("lookup: %v", err)
	}
	if !strings.Contains(RingSource(op).Code, "RA_BUF_RING_KERNEL(ra_buf_lookup_test)") {
		t.Errorf("ring source: %s", RingSource(op).Code)
	}
	table := EncodeFloats(nil, []float32{10, 20, 30})
	out := make([]float32, 2)
	n, port, err := op.RunBuf(nil, nil, [][]byte{table}, []float32{2, 0}, out)
	if err != nil || n != 2 || port != 0 || out[0] != 30 || out[1] != 10 {
		t.Fatalf("RunBuf: %v %d %d %v", out, n, port, err)
	}
	if _, _, err := op.Run(nil, nil, []float32{0}, out); !errors.Is(err, ErrBuffers) {
		t.Errorf("Run without its buffers: %v, want ErrBuffers", err)
	}
	id, _ := Lookup("identity")
	if _, _, err := id.RunBuf(nil, nil, [][]byte{table}, []float32{0}, out); !errors.Is(err, ErrBuffers) {
		t.Errorf("identity given a buffer: %v, want ErrBuffers", err)
	}
}
