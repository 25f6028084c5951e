package gpubench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
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
	// The 3-stage pipeline's kernels ran with their timers on: each
	// counted every message.
	var stages []string
	for _, p := range rep.Phases {
		if p.Row != rowPipeline {
			continue
		}
		stages = append(stages, p.Stage)
		if p.Messages != 300 || p.Batches == 0 || p.Batches > p.Messages || p.StageIn <= 0 || p.Publish <= 0 {
			t.Errorf("pipeline stage %s: phases %+v, want its 300 messages timed", p.Stage, p)
		}
	}
	if strings.Join(stages, " ") != "x2 sqrt plus1" {
		t.Errorf("pipeline phases for stages %q, want x2 sqrt plus1", stages)
	}
	// The report prints and encodes, every part of it there.
	var out strings.Builder
	rep.Print(&out)
	for _, want := range []string{rowRoundTrip, rowFloorMapped, rowFloorDevice, "micro/nanosleep/1000ns", "phases:", "emulated CUDA driver"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the printed report lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Error(err)
	}
	t.Log(out.String())
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
	for _, v := range variants {
		for _, c := range []struct{ name, floor string }{{"variant/round-trip-64B", rowFloorMapped}, {"variant/hop-device-link", rowFloorDevice}} {
			var got *Stat
			for i := range rep.Stats {
				if rep.Stats[i].Name == c.name && rep.Stats[i].Variant == v.name {
					got = &rep.Stats[i]
				}
			}
			if got == nil {
				t.Errorf("no row %s for variant %s", c.name, v.name)
				continue
			}
			if got.N <= 0 || got.Vs != c.floor || got.Ratio <= 0 || got.Emulated != rep.Emulated {
				t.Errorf("%s (%s): %+v, want samples and a ratio to %s", c.name, v.name, *got, c.floor)
			}
		}
		var ph *Phase
		for i := range rep.Phases {
			if rep.Phases[i].Variant == v.name {
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
