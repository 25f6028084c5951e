package runtime_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/ringactor/ringactor/internal/rttest"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/ext"
)

// dataPaths is every DataPath: indexed or flagged links, the classic
// loop, the warp loop or the warp loop with a pipelined ingress.
var dataPaths = []ra.DataPath{
	{Links: p2pqueue.FormatIndexed, Loop: rk.LoopClassic},
	{Links: p2pqueue.FormatIndexed, Loop: rk.LoopWarp},
	{Links: p2pqueue.FormatFlagged, Loop: rk.LoopClassic},
	{Links: p2pqueue.FormatFlagged, Loop: rk.LoopWarp},
	{Links: p2pqueue.FormatIndexed, Loop: rk.LoopWarpPrefetch},
	{Links: p2pqueue.FormatFlagged, Loop: rk.LoopWarpPrefetch},
}

// The guide's three stages, across devices (peer and staged links on
// sim), under each DataPath: every link is made in its format, every
// kernel launched with its loop (Describe shows both, read back from the
// links and the kernels), and every message arrives intact, the largest
// one the default SlotSize holds included, while one float more is
// dead-lettered "oversize" (a flagged link keeps the message limit). The
// account balances and every link is given back. Small mailboxes make the
// flagged links go round many laps.
func TestDataPathEveryChoice(t *testing.T) {
	var e *env
	if rttest.Has(rttest.SimTopology) {
		e = newEnv(t, "0-1")
	} else {
		e = deviceEnv(t)
	}
	msgs := uint64(3000)
	if onCUDA() {
		msgs = 600 // the emulated driver runs the device loops on the CPU: still 37 laps of each link
	}
	for i, path := range dataPaths {
		t.Run(strings.ReplaceAll(path.String(), " ", "_"), func(t *testing.T) {
			spec := guide(fmt.Sprint("path-", i))
			spec.DataPath = path
			for i := range spec.Stages {
				spec.Stages[i].Capacity = 16
			}
			var mu sync.Mutex
			got := map[uint64][]float32{}
			spec.Deliver.Func = func(r ra.Result) { mu.Lock(); got[r.ID] = r.Floats; mu.Unlock() }
			var dead []ra.DeadLetter
			spec.OnDeadLetter = func(d ra.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }
			live := ext.Of(e.RT).LiveLinks()
			p, err := e.RT.Build(ctxT(t), spec)
			if err != nil {
				t.Fatal(err)
			}
			checkDescribed(t, p.Describe(), path)
			if err := p.Start(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			const most = (ra.DefaultSlotSize - p2pqueue.SlotHeaderSize) / 4
			in := func(id uint64) []float32 {
				v := make([]float32, 1+int(id)%most) // 1 to most floats: every message length
				for j := range v {
					v[j] = float32(id) + float32(j)/8
				}
				return v
			}
			batch := make([]ra.Data, 0, 50)
			for id := uint64(1); id <= msgs; id++ {
				batch = append(batch, ra.Data{ID: id, Floats: in(id)})
				if len(batch) == cap(batch) {
					if n, err := p.SendBatch(ctxT(t), batch); err != nil || n != len(batch) {
						t.Fatal(n, err)
					}
					batch = batch[:0]
				}
			}
			if err := p.Send(ctxT(t), ra.Data{ID: msgs + 1, Floats: make([]float32, most)}); err != nil {
				t.Fatalf("a message of %d floats, the most a %d-byte slot holds: %v", most, ra.DefaultSlotSize, err)
			}
			if err := p.Send(ctxT(t), ra.Data{ID: msgs + 2, Floats: make([]float32, most+1)}); !errors.Is(err, p2pqueue.ErrTooLarge) {
				t.Fatalf("a message of %d floats, one more than a %d-byte slot holds: %v, want p2pqueue.ErrTooLarge", most+1, ra.DefaultSlotSize, err)
			}
			if err := p.Close(ctxT(t), true); err != nil {
				t.Fatal(err)
			}
			if uint64(len(got)) != msgs+1 || len(dead) != 1 || dead[0].ID != msgs+2 || dead[0].Reason != ra.ReasonOversize {
				t.Fatalf("%d results for %d messages; dead letters %v, want only message %d, oversize", len(got), msgs+1, dead, msgs+2)
			}
			for id := uint64(1); id <= msgs; id++ {
				x, v := in(id), got[id]
				if len(v) != len(x) {
					t.Fatalf("message %d: %d floats back, sent %d", id, len(v), len(x))
				}
				for j := range x {
					if w := want(x[j]); v[j] != w && (v[j]-w > 1e-5*w || w-v[j] > 1e-5*w) {
						t.Fatalf("message %d element %d: %g, want %g", id, j, v[j], w)
					}
				}
			}
			if v := got[msgs+1]; len(v) != most || v[0] != want(0) || v[most-1] != want(0) {
				t.Fatalf("the largest message came back as %v", v)
			}
			st := p.Stats()
			if st.Sent != msgs+2 || st.Delivered != msgs+1 || st.DeadLettered != 1 || st.InFlight != 0 {
				t.Fatalf("account %+v, want sent %d = delivered %d + dead-lettered 1", st, msgs+2, msgs+1)
			}
			for _, s := range st.Stages {
				if s.Processed+s.Dropped != msgs+1 {
					t.Errorf("stage %s: processed %d + dropped %d, want %d", s.Stage, s.Processed, s.Dropped, msgs+1)
				}
			}
			if n := ext.Of(e.RT).LiveLinks(); n != live {
				t.Errorf("%d live links after Close, want %d", n, live)
			}
		})
	}
}

// checkDescribed checks that Describe d shows every link in path's format
// (a flagged link with twice the default slot size) and every stage's
// kernel with path's loop: it reads them from the links and the kernels,
// so it fails when the pipeline's DataPath is not used.
func checkDescribed(t *testing.T, d string, path ra.DataPath) {
	t.Helper()
	links, stages := 0, 0
	for _, line := range strings.Split(d, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "ingress:"), strings.HasPrefix(line, "from "), strings.HasPrefix(line, "egress:"):
			links++
			flagged := strings.HasSuffix(line, fmt.Sprintf("of %d B, flagged", 2*ra.DefaultSlotSize))
			if flagged != (path.Links == p2pqueue.FormatFlagged) {
				t.Errorf("link %q, want %s links:\n%s", line, path.Links, d)
			}
		case strings.Contains(line, " op "):
			stages++
			want := map[rk.LoopVariant]string{rk.LoopWarp: ", warp loop", rk.LoopWarpPrefetch: ", warp-prefetch loop"}[path.Loop]
			if shown := strings.Contains(line, " loop"); shown != (want != "") || want != "" && !strings.Contains(line, want) {
				t.Errorf("stage %q, want %s:\n%s", line, path, d)
			}
		}
	}
	if links != 6 || stages != 3 {
		t.Fatalf("describe shows %d links and %d stages, want 6 and 3:\n%s", links, stages, d)
	}
}

