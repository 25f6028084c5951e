package runtime_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/ext"
)

// A service rebuilds pipelines for months: build/close cycles under
// unique names in one runtime give back every link (each device's memory
// held by the runtime returns to its baseline after every close, and no
// Build fails for lack of it: over the emulated CUDA backend the cycles
// go well past what its fixed arenas hold without frees), and keep the
// heap flat (a closed stage is remembered in a few bytes, for late sends
// to its PID, not kept whole).
func TestRebuildsUnderUniqueNamesLeakNothing(t *testing.T) {
	e := deviceEnv(t)
	total, mark := 1000, 100
	if onCUDA() {
		total, mark = 200, 50 // past what the arenas hold without frees
	}
	if testing.Short() {
		total, mark = 300, 30
	}
	if *stress { // make stress: the soak
		total, mark = 10000, 1000
	}
	held := func() []uint64 {
		var b []uint64
		for _, d := range e.RT.Metrics().Devices {
			b = append(b, d.RuntimeBytes)
		}
		return b
	}
	heap := func() uint64 {
		goruntime.GC()
		goruntime.GC()
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	ctx := ctxT(t) // one: each ctxT registers a cleanup, which the heap would count
	if *stress {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
	}
	base := held()
	links := ext.Of(e.RT).LiveLinks()
	var atMark uint64
	start := time.Now()
	for i := range total {
		spec := guide(fmt.Sprintf("rebuild-%d", i))
		spec.Stages = spec.Stages[:2]
		p, err := e.RT.Build(ctx, spec)
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.Send(ctx, ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx, true); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
		if st := p.Stats(); st.Delivered != 1 || st.InFlight != 0 {
			t.Fatalf("cycle %d: %+v", i, st)
		}
		if got := held(); fmt.Sprint(got) != fmt.Sprint(base) {
			t.Fatalf("after close %d the runtime holds %v bytes per device, %v before the first build", i, got, base)
		}
		if n := ext.Of(e.RT).LiveLinks(); n != links {
			t.Fatalf("after close %d: %d live links, %d before", i, n, links)
		}
		if i+1 == mark {
			atMark = heap()
		}
	}
	end := heap()
	perName := (int64(end) - int64(atMark)) / int64(total-mark)
	switch {
	case *stress && perName > 2048:
		// What is kept per closed name: a few hundred bytes of ours (for
		// late sends to its PIDs), and protoactor's process registry,
		// whose shard maps each allocate once (bounded).
		t.Fatalf("heap grows by %d bytes a name from %d to %d names (%d KiB, then %d KiB)", perName, mark, total, atMark>>10, end>>10)
	case !*stress && float64(end) > 1.5*float64(atMark):
		t.Fatalf("heap %d KiB after %d names, %d KiB after %d: it grows with every name", end>>10, total, atMark>>10, mark)
	}
	t.Logf("%d build/close cycles in %v; heap %d KiB after %d, %d KiB after %d (%d bytes a name); runtime memory per device back to %v each time",
		total, time.Since(start).Round(time.Millisecond), atMark>>10, mark, end>>10, total, perName, base)
}
