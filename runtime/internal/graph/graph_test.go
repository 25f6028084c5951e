package graph

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
)

var (
	floats = kernels.Op{Name: "scale", In: kernels.TypeFloats, Out: kernels.TypeFloats}
	keyed  = kernels.Op{Name: "tokey", In: kernels.TypeFloats, Out: kernels.TypeKeyed}
	onKeys = kernels.Op{Name: "count", In: kernels.TypeKeyed, Out: kernels.TypeKeyed}
	pass   = kernels.Op{Name: "pass", In: kernels.TypeAny, Out: kernels.TypeAny}
	branch = kernels.Op{Name: "branch", In: kernels.TypeFloats, Out: kernels.TypeFloats, Ports: 2}
)

func st(name string, op kernels.Op, to ...string) Stage { return Stage{Name: name, Op: op, To: to} }

func routed(s Stage, r rk.Route) Stage { s.Route = r; return s }

func typeName(id uint32) string {
	if id == kernels.TypeAny {
		return "any type"
	}
	return fmt.Sprintf("type %d", id)
}

// A chain when no stage names any To; the To lists, in their order, when
// one does; a stage with none is an exit.
func TestOf(t *testing.T) {
	cases := []struct {
		name   string
		stages []Stage
		want   [][]int
	}{
		{"chain", []Stage{st("a", floats), st("b", floats), st("c", floats)}, [][]int{{1}, {2}, nil}},
		{"one stage", []Stage{st("a", floats)}, [][]int{nil}},
		{"diamond", []Stage{st("s", floats, "r", "l"), st("l", floats, "m"), st("r", floats, "m"), st("m", floats)}, [][]int{{2, 1}, {3}, {3}, nil}},
		{"two exits", []Stage{st("a", floats, "c"), st("b", floats), st("c", floats)}, [][]int{{2}, nil, nil}},
	}
	for _, c := range cases {
		next, err := Of(c.stages, 0)
		if err != nil || fmt.Sprint(next) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, next, err, c.want)
		}
	}
}

// Graphs that cannot run are refused, naming the problem and the stages.
func TestRefused(t *testing.T) {
	many := []Stage{st("sink", floats)}
	for i := range rk.MaxDeviceInLinks {
		many = append(many, st(fmt.Sprintf("f%d", i), floats, "sink"))
	}
	wide := st("src", floats)
	var rest []Stage
	for i := range rk.MaxDeviceOutLinks + 1 {
		n := fmt.Sprintf("t%d", i)
		wide.To = append(wide.To, n)
		rest = append(rest, st(n, floats))
	}
	wide.Route = rk.RouteAll
	cases := []struct {
		stages  []Stage
		stealIn int
		want    string
	}{
		{[]Stage{st("a", floats, "b"), st("b", floats, "c"), st("c", floats, "a")}, 0, "the stages form a cycle, a → b → c → a (bounded queues in a cycle can deadlock); break it, or loop in the caller"},
		{[]Stage{st("in", floats, "a"), st("a", floats, "b"), st("b", floats, "a")}, 0, "cycle, a → b → a"},
		{[]Stage{st("a", floats, "a")}, 0, `stage "a" sends to itself: a cycle (bounded queues in a cycle can deadlock)`},
		{[]Stage{st("a", floats, "nope"), st("b", floats)}, 0, `stage "a" sends to "nope", which is not a stage of the pipeline; stages: a, b`},
		{[]Stage{st("a", floats, "b", "b"), st("b", floats)}, 0, `stage "a" names "b" twice in To`},
		{[]Stage{st("a", floats, "b"), routed(st("b", floats), rk.RouteAll)}, 0, `stage "b" routes all but sends to no stage: its results leave the pipeline; name the stages in To, or drop Route`},
		{many, 0, fmt.Sprintf(`stage "sink" has %d in-links (its ingress and %d stages feeding it); a stage reads at most %d`, rk.MaxDeviceInLinks+1, rk.MaxDeviceInLinks, rk.MaxDeviceInLinks)},
		{[]Stage{st("a", floats), st("b", floats)}, rk.MaxDeviceInLinks, `stage "a" has 17 in-links (its ingress and 0 stages feeding it)`},
		{[]Stage{st("a", floats), st("a", floats)}, 0, `two stages are named "a"; stage names are unique`},
		{[]Stage{st("a", floats), st("b c", floats)}, 0, `stage 1: name "b c": give the stage a name without spaces or slashes`},
		{[]Stage{st("", floats)}, 0, `stage 0: name "": give the stage a name`},
		{append([]Stage{wide}, rest...), 0, fmt.Sprintf(`stage "src" sends to %d stages; a stage routes over at most %d`, rk.MaxDeviceOutLinks+1, rk.MaxDeviceOutLinks)},
	}
	for _, c := range cases {
		_, err := Of(c.stages, c.stealIn)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.stages, err, c.want)
		}
	}
	// At the limits, it is no error.
	if _, err := Of(many[:rk.MaxDeviceInLinks], 0); err != nil {
		t.Errorf("fan-in at the limit: %v", err)
	}
	if _, err := Of([]Stage{st("a", floats), st("b", floats)}, rk.MaxDeviceInLinks-1); err != nil {
		t.Errorf("steal in-links at the limit: %v", err)
	}
}

