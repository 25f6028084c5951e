package collective_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/collective"
)

func TestMain(m *testing.M) { rttest.Main(m) }

func ctxT(t *testing.T) context.Context { return rttest.Ctx(t) }

// under is the runtime newEnv made last, for on.
var under *rttest.Env

// newEnv is a runtime on the devices under test (rttest.Devices): on sim,
// 4 simulated devices with P2P topology topo.
func newEnv(t *testing.T, topo string) *rttest.Env {
	t.Helper()
	under = rttest.Devices(t, ra.DeviceOptions{SimDevices: 4, SimP2P: topo})
	return under
}

// on maps a case's participants' devices (ids 0..3, repeats allowed) onto
// four distinct devices under test (rttest.Env.DeviceSet).
func on(t *testing.T, ids []int) []int {
	t.Helper()
	set := under.DeviceSet(t, 4)
	out := make([]int, len(ids))
	for i, d := range ids {
		out[i] = set[d]
	}
	return out
}

// Tolerances, against float64 computations in Go:
//   - Reduce sums of floats: |got - exact| ≤ 1e-5·Σ|x|. Each chunk of up to
//     64 floats is summed in order in float32, then up to 64 partials per
//     message round after round: about 64 additions per round and three
//     rounds at these sizes, each off by at most 2⁻²⁴ of the magnitudes
//     it adds, so ≲ 200·6e-8·Σ|x| ≈ 1.2e-5·Σ|x| in the worst case and far
//     less in practice.
//   - AllReduce sums of floats, element k: |got - exact| ≤ N·2⁻²⁴·Σᵢ|xᵢ[k]|
//     (N-1 float32 additions in ring order).
//   - saxpy (a*x+b) through ScatterGather: 1e-6 relative (an FMA may or may
//     not be used, on either side).
//   - Min, max, identity, scale by 2, relu and sums of integers whose sum of
//     magnitudes is below 2²⁴: exact.

// rngT is a fresh random source whose seed the test logs; set
// RINGACTOR_SEED to replay one.
func rngT(t *testing.T) *rand.Rand {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv("RINGACTOR_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("RINGACTOR_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (RINGACTOR_SEED=%d replays it)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x636f6c6c))
}

func ints(rng *rand.Rand, n, bound int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.IntN(2*bound+1) - bound)
	}
	return v
}

func floats(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64()*1000 + 3)
	}
	return v
}

var all4 = []int{0, 1, 2, 3}

// ScatterGather over 4 devices (and fewer, reordered, repeated) equals the
// op applied in Go, element for element, for any chunk size.
func TestCollectiveScatterGather(t *testing.T) {
	e := newEnv(t, "0-1,2-3")
	rng := rngT(t)
	cases := []struct {
		op      string
		params  []float32
		devices []int
		chunk   int
		f       func(x float32) float32
		exact   bool
	}{
		{"identity", nil, all4, 0, func(x float32) float32 { return x }, true},
		{"scale", []float32{2}, all4, 17, func(x float32) float32 { return 2 * x }, true},
		{"relu", nil, []int{3, 1}, 50, func(x float32) float32 { return float32(math.Max(float64(x), 0)) }, true},
		{"saxpy", []float32{-1.25, 7}, []int{2, 2, 0}, 0, func(x float32) float32 { return float32(-1.25*float64(x) + 7) }, false},
		{"saxpy", []float32{0.5, -3}, all4, 1, func(x float32) float32 { return float32(0.5*float64(x) - 3) }, false},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s-%d", c.op, i), func(t *testing.T) {
			n := 40_000 + rng.IntN(30_000)
			if c.chunk == 1 {
				n = 3000 + rng.IntN(1000)
			}
			data := floats(rng, n)
			orig := slices.Clone(data)
			got, err := collective.ScatterGather(ctxT(t), e.RT, collective.Spec{Name: "sg", Devices: on(t, c.devices), Op: c.op, Params: c.params, Chunk: c.chunk}, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d floats back for %d", len(got), n)
			}
			if !slices.Equal(data, orig) {
				t.Fatal("ScatterGather modified its input")
			}
			for k, x := range data {
				w := c.f(x)
				if c.exact && got[k] != w || !c.exact && math.Abs(float64(got[k]-w)) > 1e-6*math.Max(1, math.Abs(float64(w))) {
					t.Fatalf("element %d: %s(%g) = %g, want %g", k, c.op, x, got[k], w)
				}
			}
		})
	}
}

