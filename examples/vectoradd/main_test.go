package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/internal/rttest"
)

func TestMain(m *testing.M) { rttest.Main(m) }

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

// The example adds two vectors over three devices under both partitions,
// on the backend under test (vadd's Go side on sim, its CUDA side over
// the emulated driver): every element is checked (run fails on a
// mismatch), the shares add up to n, and it prints them and "0
// mismatches".
func TestVectorAddExampleRuns(t *testing.T) {
	b := backend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n, chunk = 100_003, 4000
	var out strings.Builder
	ocs, err := run(ctx, options{backend: b, n: n, devices: 3, partition: "both", chunk: chunk, seed: 7}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"vectoradd on " + b + ": c = a + b, 100003 floats over devices [0 1 2]",
		"block: one contiguous range a device", "block: 100003 elements in ", "cyclic: chunks of 4000 elements dealt round-robin",
		"cyclic: 100003 elements in ", "device  elements  share  chunks", ", 0 mismatches"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	if len(ocs) != 2 || ocs[0].partition != "block" || ocs[1].partition != "cyclic" {
		t.Fatalf("outcomes %+v, want block then cyclic", ocs)
	}
	wantBlock := []int{33_335, 33_334, 33_334}
	wantChunks := []int{9, 9, 8} // 26 chunks: 25 of 4000 and one of 3
	for _, oc := range ocs {
		total := 0
		for i, s := range oc.shares {
			total += s.elements
			if s.elapsed <= 0 {
				t.Errorf("%s: device %d has no time", oc.partition, s.device)
			}
			if oc.partition == "block" && (s.elements != wantBlock[i] || s.chunks != 1) {
				t.Errorf("block: device %d holds %d elements in %d chunks, want %d in 1", s.device, s.elements, s.chunks, wantBlock[i])
			}
			if oc.partition == "cyclic" && s.chunks != wantChunks[i] {
				t.Errorf("cyclic: device %d has %d chunks, want %d", s.device, s.chunks, wantChunks[i])
			}
		}
		if total != n || oc.mismatches != 0 {
			t.Errorf("%s: shares add to %d of %d, %d mismatches", oc.partition, total, n, oc.mismatches)
		}
	}
	t.Log("\n" + out.String())
}

// The partitions cover [0, n) once each, and a device's chunks sit end to
// end in its buffers.
func TestPartition(t *testing.T) {
	for _, kind := range []string{"block", "cyclic"} {
		for _, c := range []struct{ n, d, size int }{{10, 3, 4}, {2, 4, 1}, {100, 1, 7}, {16, 4, 4}} {
			chunks, held := partition(kind, c.n, c.d, c.size)
			seen := make([]int, c.n)
			next := make([]int, c.d)
			for _, ch := range chunks {
				if ch.local != next[ch.d] {
					t.Errorf("%s %v: chunk %+v not at the end of device %d's %d", kind, c, ch, ch.d, next[ch.d])
				}
				next[ch.d] += ch.count
				for g := ch.global; g < ch.global+ch.count; g++ {
					seen[g]++
				}
			}
			if fmt.Sprint(next) != fmt.Sprint(held) {
				t.Errorf("%s %v: devices hold %v, chunks fill %v", kind, c, held, next)
			}
			for g, k := range seen {
				if k != 1 {
					t.Fatalf("%s %v: element %d in %d chunks", kind, c, g, k)
				}
			}
		}
	}
}
