package runtime_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/ext"
)

// ordered is a Deliver sink that keeps every result in arrival order.
type ordered struct {
	mu  sync.Mutex
	got []ra.Result
}

func (o *ordered) sink() ra.Sink {
	return ra.Sink{Func: func(r ra.Result) {
		o.mu.Lock()
		o.got = append(o.got, ra.Result{ID: r.ID, Stage: r.Stage, Floats: append([]float32(nil), r.Floats...)})
		o.mu.Unlock()
	}}
}

// sendSeq sends n messages {seq, seq mod keys} in batches of 100, seq
// counting from 0 (ids from 1).
func sendSeq(t *testing.T, p *ra.Pipeline, n, keys int) {
	t.Helper()
	for b := 0; b < n; b += 100 {
		batch := make([]ra.Data, 0, 100)
		for i := b; i < min(n, b+100); i++ {
			batch = append(batch, ra.Data{ID: uint64(i + 1), Floats: []float32{float32(i), float32(i % keys)}})
		}
		if k, err := p.SendBatch(ctxT(t), batch); err != nil || k != len(batch) {
			t.Fatal(k, err)
		}
	}
}

// laneStats is the stats of stage name's lanes, by lane, from a closed
// pipeline's stats; it fails unless there are exactly lanes of them.
func laneStats(t *testing.T, st ra.PipelineStats, name string, lanes int) []ra.StageStats {
	t.Helper()
	var out []ra.StageStats
	for _, s := range st.Stages {
		if s.Stage == name {
			t.Fatalf("stage %q ran as one kernel, want %d lanes", name, lanes)
		}
		if strings.HasPrefix(s.Stage, name+"#") {
			if s.Stage != fmt.Sprintf("%s#%d", name, len(out)) {
				t.Fatalf("lane %d of %q is %q", len(out), name, s.Stage)
			}
			out = append(out, s)
		}
	}
	if len(out) != lanes {
		t.Fatalf("stage %q ran %d lanes, want %d", name, len(out), lanes)
	}
	return out
}