// A chunk the op dead-letters fails the call with an error naming the
// chunk, its floats and the reason; nothing hangs, and the runtime takes
// the next collective.
func TestCollectiveScatterGatherDeadLetter(t *testing.T) {
	e := newEnv(t, "")
	data := make([]float32, 1000)
	for i := range data {
		data[i] = float32(i)
	}
	data[200] = -1 // chunk 3 (192..255)
	data[900] = -4 // chunk 14
	_, err := collective.ScatterGather(ctxT(t), e.RT, collective.Spec{Name: "roots", Devices: on(t, all4), Op: "sqrt"}, data)
	var ce *collective.ChunkError
	if !errors.Is(err, collective.ErrChunkLost) || !errors.As(err, &ce) {
		t.Fatalf("err %v, want a ChunkError", err)
	}
	if ce.Chunk != 3 || ce.Offset != 192 || ce.Len != 64 || ce.More != 1 || ce.Step != "scatter" ||
		ce.Dead.Reason != ra.ReasonStageError || ce.Dead.Device != on(t, all4)[3] || ce.Dead.Stage != "sqrt" {
		t.Fatalf("chunk error %+v", ce)
	}
	for _, w := range []string{`collective "roots"`, "scatter chunk 3 (floats 192..255)", "stage error", "negative", "1 more"} {
		if w == "negative" && !rttest.Has(rttest.ErrorTexts) {
			w = "outside the op's domain" // the code's text, not the function's
		}
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	t.Log(err)
	data[200], data[900] = 4, 9
	got, err := collective.ScatterGather(ctxT(t), e.RT, collective.Spec{Name: "roots", Devices: on(t, all4), Op: "sqrt"}, data)
	if err != nil || got[200] != 2 || got[900] != 3 || got[999] != float32(math.Sqrt(999)) {
		t.Fatalf("after a failed call: %v, %v", err, got[198:202])
	}
}

// Reduce sum, min and max over 4 devices equal Go's: exactly for integers
// (and for min and max of anything), within 1e-5·Σ|x| for sums of floats.
func TestCollectiveReduce(t *testing.T) {
	e := newEnv(t, "all")
	rng := rngT(t)
	type input struct {
		name  string
		data  []float32
		exact bool
	}
	inputs := []input{
		{"ints", ints(rng, 100_000+rng.IntN(50_000), 100), true}, // Σ|x| ≤ 1.5e7 < 2²⁴
		{"floats", floats(rng, 100_000+rng.IntN(50_000)), false},
		{"one", []float32{-42.5}, true},
		{"short", ints(rng, 1+rng.IntN(63), 1000), true},
	}
	for _, in := range inputs {
		var sum, abs float64
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range in.data {
			sum += float64(x)
			abs += math.Abs(float64(x))
			lo, hi = math.Min(lo, float64(x)), math.Max(hi, float64(x))
		}
		for _, chunk := range []int{0, 7, 1} {
			if chunk == 1 && len(in.data) > 5000 {
				continue // a message a float: slow, and the rounds are covered by the short inputs
			}
			for _, c := range []struct {
				op   collective.ReduceOp
				want float64
			}{{collective.ReduceSum, sum}, {collective.ReduceMin, lo}, {collective.ReduceMax, hi}} {
				spec := collective.Spec{Name: "reduce", Devices: on(t, all4), Chunk: chunk}
				got, err := collective.Reduce(ctxT(t), e.RT, spec, in.data, c.op)
				if err != nil {
					t.Fatalf("%s %v chunk %d: %v", in.name, c.op, chunk, err)
				}
				tol := 0.0
				if c.op == collective.ReduceSum && !in.exact {
					tol = 1e-5 * abs
				}
				if d := math.Abs(float64(got) - c.want); d > tol || (tol == 0 && float64(got) != c.want) {
					t.Fatalf("%s %v chunk %d of %d floats: %g, want %g (off by %g, tolerance %g)", in.name, c.op, chunk, len(in.data), got, c.want, d, tol)
				}
			}
		}
	}
	// Odd device sets: two participants on one device, or one.
	data := ints(rng, 5000, 50)
	var want float64
	for _, x := range data {
		want += float64(x)
	}
	for _, devs := range [][]int{{1, 1}, {2}} {
		got, err := collective.Reduce(ctxT(t), e.RT, collective.Spec{Devices: on(t, devs)}, data, collective.ReduceSum)
		if err != nil || float64(got) != want {
			t.Fatalf("devices %v: %g, %v; want %g", devs, got, err, want)
		}
	}
}

// Ring all-reduce over 4 devices: every participant gets the same vector,
// equal to Go's elementwise reduction (exact for integers, min and max;
// within N·2⁻²⁴·Σ|x| per element for float sums), for lengths that do and
// do not divide by the ring, shorter than the ring, and for several chunk
// sizes.
func TestCollectiveAllReduce(t *testing.T) {
	e := newEnv(t, "0-1,1-2,2-3,3-0")
	rng := rngT(t)
	cases := []struct {
		devices []int
		size    int
		chunk   int
		ints    bool
	}{
		{all4, 10_000, 0, true},
		{all4, 10_000 + 1 + rng.IntN(999), 0, false},
		{all4, 4099, 5, true},
		{all4, 3, 0, false}, // shorter than the ring: one chunk is empty
		{[]int{3, 0, 0}, 777, 64, false},
		{[]int{1, 2}, 513, 16, true},
		{[]int{2}, 100, 0, false},
	}
	for _, c := range cases {
		for _, op := range []collective.ReduceOp{collective.ReduceSum, collective.ReduceMin, collective.ReduceMax} {
			name := fmt.Sprintf("%v/%d-devices/%d-floats/chunk-%d/ints-%v", op, len(c.devices), c.size, c.chunk, c.ints)
			t.Run(name, func(t *testing.T) {
				n := len(c.devices)
				vs := make([][]float32, n)
				for i := range vs {
					if c.ints {
						vs[i] = ints(rng, c.size, 1000)
					} else {
						vs[i] = floats(rng, c.size)
					}
				}
				orig := make([][]float32, n)
				for i := range vs {
					orig[i] = slices.Clone(vs[i])
				}
				got, err := collective.AllReduce(ctxT(t), e.RT, collective.Spec{Name: "ring", Devices: on(t, c.devices), Chunk: c.chunk}, vs, op)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != n {
					t.Fatalf("%d vectors back for %d participants", len(got), n)
				}
				for i := range vs {
					if !slices.Equal(vs[i], orig[i]) {
						t.Fatalf("vector %d was modified", i)
					}
					if len(got[i]) != c.size {
						t.Fatalf("participant %d: %d floats, want %d", i, len(got[i]), c.size)
					}
					if i > 0 && !slices.Equal(got[i], got[0]) {
						t.Fatalf("participant %d's result differs from participant 0's", i)
					}
				}
				for k := range c.size {
					want, abs := float64(vs[0][k]), 0.0
					for i := range n {
						x := float64(vs[i][k])
						abs += math.Abs(x)
						switch op {
						case collective.ReduceSum:
							if i > 0 {
								want += x
							}
						case collective.ReduceMin:
							want = math.Min(want, x)
						case collective.ReduceMax:
							want = math.Max(want, x)
						}
					}
					tol := 0.0
					if op == collective.ReduceSum && !c.ints {
						tol = float64(n) * math.Ldexp(abs, -24)
					}
					if d := math.Abs(float64(got[0][k]) - want); d > tol || (tol == 0 && float64(got[0][k]) != want) {
						t.Fatalf("element %d: %g, want %g (off by %g, tolerance %g)", k, got[0][k], want, d, tol)
					}
				}
			})
		}
	}
}

// Bad input is answered with an error naming the problem: no panic, no
// hang, nothing left running.
func TestCollectiveBadInput(t *testing.T) {
	e := newEnv(t, "")
	ctx := ctxT(t)
	data := []float32{1, 2, 3}
	vec := [][]float32{{1, 2}, {3, 4}, {5, 6}, {7, 8}}
	sg := func(spec collective.Spec, d []float32) error {
		_, err := collective.ScatterGather(ctx, e.RT, spec, d)
		return err
	}
	red := func(spec collective.Spec, d []float32, op collective.ReduceOp) error {
		_, err := collective.Reduce(ctx, e.RT, spec, d, op)
		return err
	}
	all := func(spec collective.Spec, vs [][]float32, op collective.ReduceOp) error {
		_, err := collective.AllReduce(ctx, e.RT, spec, vs, op)
		return err
	}
	ok := collective.Spec{Name: "bad", Devices: on(t, all4)}
	with := func(f func(*collective.Spec)) collective.Spec {
		s := ok
		f(&s)
		return s
	}
	sgSpec := with(func(s *collective.Spec) { s.Op = "identity" })
	cases := []struct {
		name, want string
		err        error
	}{
		{"scatter: no devices", "at least one device", sg(with(func(s *collective.Spec) { s.Devices = nil; s.Op = "identity" }), data)},
		{"reduce: no devices", "at least one device", red(with(func(s *collective.Spec) { s.Devices = nil }), data, collective.ReduceSum)},
		{"allreduce: no devices", "at least one device", all(with(func(s *collective.Spec) { s.Devices = []int{} }), nil, collective.ReduceSum)},
		{"unknown device", "participant 1", red(with(func(s *collective.Spec) { s.Devices = []int{0, 9} }), data, collective.ReduceMax)},
		{"unknown op", `unknown op "cube"`, sg(with(func(s *collective.Spec) { s.Op = "cube" }), data)},
		{"no op", "needs an Op", sg(ok, data)},
		{"wrong params", "takes 1 params, got 0", sg(with(func(s *collective.Spec) { s.Op = "scale" }), data)},
		{"scatter: empty data", "no data", sg(sgSpec, nil)},
		{"reduce: empty data", "no data", red(ok, []float32{}, collective.ReduceMin)},
		{"allreduce: empty vectors", "empty vectors", all(ok, make([][]float32, 4), collective.ReduceSum)},
		{"allreduce: mismatched lengths", "vector 2 has 3 floats and vector 0 has 2", all(ok, [][]float32{{1, 2}, {3, 4}, {5, 6, 7}, {8, 9}}, collective.ReduceSum)},
		{"allreduce: too few vectors", "3 vectors for 4 devices", all(ok, vec[:3], collective.ReduceSum)},
		{"reduce: bad op", "ReduceOp(7)", red(ok, data, collective.ReduceOp(7))},
		{"allreduce: bad op", "ReduceOp(-1)", all(ok, vec, collective.ReduceOp(-1))},
		{"reduce: Op set", "leave Op and Params", red(sgSpec, data, collective.ReduceSum)},
		{"allreduce: Op set", "leave Op and Params", all(sgSpec, vec, collective.ReduceMax)},
		{"negative chunk", "Chunk -3", red(with(func(s *collective.Spec) { s.Chunk = -3 }), data, collective.ReduceSum)},
		{"allreduce: bad path", "Path(9): use AutoPath, DeviceLinks or HostHops", all(with(func(s *collective.Spec) { s.Path = 9 }), vec, collective.ReduceSum)},
		{"allreduce: chunk over DeviceLinks' most", "chunks of 1048577 floats for DeviceLinks", all(with(func(s *collective.Spec) { s.Devices = s.Devices[:1]; s.Path = collective.DeviceLinks }),
			[][]float32{make([]float32, collective.MaxDeviceLinkChunk+1)}, collective.ReduceSum)},
		{"huge chunk", "more than a message holds", all(with(func(s *collective.Spec) { s.Chunk = 1 << 22 }), vec, collective.ReduceSum)},
		{"bad name", "without spaces or slashes", sg(with(func(s *collective.Spec) { s.Name = "a b"; s.Op = "identity" }), data)},
	}
	for _, c := range cases {
		if !errors.Is(c.err, collective.ErrBadSpec) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrBadSpec saying %q", c.name, c.err, c.want)
		}
	}
	// An op whose result is not its input's length cannot scatter-gather.
	if err := sg(with(func(s *collective.Spec) { s.Op = "reduce_sum" }), []float32{1, 2, 3, 4}); err == nil || !strings.Contains(err.Error(), "elementwise") {
		t.Errorf("non-elementwise op: %v", err)
	}
	// A cancelled context ends the call with its error.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := collective.AllReduce(cctx, e.RT, ok, vec, collective.ReduceSum); err == nil {
		t.Error("AllReduce with a cancelled context succeeded")
	}
	// The names are free again: the same calls now work.
	if got, err := collective.AllReduce(ctx, e.RT, ok, vec, collective.ReduceSum); err != nil || !slices.Equal(got[3], []float32{16, 20}) {
		t.Errorf("AllReduce after bad calls: %v, %v", got, err)
	}
}

