package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/internal/otelsetup"
	"github.com/ringactor/ringactor/internal/rttest"
)

// The example runs end to end on a small load and prints every run, every
// device, and the ratios.
func TestStealingExampleRuns(t *testing.T) {
	// The demo's devices are simulated GPUs of unequal speed, and it
	// steals: on another backend it says why it cannot run.
	rttest.Need(t, rttest.Steal)
	rttest.Need(t, rttest.SimCost)
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, options{messages: 2000, cost: 20 * time.Microsecond, slow: 4, devices: 4}, &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"static+stealing vs static:", "dynamic vs static:", "stolen from", "msg/s"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if err := run(ctx, options{messages: 0, cost: time.Microsecond, slow: 4, devices: 4}, &b); err == nil {
		t.Fatal("zero messages accepted")
	}
	// -metrics stdout exports the group's imbalance, with its unit.
	b.Reset()
	tel := &otelsetup.Flags{Trace: "none", Metrics: "stdout", Service: "stealing"}
	if err := run(ctx, options{messages: 500, cost: 20 * time.Microsecond, slow: 4, devices: 2, tel: tel}, &b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, `"Name":"ringactor.group.imbalance","Description":"most work any instance of the group did over the mean (1 is even)","Unit":"1"`) {
		t.Fatalf("-metrics stdout did not export the group's imbalance:\n%s", out)
	}
}