// A 3-stage pipeline whose middle stages run 4 lanes each (1 → 4 → 4 →
// 1): a kernel and actor per lane, every message delivered once with
// its stages' work done, the stage before spreading round robin (each
// lane processed exactly a quarter), the laned stages joined lane to
// lane, the last one fanning in; Describe and the metrics show each
// lane, the account conserves, and Close gives back every link and
// every byte of device memory.
func TestLanesPipeline(t *testing.T) {
	e := deviceEnv(t)
	held := func() (b []uint64) {
		for _, d := range e.RT.Metrics().Devices {
			b = append(b, d.RuntimeBytes)
		}
		return b
	}
	base, links, pids := fmt.Sprint(held()), ext.Of(e.RT).LiveLinks(), ra.StagePIDs(e.RT)
	var c collect
	p := buildStarted(t, e.RT, ra.PipelineSpec{Name: "lanes", Deliver: c.sink(), Stages: []ra.StageSpec{
		{Name: "in", Op: "identity", Device: testDevice(0)},
		{Name: "a", Op: "offset", Params: []float32{1}, Lanes: 4, Device: testDevice(1), Capacity: 64},
		{Name: "b", Op: "offset", Params: []float32{2}, Lanes: 4, Device: testDevice(2), Capacity: 64},
		{Name: "out", Op: "identity", Device: testDevice(0)},
	}})
	if got := ra.StagePIDs(e.RT) - pids; got != 10 {
		t.Fatalf("%d stage actors, want 10 (a kernel and actor per lane)", got)
	}
	n := 4000
	if onCUDA() { // the emulated driver: each message costs more
		n = 800
	}
	sendSeq(t, p, n, 7)
	if err := p.Idle(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// Describe and the metrics show every lane, with what it processed
	// (a kernel counts a batch a moment after publishing it: wait for it).
	ctx, desc := ctxT(t), p.Describe()
	for _, name := range []string{"a", "b"} {
		for l := range 4 {
			lane := fmt.Sprintf("%s#%d", name, l)
			if !strings.Contains(desc, lane) {
				t.Fatalf("Describe shows no lane %s:\n%s", lane, desc)
			}
			for got := uint64(0); got != uint64(n/4); time.Sleep(time.Millisecond) {
				for _, m := range e.RT.Metrics().Stages {
					if m.Pipeline == "lanes" && m.Stage == lane {
						got = m.Processed
					}
				}
				if ctx.Err() != nil {
					t.Fatalf("lane %s processed %d in the metrics, want %d", lane, got, n/4)
				}
			}
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	conservedGraph(t, st)
	if st.Sent != uint64(n) || st.Delivered != uint64(n) {
		t.Fatalf("sent %d, delivered %d, want %d", st.Sent, st.Delivered, n)
	}
	for _, name := range []string{"a", "b"} {
		for l, s := range laneStats(t, st, name, 4) {
			if s.Processed != uint64(n/4) {
				t.Fatalf("lane %d of %q processed %d, want %d (round robin)", l, name, s.Processed, n/4)
			}
		}
	}
	if len(c.got) != n {
		t.Fatalf("%d results, want %d", len(c.got), n)
	}
	for id, rs := range c.got {
		if len(rs) != 1 || rs[0].Stage != "out" || rs[0].Floats[0] != float32(id-1)+3 {
			t.Fatalf("message %d: %+v", id, rs)
		}
	}
	if got := fmt.Sprint(held()); got != base {
		t.Fatalf("after Close the runtime holds %s bytes per device, %s before", got, base)
	}
	if got := ext.Of(e.RT).LiveLinks(); got != links {
		t.Fatalf("after Close: %d live links, %d before", got, links)
	}
}

// Round robin keeps order within a lane: the spreader (the host for a
// first stage with lanes, else the stage before) deals message k to lane
// k mod 4, and each lane, an exit here, delivers exactly its messages in
// send order.
func TestLanesRoundRobinOrder(t *testing.T) {
	for _, first := range []bool{true, false} {
		t.Run(fmt.Sprintf("host=%t", first), func(t *testing.T) {
			e := deviceEnv(t)
			var o ordered
			stages := []ra.StageSpec{{Name: "deal", Op: "identity", Device: testDevice(0)}, {Name: "w", Op: "identity", Lanes: 4, Device: testDevice(1), Capacity: 64}}
			if first {
				stages = stages[1:]
			}
			p := buildStarted(t, e.RT, ra.PipelineSpec{Name: "rr", Deliver: o.sink(), Stages: stages})
			n := 2000
			if onCUDA() {
				n = 400
			}
			sendSeq(t, p, n, 1)
			if err := p.Close(ctxT(t), true); err != nil {
				t.Fatal(err)
			}
			conservedGraph(t, p.Stats())
			next := map[string]int{}
			for l := range 4 {
				next[fmt.Sprintf("w#%d", l)] = l
			}
			for _, r := range o.got {
				k, ok := next[r.Stage]
				if !ok || int(r.Floats[0]) != k {
					t.Fatalf("lane %q delivered message %v, want %d next (lanes deal k to k mod 4, in order)", r.Stage, r.Floats[0], k)
				}
				next[r.Stage] = k + 4
			}
			for s, k := range next {
				if k < n {
					t.Fatalf("lane %q stopped at %d of %d", s, k, n)
				}
			}
		})
	}
}

// Keyed lanes: one key's messages all go through one lane, in send
// order, and the keys spread over every lane, whether the host (a first
// stage) or the stage before picks the lane.
func TestLanesKeyed(t *testing.T) {
	for _, first := range []bool{true, false} {
		t.Run(fmt.Sprintf("host=%t", first), func(t *testing.T) {
			e := deviceEnv(t)
			var o ordered
			stages := []ra.StageSpec{{Name: "in", Op: "identity", Device: testDevice(0)},
				{Name: "k", Op: "identity", Lanes: 4, KeyedLanes: true, LaneKey: 4, Device: testDevice(1), Capacity: 64}}
			if first {
				stages = stages[1:]
			}
			p := buildStarted(t, e.RT, ra.PipelineSpec{Name: "keyed", Deliver: o.sink(), Stages: stages})
			n, keys := 3000, 32
			if onCUDA() {
				n = 600
			}
			sendSeq(t, p, n, keys)
			if err := p.Close(ctxT(t), true); err != nil {
				t.Fatal(err)
			}
			st := p.Stats()
			conservedGraph(t, st)
			for l, s := range laneStats(t, st, "k", 4) {
				if s.Processed == 0 {
					t.Fatalf("lane %d took none of %d keys", l, keys)
				}
			}
			lane, last := map[float32]string{}, map[float32]float32{}
			for _, r := range o.got {
				key, seq := r.Floats[1], r.Floats[0]
				if l, ok := lane[key]; ok && l != r.Stage {
					t.Fatalf("key %v went through %s and %s", key, l, r.Stage)
				}
				if l, ok := last[key]; ok && seq <= l {
					t.Fatalf("key %v: message %v after %v", key, seq, l)
				}
				lane[key], last[key] = r.Stage, seq
			}
			if len(o.got) != n || len(lane) != keys {
				t.Fatalf("%d results of %d keys, want %d of %d", len(o.got), len(lane), n, keys)
			}
		})
	}
}

// A message without its key at LaneKey is dead-lettered "route error",
// whether the host spreads the keyed lanes (it sends no further: the
// count stops before the first such message, and the error names
// LaneKey) or the stage before them does (the device's RouteKey); every
// other message goes through.
func TestLanesKeylessIsADeadLetter(t *testing.T) {
	for _, first := range []bool{true, false} {
		t.Run(fmt.Sprintf("host=%t", first), func(t *testing.T) {
			e := deviceEnv(t)
			a := newAccount()
			stages := []ra.StageSpec{{Name: "in", Op: "identity", Device: testDevice(0)},
				{Name: "k", Op: "identity", Lanes: 4, KeyedLanes: true, LaneKey: 4, Device: testDevice(1)}}
			if first {
				stages = stages[1:]
			}
			p := buildStarted(t, e.RT, ra.PipelineSpec{Name: "keyless", Stages: stages, Deliver: ra.Sink{Func: a.result}, OnDeadLetter: a.deadLetter})
			const n = 40
			batch := make([]ra.Data, 0, n)
			for i := 1; i <= n; i++ {
				f := []float32{float32(i), float32(i % 4)}
				if i%5 == 0 {
					f = f[:1] // the key would be the second float
				}
				batch = append(batch, ra.Data{ID: uint64(i), Floats: f})
			}
			k, err := p.SendBatch(ctxT(t), batch)
			if first && (k != 4 || err == nil || !strings.Contains(err.Error(), "LaneKey")) {
				t.Fatalf("SendBatch: %d, %v; want 4 taken and an error naming LaneKey", k, err)
			}
			if !first && (k != n || err != nil) {
				t.Fatalf("SendBatch: %d, %v; want all %d taken", k, err, n)
			}
			if err := p.Close(ctxT(t), true); err != nil {
				t.Fatal(err)
			}
			if reasons := a.check(t, n, p.Stats()); reasons[ra.ReasonRouteError.String()] != n/5 || len(reasons) != 1 {
				t.Fatalf("dead letters %v; want %d route errors and nothing else", reasons, n/5)
			}
			for id := range a.dead {
				if id%5 != 0 {
					t.Fatalf("message %d, which has a key, was dead-lettered", id)
				}
			}
		})
	}
}

// Lanes that cannot run are refused at Build, naming the fix.
func TestLanesRefused(t *testing.T) {
	e := newEnv(t, "")
	st := func(name string, lanes int, to ...string) ra.StageSpec {
		return ra.StageSpec{Name: name, Op: "identity", Lanes: lanes, To: to}
	}
	keyed := st("b", 2)
	keyed.KeyedLanes = true
	for _, c := range []struct {
		stages []ra.StageSpec
		want   string
	}{
		{[]ra.StageSpec{{Name: "s", Op: "sum", Stateful: true, Lanes: 2}}, `stage "s" is stateful (op sum keeps state) and runs 2 lanes`},
		{[]ra.StageSpec{{Name: "s", Op: "sum", Lanes: 2}}, `stage "s" is stateful (op sum keeps state) and runs 2 lanes`},
		{[]ra.StageSpec{st("a", 9)}, `stage "a" runs 9 lanes; a stage runs 1 to 8`},
		{[]ra.StageSpec{st("a", -1)}, `stage "a" runs -1 lanes`},
		{[]ra.StageSpec{st("a", 4), st("b", 2)}, `stage "a" runs 4 lanes and stage "b", which it feeds, 2: give both the same count`},
		{[]ra.StageSpec{st("a", 1, "b", "c"), st("b", 2), st("c", 1)}, `sends to that stage alone`},
		{[]ra.StageSpec{st("a", 2), keyed}, `set KeyedLanes alike`},
		{[]ra.StageSpec{st("a", 2), st("a#1", 1)}, `two stages are named "a#1"`},
	} {
		p, err := e.RT.Build(ctxT(t), ra.PipelineSpec{Name: "bad", Stages: c.stages})
		if err == nil {
			p.Close(ctxT(t), false)
		}
		if !errors.Is(err, ra.ErrBadPipeline) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%v: got %v, want ErrBadPipeline with %q", c.stages, err, c.want)
		}
	}
}