// A nil ctx is refused, not a panic.
func TestCollectivesRefuseANilContext(t *testing.T) {
	e := newEnv(t, "")
	var none context.Context
	if _, err := collective.Reduce(none, e.RT, collective.Spec{Name: "nil-ctx", Devices: on(t, []int{0, 1})}, []float32{1, 2}, collective.ReduceSum); !errors.Is(err, ra.ErrNilContext) {
		t.Fatalf("Reduce(nil ctx) = %v; want ErrNilContext", err)
	}
}

// The two paths of AllReduce give the same vectors, bit for bit, for sums
// of floats too (both combine each chunk in participant order), on 2, 3
// and 4 participants (one device twice among them) and lengths that
// divide by neither the ring nor Chunk.
func TestCollectiveAllReducePathsAgree(t *testing.T) {
	e := newEnv(t, "0-1,2-3")
	rng := rngT(t)
	for _, c := range []struct {
		devices     []int
		size, chunk int
	}{
		{[]int{0, 1}, 1001, 0},
		{[]int{2, 0, 3}, 1000, 7},
		{all4, 4099, 64},
		{[]int{1, 3, 3, 0}, 517, 10},
	} {
		// Sums on every ring (their rounding depends on the order), min
		// and max on two each (TestCollectiveAllReduce checks min and max
		// against Go's on more rings, over the default path).
		for _, op := range []collective.ReduceOp{collective.ReduceSum, collective.ReduceOp(1 + len(c.devices)%2)} {
			vs := make([][]float32, len(c.devices))
			for i := range vs {
				vs[i] = floats(rng, c.size)
			}
			var got [2][][]float32
			for k, path := range []collective.Path{collective.DeviceLinks, collective.HostHops} {
				var err error
				spec := collective.Spec{Name: "paths", Devices: on(t, c.devices), Chunk: c.chunk, Path: path}
				if got[k], err = collective.AllReduce(ctxT(t), e.RT, spec, vs, op); err != nil {
					t.Fatalf("%v over %v on %v: %v", op, path, c.devices, err)
				}
			}
			for i := range vs {
				if !slices.Equal(got[0][i], got[1][i]) {
					k := 0
					for k = range got[0][i] {
						if got[0][i][k] != got[1][i][k] {
							break
						}
					}
					t.Fatalf("%v on %v, participant %d element %d: device links %g, host hops %g", op, c.devices, i, k, got[0][i][k], got[1][i][k])
				}
			}
			if op == collective.ReduceSum {
				inexact := 0 // the sums depend on the order: the check means something
				for k := range c.size {
					var s float32
					for i := len(vs) - 1; i >= 0; i-- {
						s += vs[i][k]
					}
					if s != got[0][0][k] {
						inexact++
					}
				}
				t.Logf("%d devices, %d floats: %d sums differ in reverse order", len(c.devices), c.size, inexact)
			}
		}
	}
}

