package gpubench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

// TestMeasureOverEmulator runs bench-gpu's whole measurement, small, over
// the emulated driver (make test: RINGACTOR_LIBCUDA and
// RINGACTOR_TEST_BACKEND=cuda): every row there, labelled emulated, with
// samples; the floors and microbenchmarks built for the host from
// floors.cu; the loop's phase timers written by the kernel; and no
// driver rule broken. Speed is not asserted: the emulator measures CPUs.
func TestMeasureOverEmulator(t *testing.T) {
	cudatest.Device(t, 0)
	if !cudatest.Emulated() {
		t.Skip("runs over the emulated driver (make test); TestRunOnGPU runs the benchmark on a GPU")
	}
	b, err := rkcuda.New(rkcuda.Options{})
	if err != nil {
		t.Fatalf("cuda backend: %v", err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := cudatest.Violations(t)
	var progress strings.Builder
	rep, err := Measure(ctx, b, Options{Samples: 40, Messages: 300, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	if n := cudatest.Violations(t) - before; n != 0 {
		t.Errorf("%d driver rule(s) broken (the cudaemu: RULE VIOLATION lines above)", n)
	}
	if !rep.Emulated {
		t.Error("the report does not say it ran over the emulated driver")
	}
	checkReport(t, rep)
	// Each variant's 3-stage pipeline ran its kernels with their timers
	// on, in blocks: summed over them, each stage counted every message.
	for _, v := range variants {
		if leftOut(rep, v) != "" {
			continue
		}
		var stages []string
		for _, p := range rep.Phases {
			if p.Row != rowVarPipeline || p.Variant != v.name {
				continue
			}
			stages = append(stages, p.Stage)
			if v.loop == rk.LoopWarp && p.Batches == 0 && p.Messages == 0 {
				continue // the warp loop without phase marks (see checkReport)
			}
			if p.Messages != 300 || p.Batches == 0 || p.Batches > p.Messages || p.StageIn <= 0 || p.Publish <= 0 {
				t.Errorf("variant %s, pipeline stage %s: phases %+v, want its 300 messages timed", v.name, p.Stage, p)
			}
		}
		if strings.Join(stages, " ") != "x2 sqrt plus1" {
			t.Errorf("variant %s: pipeline phases for stages %q, want x2 sqrt plus1", v.name, stages)
		}
	}
	// The report prints and encodes, every part of it there.
	var out strings.Builder
	rep.Print(&out)
	for _, want := range []string{rowRoundTrip, rowFloorMapped, rowFloorDevice, "micro/nanosleep/1000ns", "phases:", "emulated CUDA driver", pipelineNote} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the printed report lacks %q:\n%s", want, out.String())
		}
	}
	for _, l := range rep.LeftOut {
		if !strings.Contains(out.String(), "left out: "+l+"\n") {
			t.Errorf("left out %q, not printed:\n%s", l, out.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Error(err)
	}
	t.Log(out.String())
}

// leftOut is the report's left-out line of variant v, "" if none: the
// variant's name, what it measured when the backend refused it, and the
// backend's reason.
func leftOut(rep *Report, v variant) string {
	for _, l := range rep.LeftOut {
		if strings.HasPrefix(l, v.name+": ") {
			return l
		}
	}
	return ""
}

// checkReport holds a report to its promises: the comparisons of package
// bench's shape (the graph rows present unless left out with a reason),
// every floor, microbenchmark and variant with samples, the variants
// compared with the floors, each variant's phases counted by its loop,
// and every row of an emulated run labelled so.
func checkReport(t *testing.T, rep *Report) {
	t.Helper()
	graphLeft := false
	for _, l := range rep.LeftOut {
		if strings.HasPrefix(l, rowGraph+": ") && len(l) > len(rowGraph)+2 {
			graphLeft = true
		}
	}
	hasGraph := false
	for _, r := range rep.Rows {
		hasGraph = hasGraph || r.Name == rowGraph
		if rep.Emulated && !strings.Contains(r.Note, "emulated") {
			t.Errorf("row %s: note %q, want it labelled emulated", r.Name, r.Note)
		}
	}
	if hasGraph == graphLeft {
		t.Errorf("graph row present %v, left out with a reason %v (%q): want exactly one", hasGraph, graphLeft, rep.LeftOut)
	}
	if !graphLeft {
		checkRows(t, rep.Rows)
	}
	want := []string{rowFloorMapped, rowFloorDevice}
	for _, m := range micros() {
		want = append(want, m.name)
	}
	for _, name := range want {
		s, ok := find(rep.Stats, name)
		if !ok {
			t.Errorf("no row %s", name)
			continue
		}
		if s.N <= 0 || s.P50 <= 0 || s.P50 > s.P90 || s.P90 > s.P99 {
			t.Errorf("%s: n %d, p50 %d, p90 %d, p99 %d", name, s.N, s.P50, s.P90, s.P99)
		}
		if s.Emulated != rep.Emulated {
			t.Errorf("%s: emulated %v in a run that is %v", name, s.Emulated, rep.Emulated)
		}
	}
	for _, m := range micros() {
		if s, _ := find(rep.Stats, m.name); m.vs != "" && (s.Vs != m.vs || s.Ratio <= 0) {
			t.Errorf("%s compared with %q (ratio %g), want %s", m.name, s.Vs, s.Ratio, m.vs)
		}
	}
	// Every variant has its rows, or a line saying why the backend
	// refused it; never silently nothing.
	for _, v := range variants {
		why := leftOut(rep, v)
		if why != "" {
			// The backend's own error, naming what it refused.
			if !strings.Contains(why, "ringkernel/cuda: ") || !strings.Contains(why, rk.ErrUnsupported.Error()) {
				t.Errorf("variant %s left out as %q: want the backend's refusal (ringkernel.ErrUnsupported) and its reason", v.name, why)
			}
			if v == variants[0] {
				t.Errorf("the default variant was left out: %s", why)
			}
			t.Logf("variant %s left out: %s", v.name, why)
		}
		rowsOf := 0
		for _, c := range []struct{ name, floor string }{{rowVarRoundTrip, rowFloorMapped}, {rowVarHop, rowFloorDevice}, {rowVarPipeline, ""}} {
			var got *Stat
			for i := range rep.Stats {
				if rep.Stats[i].Name == c.name && rep.Stats[i].Variant == v.name {
					got = &rep.Stats[i]
				}
			}
			if got == nil {
				if why == "" {
					t.Errorf("no row %s for variant %s, and no line saying why it was left out", c.name, v.name)
				}
				continue
			}
			rowsOf++
			if got.N <= 0 || got.P50 <= 0 || got.P50 > got.P90 || got.P90 > got.P99 || got.Vs != c.floor || (c.floor != "" && got.Ratio <= 0) || got.Emulated != rep.Emulated {
				t.Errorf("%s (%s): %+v, want samples, ordered percentiles and a ratio to %q", c.name, v.name, *got, c.floor)
			}
			if c.name == rowVarPipeline && (got.MsgsPerSec <= 0 || got.Note != pipelineNote) {
				t.Errorf("%s (%s): %+v, want msgs/s and the note", c.name, v.name, *got)
			}
		}
		if why != "" && rowsOf == 3 {
			t.Errorf("variant %s has every row and a left-out line %q", v.name, why)
		}
		if why != "" {
			continue
		}
		var ph *Phase
		for i := range rep.Phases {
			if rep.Phases[i].Variant == v.name && rep.Phases[i].Row == rowVarRoundTrip {
				ph = &rep.Phases[i]
			}
		}
		// Each round trip is one batch of one message; the loop counted
		// them itself (its timers are written only when the pointer is set),
		// the warp loops (ra_warp.cuh) as the block loop does.
		if ph == nil || ph.Batches == 0 || ph.Messages < ph.Batches || ph.Poll <= 0 || ph.StageIn <= 0 || ph.Compute <= 0 || ph.Publish <= 0 {
			t.Errorf("variant %s: phases %+v, want every phase timed over its batches", v.name, ph)
		}
	}
	// The per-message baselines and the round trip's parts have their
	// distributions in the second table (the first has p50 and p99 only).
	for _, name := range []string{rowLaunch, rowRTSend, rowRTStage, rowRTBack} {
		if s, ok := find(rep.Stats, name); !ok || s.N <= 0 || s.P50 > s.P90 || s.P90 > s.P99 {
			t.Errorf("%s in the second table: %+v (found %v), want samples and p50/p90/p99", name, s, ok)
		}
	}
}

// inTurn runs each variant's blocks in turn; a variant the backend
// refuses is left out with its reason and the others go on; the
// default's refusal, or any other error, ends the run.
func TestInTurnLeavesRefusedVariantsOut(t *testing.T) {
	if len(variants) < 3 {
		t.Fatalf("%d variants: this test wants the default and two more", len(variants))
	}
	def, other, refusedAt1 := variants[0], variants[1], variants[2]
	vs := []variant{def, other, refusedAt1}
	var calls, left []string
	leave := func(v variant, what string, err error) {
		left = append(left, fmt.Sprintf("%s: %s: %v", v.name, what, err))
	}
	ctx := context.Background()
	live, err := inTurn(ctx, vs, 3, "hop", 0, leave, func(_ context.Context, v variant, b int) error {
		calls = append(calls, fmt.Sprintf("%s/%d", v.name, b))
		if v == refusedAt1 && b == 1 {
			return fmt.Errorf("ringkernel: launch: %w: no flagged out-links", rk.ErrUnsupported)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{def.name + "/0", other.name + "/0", refusedAt1.name + "/0", def.name + "/1", other.name + "/1", refusedAt1.name + "/1", def.name + "/2", other.name + "/2"}
	if strings.Join(calls, " ") != strings.Join(want, " ") {
		t.Errorf("blocks ran %q, want %q", calls, want)
	}
	if len(live) != 2 || live[0] != def || live[1] != other {
		t.Errorf("variants that ran every block: %v, want %s and %s", live, def.name, other.name)
	}
	wantLeft := refusedAt1.name + ": hop: ringkernel: launch: " + rk.ErrUnsupported.Error() + ": no flagged out-links"
	if len(left) != 1 || left[0] != wantLeft {
		t.Errorf("left out %q, want [%q]", left, wantLeft)
	}
	// The default must run; another error is the run's.
	for _, c := range []struct {
		v   variant
		err error
	}{{def, fmt.Errorf("launch: %w", rk.ErrUnsupported)}, {other, errors.New("the link broke")}} {
		left = nil
		_, err := inTurn(ctx, vs, 2, "pipeline", time.Hour, leave, func(_ context.Context, v variant, _ int) error {
			if v == c.v {
				return c.err
			}
			return nil
		})
		if !errors.Is(err, c.err) || left != nil {
			t.Errorf("%s failing with %v: err %v, left out %q; want the run to fail, nothing left out", c.v.name, c.err, err, left)
		}
	}
	// A block past the limit: another variant's is stopped and left out,
	// the default's is not limited.
	left = nil
	var defaultCtx error
	live, err = inTurn(ctx, vs, 2, "pipeline", time.Millisecond, leave, func(ctx context.Context, v variant, _ int) error {
		switch v {
		case def:
			_, limited := ctx.Deadline()
			if limited {
				defaultCtx = errors.New("the default variant's block has a deadline")
			}
		case other:
			<-ctx.Done() // a hung block: only the limit ends it
			return fmt.Errorf("after 3 messages: %w", ctx.Err())
		}
		return nil
	})
	if err != nil || defaultCtx != nil {
		t.Fatal(err, defaultCtx)
	}
	if len(live) != 2 || live[0] != def || live[1] != refusedAt1 {
		t.Errorf("variants that ran every block: %v, want %s and %s", live, def.name, refusedAt1.name)
	}
	if len(left) != 1 || !strings.HasPrefix(left[0], other.name+": pipeline: did not finish in 1ms") || !strings.Contains(left[0], "deadline exceeded") {
		t.Errorf("left out %q, want %s as not finished", left, other.name)
	}
}

// Phases of one kernel over several blocks add up: counts sum, means are
// over all the batches.
func TestMergePhases(t *testing.T) {
	got := mergePhases([]Phase{
		{Row: "r", Stage: "a", Variant: "loop", Batches: 1, Messages: 2, Poll: 10, StageIn: 20, Compute: 30, Publish: 40},
		{Row: "r", Stage: "b", Variant: "loop", Batches: 5, Messages: 5, Poll: 1},
		{Row: "r", Stage: "a", Variant: "warp", Batches: 2, Messages: 2, Poll: 7},
		{Row: "r", Stage: "a", Variant: "loop", Batches: 3, Messages: 6, Poll: 30, StageIn: 20, Compute: 10, Publish: 0},
		{Row: "r", Stage: "a", Variant: "loop"}, // a block whose loop has no marks
	})
	want := []Phase{
		{Row: "r", Stage: "a", Variant: "loop", Batches: 4, Messages: 8, Poll: 25, StageIn: 20, Compute: 15, Publish: 10},
		{Row: "r", Stage: "b", Variant: "loop", Batches: 5, Messages: 5, Poll: 1},
		{Row: "r", Stage: "a", Variant: "warp", Batches: 2, Messages: 2, Poll: 7},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("merged\n%+v\nwant\n%+v", got, want)
	}
}

// A driver without stream capture has no graph rows: the round trip is
// compared with the launch per message alone.
func TestRowsWithoutGraph(t *testing.T) {
	got := rows(durations(100, 200, 300), durations(400, 500, 600), nil, durations(5, 7, 9), 3e6)
	var names []string
	for _, r := range got {
		names = append(names, r.Name+"/"+r.Baseline)
	}
	want := []string{rowRoundTrip + "/" + rowLaunch, rowLaunch + "/", rowHop + "/", rowPipeline + "/"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("rows %q, want %q", names, want)
	}
	rep := &Report{Rows: got, LeftOut: []string{rowGraph + ": this driver cannot capture a stream into a graph"}}
	var out strings.Builder
	rep.Print(&out)
	if !strings.Contains(out.String(), "left out: "+rowGraph+": this driver cannot capture") {
		t.Errorf("the reason is not printed:\n%s", out.String())
	}
}

func TestStatsAndLabels(t *testing.T) {
	s := stat("x", "loop", durations(100, 200, 300, 400, 500, 600, 700, 800, 900, 1000), true)
	if s.N != 10 || s.P50 != 500 || s.P90 != 900 || s.P99 != 1000 || !s.Emulated || s.Note != emulatedNote {
		t.Errorf("stat: %+v", s)
	}
	f := stat(rowFloorMapped, "", durations(250), false)
	if a := against(s, f); a.Vs != rowFloorMapped || a.Ratio != 2 {
		t.Errorf("against: %+v", a)
	}
	rs := []Row{{Name: "a"}, {Name: "b", Note: "emulated already"}}
	label(rs, false)
	if rs[0].Note != "" {
		t.Errorf("labelled on a GPU: %+v", rs)
	}
	label(rs, true)
	if rs[0].Note != emulatedNote || rs[1].Note != "emulated already" {
		t.Errorf("labels: %+v", rs)
	}
}

// Over a driver without stream capture (its graph entry points missing:
// package cuda's ErrUnsupported) the launch per message is measured alone
// and the graph row is left out with the reason, not failed.
func TestPerMessageWithoutCapture(t *testing.T) {
	cudatest.Device(t, 0)
	if !cudatest.Emulated() {
		t.Skip("runs over the emulated driver (make test)")
	}
	b, err := rkcuda.New(rkcuda.Options{})
	if err != nil {
		t.Fatalf("cuda backend: %v", err)
	}
	defer b.Close()
	w, err := newOneShot(b)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	t.Cleanup(func() { captureGraph = (*oneShot).capture })
	captureGraph = func(*oneShot) (*drv.GraphExec, error) {
		return nil, fmt.Errorf("cuda: cuStreamBeginCapture_v2: the driver lacks it: %w", drv.ErrUnsupported)
	}
	launch, graph, why, err := perMessage(context.Background(), w, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(launch) != 10 || graph != nil || !strings.Contains(why, "cannot capture") || !strings.Contains(why, "lacks") {
		t.Errorf("%d launches, %d graph replays, why %q: want 10, none, and the reason", len(launch), len(graph), why)
	}
}
