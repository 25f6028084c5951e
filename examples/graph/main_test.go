package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/internal/rttest"
)

// The graph example end to end on a small load, on the backend under test
// (simulated devices, or the emulated driver under
// RINGACTOR_TEST_BACKEND=cuda): every result verified, the account and
// the latency table printed.
func TestGraphExample(t *testing.T) {
	backend := "sim" // the example's devices: simulated GPUs and the CPU, or the GPUs
	if rttest.Backend() == rttest.CUDA {
		cudatest.Device(t, 0)
		backend = "cuda"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut strings.Builder
	if err := run(ctx, []string{"-backend", backend, "-messages", "3000", "-sample", "0.2", "-quiet"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"verified 6000 results against the Go reference: 0 mismatches", "60 requests answered and checked",
		"sent 3001 + copied 3000 = delivered 6000 + dead-lettered 1 + in flight 0", "service p99", "counter", "wrong type"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, bad := range [][]string{{"-messages", "0"}, {"-sample", "2"}, {"-backend", "opencl"}, {"-metrics", "graphite"}} {
		if err := run(ctx, bad, &out, &errOut); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