// DeviceLinks moves the data between the participants' kernels over device
// links: the host sends each message once, into a chain's head, and takes
// it once from its exit; every hop between participants is a peer, staged
// or local link, as the topology places it.
func TestCollectiveAllReduceStaysOnTheDevices(t *testing.T) {
	if rttest.Backend() == rttest.CPU {
		// A link to or from the CPU device is an ingress or egress link of
		// host memory, not a peer or staged one: the kinds this case predicts.
		t.Skip(rttest.Why(rttest.SimTopology))
	}
	e := newEnv(t, "0-1,1-2")
	devs := on(t, all4)
	rng := rngT(t)
	const size, chunk = 1003, 16
	n := len(devs)
	sent := 0 // messages into the chains: chunk c is [c*size/n, (c+1)*size/n)
	for c := range n {
		sent += ((c+1)*size/n - c*size/n + chunk - 1) / chunk
	}
	reg := e.RT.Registry()
	want := map[string]uint64{"ingress": uint64(sent), "egress": uint64(sent)}
	links := map[string]int{"ingress": n * (n - 1), "egress": n}
	for c := range n {
		for j := 1; j < n-1; j++ {
			a, b := devs[(c+j)%n], devs[(c+j+1)%n]
			kind := "staged"
			if a == b {
				kind = "local"
			} else if reg.Peer(a, b) {
				kind = "peer"
			}
			want[kind] += uint64(((c+1)*size/n - c*size/n + chunk - 1) / chunk)
			links[kind]++
		}
	}
	for _, path := range []collective.Path{collective.DeviceLinks, collective.HostHops} {
		var got map[string]uint64
		gotLinks := map[string]int{}
		pipes := 0
		var describe string
		collective.AfterDataMoves(t, func(ps []*ra.Pipeline) {
			pipes = len(ps)
			describe = ps[0].Describe()
			got = map[string]uint64{}
			for _, d := range e.RT.Metrics().Devices {
				for _, l := range d.Links {
					got[l.Kind] += l.Messages
					gotLinks[l.Kind] += l.Links
				}
			}
		})
		vs := [][]float32{ints(rng, size, 9), ints(rng, size, 9), ints(rng, size, 9), ints(rng, size, 9)}
		if _, err := collective.AllReduce(ctxT(t), e.RT, collective.Spec{Name: "where", Devices: devs, Chunk: chunk, Path: path}, vs, collective.ReduceSum); err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: %d pipelines, messages by link kind %v over links %v", path, pipes, got, gotLinks)
		if path == collective.HostHops {
			if got["ingress"] <= want["ingress"] {
				t.Fatalf("host hops: %d messages through the ingress; the device-link count %d should be less", got["ingress"], want["ingress"])
			}
			continue
		}
		// A chain's stages show the start of their chunk, not all of it.
		if strings.Count(describe, "op ring_sum[") != n-1 || !strings.Contains(describe, " ... (251 floats)]") || len(describe) > 2000 {
			t.Errorf("chain 0 described as\n%s", describe)
		}
		if pipes != n || !maps.Equal(got, want) || !maps.Equal(gotLinks, links) {
			t.Fatalf("device links: %d pipelines, messages by link kind %v over links %v; want %d, %v over %v", pipes, got, gotLinks, n, want, links)
		}
	}
}