func TestCycle(t *testing.T) {
	cases := []struct {
		next [][]int
		want []int
	}{
		{[][]int{{1}, {2}, nil}, nil},
		{[][]int{{1, 2}, {3}, {3}, nil}, nil},
		{[][]int{{1}, {2}, {0}}, []int{0, 1, 2, 0}},
		{[][]int{{1}, {2}, {1}}, []int{1, 2, 1}},
		{[][]int{nil, {1}}, []int{1, 1}},
		{[][]int{{1}, nil, {3}, {2}}, []int{2, 3, 2}},
	}
	for _, c := range cases {
		if got := Cycle(c.next); !slices.Equal(got, c.want) {
			t.Errorf("Cycle(%v) = %v, want %v", c.next, got, c.want)
		}
	}
}

// Resolve checks each route against the stage's next stages and op, after
// the graph itself.
func TestResolveRoutes(t *testing.T) {
	cases := []struct {
		stages []Stage
		want   string
	}{
		{[]Stage{st("a", floats, "b", "c"), st("b", floats), st("c", floats)}, "RouteOne takes one"},
		{[]Stage{routed(st("b", branch, "x"), rk.RoutePort), st("x", floats)}, "op branch chooses among 2 ports, the stage has 1"},
		{[]Stage{routed(st("a", floats, "x", "y"), rk.RoutePort), st("x", floats), st("y", floats)}, "op scale chooses no port"},
		{[]Stage{st("a", floats, "a")}, "sends to itself"},
	}
	for _, c := range cases {
		_, err := Resolve(c.stages, 0, typeName)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.stages, err, c.want)
		}
	}
	g, err := Resolve([]Stage{routed(st("b", branch, "x", "y"), rk.RoutePort), st("x", floats), st("y", floats)}, 0, typeName)
	if err != nil || fmt.Sprint(g.Next) != "[[1 2] [] []]" {
		t.Fatalf("a branch: %+v, %v", g, err)
	}
}