// Build refuses a DataPath it does not know, and flagged links too big
// for a slot, naming the fix, before it makes anything.
func TestDataPathRefused(t *testing.T) {
	e := deviceEnv(t)
	live := ext.Of(e.RT).LiveLinks()
	for _, c := range []struct {
		path     ra.DataPath
		slot     int
		sentinel error
		says     string
	}{
		{ra.DataPath{Links: 7}, 0, p2pqueue.ErrBadFormat, "use p2pqueue.FormatIndexed (the default) or FormatFlagged"},
		{ra.DataPath{Loop: 9}, 0, ra.ErrBadPipeline, "use ringkernel.LoopClassic (the default), LoopWarp or LoopWarpPrefetch"},
		{ra.DataPath{Links: p2pqueue.FormatFlagged}, p2pqueue.MaxSlotSize, p2pqueue.ErrBadSlotSize,
			fmt.Sprintf("use a SlotSize of at most %d, or indexed links", p2pqueue.MaxSlotSize/2)},
	} {
		spec := guide("bad-path")
		spec.DataPath = c.path
		spec.Stages[1].SlotSize = c.slot
		_, err := e.RT.Build(ctxT(t), spec)
		if !errors.Is(err, ra.ErrBadPipeline) || !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Build with DataPath %+v, SlotSize %d: %v; want ErrBadPipeline and %v saying %q", c.path, c.slot, err, c.sentinel, c.says)
		}
	}
	if n := ext.Of(e.RT).LiveLinks(); n != live {
		t.Errorf("%d live links after refused builds, want %d", n, live)
	}
}

// A graph is a pipeline: its DataPath reaches every link of it too, the
// links of a fan-out to two exits included, and every copy arrives.
func TestDataPathGraph(t *testing.T) {
	e := deviceEnv(t)
	path := ra.DataPath{Links: p2pqueue.FormatFlagged, Loop: rk.LoopWarp}
	spec := ra.PipelineSpec{Name: "path-graph", DataPath: path, Stages: []ra.StageSpec{
		{Name: "src", Op: "identity", Route: ra.RouteAll, To: []string{"root", "inc"}, Device: testDevice(0), Capacity: 16},
		{Name: "root", Op: "sqrt", Device: testDevice(1), Capacity: 16},
		{Name: "inc", Op: "offset", Params: []float32{1}, Device: testDevice(2), Capacity: 16},
	}}
	var mu sync.Mutex
	got := map[string]int{}
	spec.Deliver.Func = func(r ra.Result) {
		mu.Lock()
		defer mu.Unlock()
		x := float32(r.ID)
		if w := map[string]float32{"root": float32(math.Sqrt(float64(x))), "inc": x + 1}[r.Stage]; len(r.Floats) != 1 || r.Floats[0] != w {
			t.Errorf("message %d from %s: %v, want [%g]", r.ID, r.Stage, r.Floats, w)
		}
		got[r.Stage]++
	}
	live := ext.Of(e.RT).LiveLinks()
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Describe()
	if n, m := strings.Count(d, "B, flagged\n"), strings.Count(d, ", warp loop\n"); n != 3+2+2 || m != 3 {
		t.Fatalf("describe shows %d flagged links and %d warp loops, want 7 and 3:\n%s", n, m, d)
	}
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	const msgs = 500
	for id := uint64(1); id <= msgs; id++ {
		if err := p.Send(ctxT(t), ra.Data{ID: id, Floats: []float32{float32(id)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); got["root"] != msgs || got["inc"] != msgs || st.Delivered != 2*msgs || st.Copied != msgs || st.InFlight != 0 {
		t.Fatalf("results %v, account %+v; want %d from each exit", got, st, msgs)
	}
	if n := ext.Of(e.RT).LiveLinks(); n != live {
		t.Errorf("%d live links after Close, want %d", n, live)
	}
}
