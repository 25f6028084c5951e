package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/internal/rttest"
)

// The example runs end to end on the backend under test (sim, or the
// emulated driver under make test), verifies every result, and shows no
// phase-2 result before the host arrived at the barrier.
func TestPhasesExampleRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var b strings.Builder
	backend := rttest.Backend()
	if backend == rttest.CPU {
		backend = rttest.Sim // the CPU device is one: the example wants three
	}
	if err := run(ctx, options{backend: backend, devices: []int{0, 1, 2}, messages: 300}, &b); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	out := b.String()
	for _, want := range []string{"phases on ", "verified 1800 results: 0 mismatches; 0 phase-2 results before the host arrived", "phases0/scale@"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	t.Log("\n" + out)
	if err := run(ctx, options{backend: backend, devices: []int{0}, messages: 0}, &b); err == nil {
		t.Fatal("zero messages accepted")
	}
}
