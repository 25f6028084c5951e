package kernels

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
)

// GoFunc is the Go side of a stage function: the reference the sim backend
// runs and tests compare the CUDA side against. It reads the message's
// float32 payload in, writes its result into out (whose length is the most
// the out slot holds) and returns how many floats it wrote. params are the
// stage's parameters; state is the stage's own memory (len StateFloats),
// seen only by stateful stages, which get their messages one at a time in
// order. An error dead-letters this one message; the kernel goes on.
type GoFunc func(params, state, in, out []float32) (int, error)

// PortFunc is the Go side of an op that routes its results: a GoFunc
// that also returns the port, the index of the out-link (in the stage's
// To list) its result goes down.
type PortFunc func(params, state, in, out []float32) (n, port int, err error)

// BufFunc is the Go side of an op that reads or writes the buffers bound
// to its stage (Op.Buffers > 0): a GoFunc that also gets bufs, the bound
// buffers' memory in the order the stage binds them (ringkernel.Stage's
// Buffers). Its CUDA side is a RA_BUF_STAGE function, which gets their
// device addresses and sizes. ViewFloats views a buffer as float32s.
type BufFunc func(params, state []float32, bufs [][]byte, in, out []float32) (int, error)

// TypedFunc is the second signature of a stage function, for typed
// messages: it sees the message's type id and payload bytes, writes its
// result's bytes into out (whose length is the most the out slot holds),
// and returns the result's type id, its length in bytes and, for an op
// with Ports, its port. Its CUDA side is a RA_TYPED_STAGE function.
type TypedFunc func(params, state []float32, inType uint32, in, out []byte) (outType uint32, n, port int, err error)

// Op is a stage function, registered under a name.
type Op struct {
	Name string
	// Params is the number of float32 parameters the op takes; with
	// MoreParams, the fewest (a stage may give any number from Params up:
	// the ring_* ops take a chunk of a vector).
	Params     int
	MoreParams bool
	// StateFloats is the size of a stateful op's state; 0 for stateless ops.
	StateFloats int
	// Go is the reference implementation.
	Go GoFunc
	// Ports, when set, makes the op choose among that many out-links for
	// each result: it has GoPort instead of Go, its CUDA side is a
	// RA_PORT_STAGE function, and a stage running it routes with
	// RoutePort.
	Ports  int
	GoPort PortFunc
	// Typed, instead of Go or GoPort, makes a typed op: it takes
	// messages of type In and gives messages of type Out (type ids, see
	// TypeFloats; TypeAny for In takes any type, for Out gives the type
	// the function returns, usually the one it was given). An op with Go
	// or GoPort takes and gives float32 vectors (TypeFloats, the zero
	// value of both).
	Typed   TypedFunc
	In, Out uint32
	// GoBuf, instead of Go, makes an op that reads or writes buffers
	// bound to its stage: Buffers is how many it takes (a stage binds
	// exactly that many). Its CUDA side is a RA_BUF_STAGE function.
	GoBuf   BufFunc
	Buffers int
	// CUDA is the device function's source: a RA_STAGE (or, with Ports,
	// RA_PORT_STAGE; with Typed, RA_TYPED_STAGE; with GoBuf,
	// RA_BUF_STAGE) function (see cuda/ringactor.cuh for the signatures)
	// named ra_<Name>.
	CUDA string
}

// MaxBuffers is the most buffers an op takes (Op.Buffers), and so a stage
// binds (ringkernel.MaxStageBuffers).
const MaxBuffers = 8

// ErrBuffers: an op that takes bound buffers was run without them (or one
// that takes none, with some).
var ErrBuffers = errors.New("kernels: wrong number of bound buffers")

// Run runs the op's Go side on one message: its result's length and, for
// an op with Ports, its port (0 otherwise). An op with GoBuf needs its
// buffers: run it with RunBuf.
func (o Op) Run(params, state, in, out []float32) (n, port int, err error) {
	return o.RunBuf(params, state, nil, in, out)
}

// RunBuf is Run with the stage's bound buffers, in the order it binds
// them: exactly Op.Buffers of them (none for an op without GoBuf).
func (o Op) RunBuf(params, state []float32, bufs [][]byte, in, out []float32) (n, port int, err error) {
	if len(bufs) != o.Buffers {
		return 0, 0, fmt.Errorf("%w: op %s takes %d, got %d", ErrBuffers, o.Name, o.Buffers, len(bufs))
	}
	if o.GoBuf != nil {
		n, err = o.GoBuf(params, state, bufs, in, out)
		return n, 0, err
	}
	if o.GoPort != nil {
		return o.GoPort(params, state, in, out)
	}
	n, err = o.Go(params, state, in, out)
	return n, 0, err
}

