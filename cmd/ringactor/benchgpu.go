package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ringactor/ringactor/internal/gpubench"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

// benchGPU runs the GPU benchmark: round trip against two baselines (a
// kernel launch per message, and a captured CUDA graph replayed per
// message), hop between kernels and pipeline throughput, the floors and
// microbenchmarks, every loop variant interleaved with the floor, and the
// loop's phases, in one run; over the emulated driver too, every row
// labelled emulated. -json prints the whole report (gpubench.Report).
// -variant-limit bounds each block of an experimental variant.
func benchGPU(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("bench-gpu")
	asJSON := fs.Bool("json", false, "print rows as JSON")
	samples := fs.Int("samples", 20000, "round trips, launches and graph replays to time, each")
	msgs := fs.Int("messages", 2_000_000, "messages through the 3-stage pipeline")
	limit := fs.Duration("variant-limit", 0, "stop and leave out a variant other than the default whose block runs longer (0: no limit)")
	if err := parseFlags(fs, args, out, 0); err != nil {
		return err
	}
	if *samples < 10 || *msgs < 1 {
		return usagef("", "-samples must be at least 10 and -messages at least 1")
	}
	b, err := rkcuda.New(rkcuda.Options{})
	if err != nil {
		return fmt.Errorf("needs a GPU: %w", err)
	}
	defer b.Close()
	if gpubench.LedgerSupported(b) && !*asJSON { // the emulated driver: its cost ledger first (docs/BENCHMARKS.md "ledger")
		if err := gpubench.WriteLedger(ctx, out, b); err != nil {
			return err
		}
	}
	rep, err := gpubench.Measure(ctx, b, gpubench.Options{Samples: *samples, Messages: *msgs, VariantLimit: *limit, Progress: errOut})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.Print(out)
	return nil
}