// The type flows along the edges: a pass-through takes what it is fed
// (any, when fed several types) and gives what it takes, and fed any
// type takes what the stages after it take; an edge whose ends disagree
// is refused.
func TestTypes(t *testing.T) {
	const F, K, A = kernels.TypeFloats, kernels.TypeKeyed, kernels.TypeAny
	cases := []struct {
		name          string
		stages        []Stage
		wantIn, wantO []uint32
		err           string
	}{
		{name: "floats chain", stages: []Stage{st("a", floats), st("b", floats)}, wantIn: []uint32{F, F}, wantO: []uint32{F, F}},
		{name: "pass fed floats", stages: []Stage{st("a", floats), st("p", pass), st("b", floats)}, wantIn: []uint32{F, F, F}, wantO: []uint32{F, F, F}},
		{name: "pass first takes what it sends to takes", stages: []Stage{st("p", pass), st("k", onKeys)}, wantIn: []uint32{K, K}, wantO: []uint32{K, K}},
		{name: "pass first, exit", stages: []Stage{st("p", pass)}, wantIn: []uint32{A}, wantO: []uint32{A}},
		{name: "pass fed two types", stages: []Stage{st("f", floats, "p"), st("k", keyed, "p"), st("p", pass)}, wantIn: []uint32{F, F, A}, wantO: []uint32{F, K, A}},
		{name: "pass sending to two types", stages: []Stage{st("p", pass, "a", "k"), st("a", floats), st("k", onKeys)}, wantIn: []uint32{A, F, K}, wantO: []uint32{A, F, K}},
		{name: "keyed after tokey", stages: []Stage{st("a", keyed), st("k", onKeys)}, wantIn: []uint32{F, K}, wantO: []uint32{K, K}},
		{name: "mismatch", stages: []Stage{st("a", keyed), st("b", floats)},
			err: `stage "a" gives type 1, but stage "b", which it sends to, takes type 0 (op scale): convert between them with a stage, or change either op`},
		{name: "mismatch through a pass", stages: []Stage{st("a", keyed), st("p", pass), st("b", floats)}, err: `stage "p" gives type 1, but stage "b"`},
	}
	for _, c := range cases {
		next, err := Of(c.stages, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		in, out, err := Types(c.stages, next, typeName)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error saying %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(in, c.wantIn) || !slices.Equal(out, c.wantO) {
			t.Errorf("%s: takes %v gives %v (%v); want %v and %v", c.name, in, out, err, c.wantIn, c.wantO)
		}
	}
}

func TestFanout(t *testing.T) {
	cases := []struct {
		r    rk.Route
		outs int
		want int
	}{
		{rk.RouteAll, 3, 3}, {rk.RouteAll, 0, 1}, {rk.RouteOne, 1, 1}, {rk.RouteOne, 0, 1},
		{rk.RouteRoundRobin, 4, 1}, {rk.RouteKey, 2, 1}, {rk.RoutePort, 2, 1},
	}
	for _, c := range cases {
		if got := Fanout(c.r, c.outs); got != c.want {
			t.Errorf("Fanout(%s, %d) = %d, want %d", c.r, c.outs, got, c.want)
		}
	}
}

// Upstream is the stage and every stage whose results reach it, each
// before the stages it feeds, the stage last; in a chain, the stages up
// to it in order.
func TestUpstream(t *testing.T) {
	chain := [][]int{{1}, {2}, {3}, nil}
	diamond := [][]int{{2, 1}, {3}, {3}, nil} // s → r, l; l, r → m
	twoRoots := [][]int{{2}, {2}, {3}, nil}   // a, b → c → d
	branches := [][]int{{1, 2}, nil, nil}     // a → b, c: two exits
	cases := []struct {
		name string
		next [][]int
		i    int
		want []int
	}{
		{"chain: the first", chain, 0, []int{0}},
		{"chain: the middle", chain, 2, []int{0, 1, 2}},
		{"chain: the last", chain, 3, []int{0, 1, 2, 3}},
		{"one stage", [][]int{nil}, 0, []int{0}},
		{"diamond: the join", diamond, 3, []int{0, 1, 2, 3}},
		{"diamond: a side", diamond, 2, []int{0, 2}},
		{"two roots: the join", twoRoots, 2, []int{0, 1, 2}},
		{"two roots: the end", twoRoots, 3, []int{0, 1, 2, 3}},
		{"branches: one exit leaves the other", branches, 2, []int{0, 2}},
	}
	for _, c := range cases {
		got := Upstream(c.next, c.i)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: Upstream(%v, %d) = %v; want %v", c.name, c.next, c.i, got, c.want)
		}
		pos := map[int]int{}
		for k, j := range got {
			pos[j] = k
		}
		for a, to := range c.next { // every edge among them points forward
			for _, b := range to {
				if pa, ok := pos[a]; ok {
					if pb, ok := pos[b]; ok && pa > pb {
						t.Errorf("%s: %d before %d, which feeds it", c.name, b, a)
					}
				}
			}
		}
	}
}
