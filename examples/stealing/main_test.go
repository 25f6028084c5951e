package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/internal/otelsetup"
	"github.com/ringactor/ringactor/internal/rttest"
)

// backend is the example's -backend for the backend under test: sim, or
// the CUDA backend (a GPU, or the emulated driver).
func backend(t *testing.T) string {
	t.Helper()
	switch b := rttest.Backend(); b {
	case rttest.Sim, rttest.CUDA:
		return b
	default:
		t.Skipf("the example runs on simulated GPUs or CUDA GPUs, not on %s", b)
		return ""
	}
}

// The example runs both workloads end to end on a small load, over the
// backend under test: every run checks every result and the group's
// account (run fails otherwise), and it prints every run, every device and
// the ratios. Stealing runs where the backend steals; there it moves work
// off the slow device. Speed is not asserted: the sleeps make the ratios
// large, but a loaded machine may still squeeze them.
func TestStealingExampleRuns(t *testing.T) {
	b := backend(t)
	steal := rttest.Has(rttest.Steal)
	if !steal {
		t.Logf("the stealing runs are left out: %s", rttest.Why(rttest.Steal))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	// Three devices: the emulated driver's default.
	wls, err := run(ctx, options{backend: b, tasks: "both", messages: 600, cost: 2 * time.Millisecond, slow: 4, devices: 3, seed: 1, noSteal: !steal}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := []string{b + " backend, devices [", "uniform tasks: 2ms a message, device ", "variable tasks: 2ms a message on average: ",
		"stolen from", "msg/s", "uniform: dynamic vs static:", "variable: dynamic vs static:"}
	if steal {
		want = append(want, "uniform: static+stealing vs static:", "variable: static+stealing vs static:")
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Fatalf("output lacks %q:\n%s", w, out.String())
		}
	}
	if len(wls) != 2 || wls[0].name != "uniform" || wls[1].name != "variable" {
		t.Fatalf("workloads %+v, want uniform and variable", wls)
	}
	runs := 2
	if steal {
		runs = 3
	}
	for _, wl := range wls {
		if len(wl.runs) != runs || wl.runs[0].name != "static" {
			t.Fatalf("%s: %d runs, want %d starting with static", wl.name, len(wl.runs), runs)
		}
		// The static split is equal shares whatever the devices' speed.
		for _, in := range wl.runs[0].stats.Instances {
			if in.Assigned != 200 || in.Processed != 200 || in.Stolen != 0 {
				t.Fatalf("%s static: %+v, want 200 each, none stolen", wl.name, wl.runs[0].stats.Instances)
			}
		}
	}
	if steal {
		// Work moved, and every message ended once (run checks the
		// account). From which device depends on who fell behind: on a
		// loaded host the processor-bound "fast" devices may, beside the
		// slow one's sleeps (make flake-load saw device 1 robbed, not 2).
		r := wls[0].runs[1]
		var stolen uint64
		for _, in := range r.stats.Instances {
			stolen += in.Stolen
		}
		if r.name != "static+stealing" || stolen == 0 || r.stats.Steals == 0 {
			t.Fatalf("uniform static+stealing: nothing stolen: %+v", r.stats)
		}
		if r.stats.Instances[2].Stolen == 0 {
			t.Logf("nothing stolen from the slow device 2 this time (a loaded host): %+v", r.stats.Instances)
		}
	}
	t.Logf("\n%s", out.String())

	for _, bad := range []options{
		{backend: b, tasks: "both", messages: 0, cost: time.Millisecond, slow: 4, devices: 3},
		{backend: b, tasks: "some", messages: 10, cost: time.Millisecond, slow: 4, devices: 3},
		{backend: b, tasks: "uniform", messages: 10, cost: time.Millisecond, slow: 4, devices: 5},
	} {
		if _, err := run(ctx, bad, &out); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// -metrics stdout exports the group's imbalance, with its unit.
func TestStealingExampleMetrics(t *testing.T) {
	b := backend(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	tel := &otelsetup.Flags{Trace: "none", Metrics: "stdout", Service: "stealing"}
	if _, err := run(ctx, options{backend: b, tasks: "uniform", messages: 100, cost: time.Millisecond, slow: 2, devices: 2, tel: tel, noSteal: true}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"Name":"ringactor.group.imbalance","Description":"most work any instance of the group did over the mean (1 is even)","Unit":"1"`) {
		t.Fatalf("-metrics stdout did not export the group's imbalance:\n%s", out.String())
	}
}