// A message a chain's kernel dead-letters fails DeviceLinks' call with a
// ChunkError naming its chunk and the participant whose kernel dropped
// it; the next call works.
func TestCollectiveAllReduceDeviceLinksDeadLetter(t *testing.T) {
	e := newEnv(t, "")
	devs := on(t, all4)
	vs := [][]float32{{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, {11, 12, 13, 14, 15}, {16, 17, 18, 19, 20}}
	spec := collective.Spec{Name: "lost", Devices: devs, Path: collective.DeviceLinks}
	collective.MisplaceChunk(t, 2)
	_, err := collective.AllReduce(ctxT(t), e.RT, spec, vs, collective.ReduceMax)
	var ce *collective.ChunkError
	if !errors.Is(err, collective.ErrChunkLost) || !errors.As(err, &ce) {
		t.Fatalf("err %v, want a ChunkError", err)
	}
	if ce.Step != "reduce-scatter chain" || ce.Chunk != 2 || ce.Offset != 2 || ce.Len != 1 || ce.Participant != 3 ||
		ce.Dead.Reason != ra.ReasonStageError || ce.Dead.Device != devs[3] || ce.Dead.Stage != "ring_max-p3" || ce.More != 0 {
		t.Fatalf("chunk error %+v", ce)
	}
	t.Log(err)
	collective.MisplaceChunk(t, -1) // no chunk -1: nothing misplaced
	got, err := collective.AllReduce(ctxT(t), e.RT, spec, vs, collective.ReduceMax)
	if err != nil || !slices.Equal(got[1], vs[3]) {
		t.Fatalf("after a failed call: %v, %v", got, err)
	}
}