// Stateful reports whether the op keeps state between messages, and so must
// run as one consumer that sees messages in order.
func (o Op) Stateful() bool { return o.StateFloats > 0 }

var (
	opsMu sync.RWMutex
	ops   = map[string]Op{}
)

// ErrUnknownOp: no op is registered under the name.
var ErrUnknownOp = errors.New("kernels: unknown op")

// Register adds a user-defined op; built-ins use the same path. Names are
// unique: registering a taken name is an error.
func Register(op Op) error {
	fns := 0
	for _, set := range []bool{op.Go != nil, op.GoPort != nil, op.Typed != nil, op.GoBuf != nil} {
		if set {
			fns++
		}
	}
	if op.Name == "" || fns != 1 {
		return fmt.Errorf("kernels: op %q needs a name and one Go function: Go, GoPort (with Ports), Typed or GoBuf (with Buffers) (the sim backend runs it)", op.Name)
	}
	if (op.GoBuf != nil) != (op.Buffers > 0) || op.Buffers < 0 || op.Buffers > MaxBuffers {
		return fmt.Errorf("kernels: op %q takes %d buffers: an op with GoBuf takes 1 to %d (set Buffers), one without takes none (use GoBuf to read bound buffers)", op.Name, op.Buffers, MaxBuffers)
	}
	if op.Params < 0 || op.StateFloats < 0 || op.Ports < 0 {
		return fmt.Errorf("kernels: op %q: negative params, state size or ports", op.Name)
	}
	if op.Typed == nil && (op.Ports > 0) != (op.GoPort != nil) {
		return fmt.Errorf("kernels: op %q: an op with Ports has a GoPort (or Typed) function, one without has Go", op.Name)
	}
	if op.Typed == nil && (op.In != TypeFloats || op.Out != TypeFloats) {
		return fmt.Errorf("kernels: op %q takes types %d and gives %d, but its Go function works on float32 vectors: register it with Typed", op.Name, op.In, op.Out)
	}
	opsMu.Lock()
	defer opsMu.Unlock()
	if _, taken := ops[op.Name]; taken {
		return fmt.Errorf("kernels: op %q is already registered; pick another name", op.Name)
	}
	ops[op.Name] = op
	return nil
}

// Lookup returns the op registered under name, or an error listing the
// registered ones.
func Lookup(name string) (Op, error) {
	opsMu.RLock()
	op, ok := ops[name]
	opsMu.RUnlock()
	if !ok {
		return Op{}, fmt.Errorf("%w %q; registered: %v", ErrUnknownOp, name, Names())
	}
	return op, nil
}

