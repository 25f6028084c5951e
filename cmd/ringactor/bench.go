package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/ringactor/ringactor/internal/bench"
	"github.com/ringactor/ringactor/internal/gpubench"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
	ra "github.com/ringactor/ringactor/runtime"
)

// benchCmd runs the benchmark suite: one table, or JSON rows with -json.
// Progress lines, with the time left, go to errOut, so -json output
// stays clean.
func benchCmd(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("bench")
	asJSON := fs.Bool("json", false, "print a JSON array of rows: name, backend, msgs_per_sec, p50_ns, p99_ns, baseline, ratio")
	quick := fs.Bool("quick", false, "fewer rounds of fewer messages: the whole suite within a minute on 2 cores")
	only := fs.String("only", "", "run only the comparisons with a row whose name starts with this (e.g. link/, pipeline/, copy/, gpu/)")
	scale := fs.Float64("scale", 1, "multiply every message count by this")
	quiet := fs.Bool("quiet", false, "no progress lines")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	backend := fs.String("backend", "auto", "the devices of the p2p/ rows: auto (the GPUs, else simulated devices), sim or cuda")
	if err := parseFlags(fs, args, out, 0); err != nil {
		return err
	}
	if !(*scale > 0 && *scale <= 1000) {
		return usagef("", "-scale %g: want a number above 0 and at most 1000", *scale)
	}
	if err := checkBackend(*backend); err != nil {
		return err
	}
	progress := errOut
	if *quiet {
		progress = io.Discard
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	rows, err := bench.Run(ctx, bench.Options{Quick: *quick, Only: *only, Scale: *scale, Progress: progress, GPU: gpuRows,
		Devices: ra.DeviceOptions{Backend: *backend}})
	if err != nil {
		return err
	}
	return printRows(out, rows, *asJSON)
}

// printRows writes rows as the table, or as one JSON document with asJSON
// (nothing else reaches out then: progress goes to errOut).
func printRows(out io.Writer, rows []bench.Row, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	bench.Print(out, rows)
	return nil
}

// gpuRows measures the GPU rows on GPU 0, or says why there are none
// (which fails the run instead under RINGACTOR_REQUIRE_GPU=1).
func gpuRows(ctx context.Context, quick bool, progress io.Writer) ([]bench.Row, error) {
	b, err := rkcuda.New(rkcuda.Options{})
	if err != nil {
		if os.Getenv("RINGACTOR_REQUIRE_GPU") == "1" {
			return nil, fmt.Errorf("RINGACTOR_REQUIRE_GPU=1 but the CUDA backend cannot start: %w", err)
		}
		return nil, fmt.Errorf("%w: %v", bench.ErrNoGPU, err)
	}
	defer b.Close()
	o := gpubench.Options{Progress: progress}
	if quick {
		o.Samples, o.Messages = 2000, 200_000
	}
	return gpubench.Run(ctx, b, o)
}
