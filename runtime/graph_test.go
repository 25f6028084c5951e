package runtime_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	ra "github.com/ringactor/ringactor/runtime"
)

// collect is a Deliver sink that keeps every result, by id.
type collect struct {
	mu  sync.Mutex
	got map[uint64][]ra.Result
}

func (c *collect) sink() ra.Sink {
	c.got = map[uint64][]ra.Result{}
	return ra.Sink{Func: func(r ra.Result) {
		c.mu.Lock()
		c.got[r.ID] = append(c.got[r.ID], r)
		c.mu.Unlock()
	}}
}

// conserved checks the account of a closed pipeline: every message and
// every copy ended, delivered or dead-lettered.
func conservedGraph(t *testing.T, st ra.PipelineStats) {
	t.Helper()
	if st.InFlight != 0 || st.Sent+st.Copied != st.Delivered+st.DeadLettered {
		t.Fatalf("account does not conserve: sent %d + copied %d != delivered %d + dead %d (in flight %d)",
			st.Sent, st.Copied, st.Delivered, st.DeadLettered, st.InFlight)
	}
}

// A diamond: a router sends each message down one of two branches by the
// port its op chose, on different devices, and both fan in to a merge
// stage, the one exit. Every result is checked against Go, a request gets
// its own result through the graph, and Describe shows the graph.
func TestGraphDiamond(t *testing.T) {
	e := deviceEnv(t)
	var c collect
	spec := ra.PipelineSpec{Name: "diamond", Deliver: c.sink(), Stages: []ra.StageSpec{
		{Name: "split", Op: "branch", Params: []float32{50}, Route: ra.RoutePort, To: []string{"low", "high"}, Device: testDevice(0)},
		{Name: "low", Op: "scale", Params: []float32{2}, To: []string{"merge"}, Device: testDevice(1)},
		{Name: "high", Op: "offset", Params: []float32{-100}, To: []string{"merge"}, Device: testDevice(2)},
		{Name: "merge", Op: "identity", Device: testDevice(3)},
	}}
	p := buildStarted(t, e.RT, spec)
	d := p.Describe()
	for _, w := range []string{"to low, high, route port", "from low:", "from high:", "egress:"} {
		if !strings.Contains(d, w) {
			t.Fatalf("describe lacks %q:\n%s", w, d)
		}
	}
	if strings.Count(d, "egress:") != 1 {
		t.Fatalf("one exit, one egress:\n%s", d)
	}
	const n = 3000
	batch := make([]ra.Data, n)
	for i := range batch {
		batch[i] = ra.Data{ID: uint64(i + 1), Floats: []float32{float32(i % 100), float32(i)}}
	}
	if k, err := p.SendBatch(ctxT(t), batch); err != nil || k != n {
		t.Fatal(k, err)
	}
	r, err := p.Request(ctxT(t), ra.Data{ID: n + 1, Floats: []float32{70, 1}})
	if err != nil || r.Stage != "merge" || !slices.Equal(r.Floats, []float32{-30, -99}) {
		t.Fatalf("request through the graph: %+v, %v", r, err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if len(c.got) != n {
		t.Fatalf("%d results for %d messages", len(c.got), n)
	}
	for id, rs := range c.got {
		x, y := float32((id-1)%100), float32(id-1)
		want := []float32{x * 2, y * 2}
		if x >= 50 {
			want = []float32{x - 100, y - 100}
		}
		if len(rs) != 1 || rs[0].Stage != "merge" || !slices.Equal(rs[0].Floats, want) {
			t.Fatalf("message %d: %+v, want one result %v from merge", id, rs, want)
		}
	}
	st := p.Stats()
	if st.Sent != n+1 || st.Delivered != n+1 || st.Copied != 0 {
		t.Fatalf("stats %+v", st)
	}
	conservedGraph(t, st)
	if st.Stages[1].Processed+st.Stages[2].Processed != n+1 || st.Stages[1].Processed != (n/100)*50 {
		t.Fatalf("branches processed %d and %d", st.Stages[1].Processed, st.Stages[2].Processed)
	}
}

// Fan-out: a stage sends a copy of each result to three stages, one of
// which dead-letters some. Each copy is a message of its own: the account
// counts copies and conserves exactly; each sampled message has one trace
// whose root holds a span for every stage visited, the fan-out's spans
// sharing it, and ends after the last of them.
func TestGraphFanOutAccountAndTraces(t *testing.T) {
	e := deviceEnv(t)
	var c collect
	spec := ra.PipelineSpec{Name: "fanout", Deliver: c.sink(), SampleRatio: 1, Stages: []ra.StageSpec{
		{Name: "src", Op: "identity", Route: ra.RouteAll, To: []string{"root", "double", "inc"}, Device: testDevice(0)},
		{Name: "root", Op: "sqrt", Device: testDevice(1)},
		{Name: "double", Op: "scale", Params: []float32{2}, Device: testDevice(2)},
		{Name: "inc", Op: "offset", Params: []float32{1}, Device: testDevice(3)},
	}}
	p := buildStarted(t, e.RT, spec)
	const n = 200
	negative := func(id uint64) bool { return id%10 == 0 }
	for i := range n {
		x := float32(i)
		if negative(uint64(i + 1)) {
			x = -x - 1
		}
		if err := p.Send(ctxT(t), ra.Data{ID: uint64(i + 1), Floats: []float32{x}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	dead := uint64(n / 10)
	if st.Sent != n || st.Copied != 2*n || st.DeadLettered != dead || st.Delivered != 3*n-dead {
		t.Fatalf("account %+v; want %d sent, %d copied, %d dead", st, n, 2*n, dead)
	}
	conservedGraph(t, st)
	for id, rs := range c.got {
		x := float32(id - 1)
		if negative(id) {
			x = -x - 1
		}
		want := map[string]float32{"double": 2 * x, "inc": x + 1}
		if !negative(id) {
			want["root"] = float32(math.Sqrt(float64(x)))
		}
		if len(rs) != len(want) {
			t.Fatalf("message %d: %d results, want %d", id, len(rs), len(want))
		}
		for _, r := range rs {
			if w, ok := want[r.Stage]; !ok || len(r.Floats) != 1 || r.Floats[0] != w {
				t.Fatalf("message %d from %s: %v, want %v", id, r.Stage, r.Floats, want)
			}
		}
	}
	traces := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range e.Spans.Ended() {
		traces[s.SpanContext().TraceID().String()] = append(traces[s.SpanContext().TraceID().String()], s)
	}
	if len(traces) != n {
		t.Fatalf("%d traces for %d sampled messages", len(traces), n)
	}
	for _, spans := range traces {
		var root sdktrace.ReadOnlySpan
		stages := map[string]int{}
		for _, s := range spans {
			if s.Name() == "send fanout" {
				root = s
			} else {
				stages[strings.TrimPrefix(s.Name(), "process fanout/")]++
			}
		}
		if root == nil {
			t.Fatal("a trace without its root span")
		}
		var id uint64
		for _, a := range root.Attributes() {
			if a.Key == "messaging.message.id" {
				id, _ = strconv.ParseUint(a.Value.AsString(), 10, 64)
			}
		}
		want := map[string]int{"src": 1, "root": 1, "double": 1, "inc": 1}
		if negative(id) {
			delete(want, "root") // dead there: no span of a stage it did not pass
			if root.Status().Code != codes.Error {
				t.Fatalf("message %d: a copy died, root status %v", id, root.Status())
			}
		}
		if !negative(id) && root.Status().Code == codes.Error {
			t.Fatalf("message %d: every copy delivered, root status %v", id, root.Status())
		}
		if fmt.Sprint(stages) != fmt.Sprint(want) {
			t.Fatalf("message %d: stage spans %v, want %v", id, stages, want)
		}
		for _, s := range spans {
			if s == root {
				continue
			}
			if s.Parent().SpanID() != root.SpanContext().SpanID() {
				t.Fatalf("message %d: span %s is not the root's child", id, s.Name())
			}
			if s.EndTime().After(root.EndTime()) || s.StartTime().Before(root.StartTime()) {
				t.Fatalf("message %d: span %s [%v, %v] outside the root [%v, %v]", id, s.Name(), s.StartTime(), s.EndTime(), root.StartTime(), root.EndTime())
			}
		}
	}
}

// Routing by key sends every message of a key to the same stateful
// stage; round-robin spreads messages evenly, in turn.
func TestGraphKeyAndRoundRobin(t *testing.T) {
	e := deviceEnv(t)
	var c collect
	spec := ra.PipelineSpec{Name: "keyed", Deliver: c.sink(), Stages: []ra.StageSpec{
		{Name: "deal", Op: "identity", Route: ra.RouteRoundRobin, To: []string{"w0", "w1", "w2"}, Device: testDevice(0)},
		{Name: "w0", Op: "identity", To: []string{"router"}, Device: testDevice(1)},
		{Name: "w1", Op: "identity", To: []string{"router"}, Device: testDevice(2)},
		{Name: "w2", Op: "identity", To: []string{"router"}, Device: testDevice(3)},
		{Name: "router", Op: "identity", Route: ra.RouteKey, KeyOffset: 4, To: []string{"count0", "count1"}, Device: testDevice(0)},
		{Name: "count0", Op: "sum", Stateful: true, Device: testDevice(1)},
		{Name: "count1", Op: "sum", Stateful: true, Device: testDevice(2)},
	}}
	p := buildStarted(t, e.RT, spec)
	const n = 3000
	batch := make([]ra.Data, n)
	for i := range batch {
		batch[i] = ra.Data{ID: uint64(i + 1), Floats: []float32{1, float32(i % 13)}}
	}
	if k, err := p.SendBatch(ctxT(t), batch); err != nil || k != n {
		t.Fatal(k, err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	for w := 1; w <= 3; w++ {
		if st.Stages[w].Processed != n/3 {
			t.Fatalf("round-robin: %s processed %d of %d", st.Stages[w].Stage, st.Stages[w].Processed, n)
		}
	}
	at := map[float32]string{}
	perStage := map[string]float32{}
	for id, rs := range c.got {
		if len(rs) != 1 {
			t.Fatalf("message %d: %d results", id, len(rs))
		}
		key := float32((id - 1) % 13)
		if s, ok := at[key]; ok && s != rs[0].Stage {
			t.Fatalf("key %v reached %s and %s", key, s, rs[0].Stage)
		}
		at[key] = rs[0].Stage
		perStage[rs[0].Stage] += 1 + key
	}
	// Each counter's last total is the sum of everything its keys carried.
	for _, s := range []string{"count0", "count1"} {
		var last float32
		for _, rs := range c.got {
			if rs[0].Stage == s {
				last = max(last, rs[0].Floats[0])
			}
		}
		if last != perStage[s] {
			t.Fatalf("%s's total %v, want %v", s, last, perStage[s])
		}
	}
	conservedGraph(t, st)
}

// Fan-in at the device loop's in-link limit: fifteen stages feed one,
// each over its own link, beside its ingress.
func TestGraphFanInAtTheLimit(t *testing.T) {
	e := deviceEnv(t)
	stages := []ra.StageSpec{{Name: "sink", Op: "identity", Device: testDevice(0)}}
	for i := range 15 {
		stages = append(stages, ra.StageSpec{Name: fmt.Sprintf("f%d", i), Op: "offset", Params: []float32{float32(i)}, To: []string{"sink"}, Device: testDevice(i % 4), Capacity: 64})
	}
	var c collect
	p := buildStarted(t, e.RT, ra.PipelineSpec{Name: "fanin", Deliver: c.sink(), Stages: stages})
	const per = 200
	for i := range 15 {
		pid, err := p.PID(fmt.Sprintf("f%d", i))
		if err != nil {
			t.Fatal(err)
		}
		for j := range per {
			e.RT.System().Root.Send(pid, ra.Data{ID: uint64(i*per + j + 1), Floats: []float32{0}})
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if len(c.got) != 15*per {
		t.Fatalf("%d results, want %d", len(c.got), 15*per)
	}
	for id, rs := range c.got {
		if f := float32((id - 1) / per); rs[0].Floats[0] != f {
			t.Fatalf("message %d: %v, want %v", id, rs[0].Floats, f)
		}
	}
	conservedGraph(t, p.Stats())
}

// Graphs that cannot run are refused at Build, naming the problem: a
// cycle by its stages, an edge to nowhere, a route that does not fit.
func TestGraphRefused(t *testing.T) {
	e := newEnv(t, "")
	st := func(name, op string, to ...string) ra.StageSpec {
		return ra.StageSpec{Name: name, Op: op, To: to}
	}
	many := []ra.StageSpec{st("sink", "identity")}
	for i := range 16 {
		many = append(many, st(fmt.Sprintf("f%d", i), "identity", "sink"))
	}
	withRoute := func(s ra.StageSpec, r ra.Route) ra.StageSpec { s.Route = r; return s }
	branch := ra.StageSpec{Name: "b", Op: "branch", Params: []float32{0}, Route: ra.RoutePort, To: []string{"x"}}
	cases := []struct {
		stages []ra.StageSpec
		want   string
	}{
		{[]ra.StageSpec{st("a", "identity", "b"), st("b", "identity", "c"), st("c", "identity", "a")}, "cycle, a → b → c → a"},
		{[]ra.StageSpec{st("in", "identity", "a"), st("a", "identity", "b"), st("b", "identity", "a")}, "cycle, a → b → a"},
		{[]ra.StageSpec{st("a", "identity", "a")}, `stage "a" sends to itself`},
		{[]ra.StageSpec{st("a", "identity", "nope")}, `sends to "nope", which is not a stage`},
		{[]ra.StageSpec{st("a", "identity", "b", "b"), st("b", "identity")}, `names "b" twice`},
		{[]ra.StageSpec{st("a", "identity", "b", "c"), st("b", "identity"), st("c", "identity")}, "RouteOne takes one"},
		{[]ra.StageSpec{st("a", "identity", "b"), withRoute(st("b", "identity"), ra.RouteAll)}, `stage "b" routes all but sends to no stage`},
		{[]ra.StageSpec{branch, st("x", "identity")}, "op branch chooses among 2 ports, the stage has 1"},
		{[]ra.StageSpec{withRoute(st("a", "identity", "x", "y"), ra.RoutePort), st("x", "identity"), st("y", "identity")}, "op identity chooses no port"},
		{many, `stage "sink" has 17 in-links`},
	}
	for _, c := range cases {
		_, err := e.RT.Build(ctxT(t), ra.PipelineSpec{Name: "bad", Stages: c.stages})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.stages, err, c.want)
		}
	}
}