// Names lists the registered ops, sorted.
func Names() []string {
	opsMu.RLock()
	defer opsMu.RUnlock()
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrOutputTooSmall: the op's result does not fit in the out slot.
var ErrOutputTooSmall = errors.New("kernels: result larger than the out slot")

// fits checks that an element-wise result has room in out. The built-in
// element-wise ops write their loops out: a call per element would cost
// more than the arithmetic, and the sim backend runs them on every message.
func fits(in, out []float32) error {
	if len(in) > len(out) {
		return fmt.Errorf("%w: %d floats, room for %d", ErrOutputTooSmall, len(in), len(out))
	}
	return nil
}

// ErrNegativeSqrt: sqrt of a negative number; the message is dead-lettered.
var ErrNegativeSqrt = errors.New("kernels: sqrt of a negative number")

// ErrRingOffset: a ring_* op's message names floats outside the stage's
// chunk (or its params do not hold the chunk they say); the message is
// dead-lettered.
var ErrRingOffset = errors.New("kernels: ring step outside its chunk")

// ErrOddPair: a pairwise op's message is not two halves of equal length;
// the message is dead-lettered.
var ErrOddPair = errors.New("kernels: pairwise op needs an even number of floats")

// reduction builds a stateless op that reduces a message to one float: f
// folded over the elements, in order, starting from id, the reduction's
// identity (and so the result for an empty message).
func reduction(id float32, f func(acc, x float32) float32) GoFunc {
	return func(_, _, in, out []float32) (int, error) {
		if len(out) < 1 {
			return 0, fmt.Errorf("%w: a reduction emits 1 float", ErrOutputTooSmall)
		}
		acc := id
		for _, x := range in {
			acc = f(acc, x)
		}
		out[0] = acc
		return 1, nil
	}
}

// pairwise builds a stateless op over a message [a..., b...] of two equal
// halves: out[i] = f(a[i], b[i]), half the message's length.
func pairwise(f func(a, b float32) float32) GoFunc {
	return func(_, _, in, out []float32) (int, error) {
		if len(in)%2 != 0 {
			return 0, fmt.Errorf("%w: got %d", ErrOddPair, len(in))
		}
		h := len(in) / 2
		if h > len(out) {
			return 0, fmt.Errorf("%w: %d floats, room for %d", ErrOutputTooSmall, h, len(out))
		}
		for i := range h {
			out[i] = f(in[i], in[h+i])
		}
		return h, nil
	}
}

// ringStep builds a ring_* op (the device-link ring all-reduce of
// runtime/collective): params are [len, own...], one participant's len
// floats of one chunk; a message [offset, x...] gives [offset,
// f(x[i], own[offset+i])...], x the running reduction (f's first operand,
// as pair_*'s first half).
func ringStep(f func(a, b float32) float32) GoFunc {
	return func(p, _, in, out []float32) (int, error) {
		if len(in) < 1 || len(p) < 1 {
			return 0, fmt.Errorf("%w: a message is [offset, floats...] and params [len, floats...]; got %d and %d floats", ErrRingOffset, len(in), len(p))
		}
		if len(in) > len(out) {
			return 0, fmt.Errorf("%w: %d floats, room for %d", ErrOutputTooSmall, len(in), len(out))
		}
		off, m := in[0], len(in)-1
		if !(off >= 0) || !(off+float32(m) <= p[0]) || float32(int(off)) != off || p[0] > float32(len(p)-1) {
			return 0, fmt.Errorf("%w: %d floats at offset %g of a chunk of %g floats (params hold %d)", ErrRingOffset, m, off, p[0], len(p)-1)
		}
		own := p[1+int(off):]
		out[0] = off
		for i := 1; i <= m; i++ {
			out[i] = f(in[i], own[i-1])
		}
		return len(in), nil
	}
}

// Min and max as the CUDA side writes them, one comparison each, so both
// sides agree even on NaN operands.
func minOf(a, b float32) float32 {
	if b < a {
		return b
	}
	return a
}

func maxOf(a, b float32) float32 {
	if b > a {
		return b
	}
	return a
}

func sumOf(a, b float32) float32 { return a + b }

// MaxDelay is the longest the delay op sleeps for one message.
const MaxDelay = 10 * time.Second

// DelayOf is how long the delay op sleeps for message in with params p:
// p[0] + p[1] * in[0] ns, computed in float32 as the CUDA side does (in[0]
// of an empty message is 0), clamped to 0 .. MaxDelay (NaN is 0).
func DelayOf(p, in []float32) time.Duration {
	d := p[0]
	if len(in) > 0 {
		d = p[0] + p[1]*in[0]
	}
	switch {
	case !(d > 0):
		return 0
	case d > float32(MaxDelay):
		return MaxDelay
	}
	return time.Duration(d)
}

func builtins() []Op {
	return []Op{
		{Name: "identity", Go: func(_, _, in, out []float32) (int, error) {
			if err := fits(in, out); err != nil {
				return 0, err
			}
			return copy(out, in), nil
		}},
		{Name: "scale", Params: 1, Go: func(p, _, in, out []float32) (int, error) {
			if err := fits(in, out); err != nil {
				return 0, err
			}
			a, out := p[0], out[:len(in)]
			for i, x := range in {
				out[i] = x * a
			}
			return len(in), nil
		}},
		{Name: "offset", Params: 1, Go: func(p, _, in, out []float32) (int, error) {
			if err := fits(in, out); err != nil {
				return 0, err
			}
			b, out := p[0], out[:len(in)]
			for i, x := range in {
				out[i] = x + b
			}
			return len(in), nil
		}},
		{Name: "relu", Go: func(_, _, in, out []float32) (int, error) {
			if err := fits(in, out); err != nil {
				return 0, err
			}
			out = out[:len(in)]
			for i, x := range in {
				out[i] = max(x, 0)
			}
			return len(in), nil
		}},
		{Name: "saxpy", Params: 2, Go: func(p, _, in, out []float32) (int, error) {
			if err := fits(in, out); err != nil {
				return 0, err
			}
			a, b, out := p[0], p[1], out[:len(in)]
			for i, x := range in {
				out[i] = a*x + b
			}
			return len(in), nil
		}},
		{Name: "sqrt", Go: func(_, _, in, out []float32) (int, error) {
			if err := fits(in, out); err != nil {
				return 0, err
			}
			out = out[:len(in)]
			for i, x := range in {
				if x < 0 {
					return 0, fmt.Errorf("%w: element %d is %g", ErrNegativeSqrt, i, x)
				}
				out[i] = float32(math.Sqrt(float64(x)))
			}
			return len(in), nil
		}},
		// sum keeps a running total of every element it has seen and emits it.
		{Name: "sum", StateFloats: 1, Go: func(_, state, in, out []float32) (int, error) {
			if len(out) < 1 {
				return 0, fmt.Errorf("%w: sum emits 1 float", ErrOutputTooSmall)
			}
			for _, x := range in {
				state[0] += x
			}
			out[0] = state[0]
			return 1, nil
		}},
		// reduce_* reduce a message to one float (collectives' Reduce): the
		// sum, least or greatest element; an empty message gives the
		// reduction's identity (0, +Inf, -Inf).
		{Name: "reduce_sum", Go: reduction(0, sumOf)},
		{Name: "reduce_min", Go: reduction(float32(math.Inf(1)), minOf)},
		{Name: "reduce_max", Go: reduction(float32(math.Inf(-1)), maxOf)},
		// pair_* combine the two halves of a message [a..., b...]
		// elementwise (collectives' ring all-reduce): a+b, min, max.
		{Name: "pair_sum", Go: pairwise(sumOf)},
		{Name: "pair_min", Go: pairwise(minOf)},
		{Name: "pair_max", Go: pairwise(maxOf)},
		// ring_* are one step of the device-link ring all-reduce: own
		// chunk in params, [offset, running...] in, [offset, running ⊕
		// own...] out (see ringStep).
		{Name: "ring_sum", Params: 1, MoreParams: true, Go: ringStep(sumOf)},
		{Name: "ring_min", Params: 1, MoreParams: true, Go: ringStep(minOf)},
		{Name: "ring_max", Params: 1, MoreParams: true, Go: ringStep(maxOf)},
		// pass hands on any message unchanged, with its type: a router or
		// a merge for typed graphs.
		{Name: "pass", Typed: passOn, In: TypeAny, Out: TypeAny},
		// keyed_scale multiplies a Keyed message's values by params[0].
		{Name: "keyed_scale", Params: 1, Typed: keyedScale, In: TypeKeyed, Out: TypeKeyed},
		// keyed_sum turns a Keyed message into [key, sum of its values].
		{Name: "keyed_sum", Typed: keyedSum, In: TypeKeyed, Out: TypeFloats},
		// keyed_count counts the messages of each key (key mod
		// KeyedCountKeys): it hands each one on with Count set to the
		// messages of its key seen so far, this one included.
		{Name: "keyed_count", StateFloats: KeyedCountKeys, Typed: keyedCount, In: TypeKeyed, Out: TypeKeyed},
		// delay passes a message on unchanged after sleeping
		// params[0] + params[1] * in[0] ns (DelayOf): a stage whose
		// service time is a wait, so a slow device or a long task can be
		// modelled without spending a processor on it.
		{Name: "delay", Params: 2, Go: func(p, _, in, out []float32) (int, error) {
			if err := fits(in, out); err != nil {
				return 0, err
			}
			time.Sleep(DelayOf(p, in))
			return copy(out, in), nil
		}},
		// branch passes a message on unchanged down port 0 when its first
		// element is below the threshold (or it is empty), else port 1: a
		// router for graphs.
		{Name: "branch", Params: 1, Ports: 2, GoPort: func(p, _, in, out []float32) (int, int, error) {
			if err := fits(in, out); err != nil {
				return 0, 0, err
			}
			port := 0
			if len(in) > 0 && in[0] >= p[0] {
				port = 1
			}
			return copy(out, in), port, nil
		}},
	}
}

func init() {
	for _, op := range builtins() {
		op.CUDA, _ = Source(op.Name + ".cu")
		if err := Register(op); err != nil {
			panic(err) // a duplicate built-in is a bug in this file
		}
	}
}
