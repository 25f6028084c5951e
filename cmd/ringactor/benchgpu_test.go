package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/internal/gpubench"
)

// TestBenchGPUOverEmulator runs `ringactor bench-gpu -json` over the
// emulated driver (make test), tiny: it prints the whole report, labelled
// emulated, with the floors, microbenchmarks, variants and phases
// (internal/gpubench's TestMeasureOverEmulator checks each, and the table).
func TestBenchGPUOverEmulator(t *testing.T) {
	cudatest.Device(t, 0)
	if !cudatest.Emulated() {
		t.Skip("runs over the emulated driver (make test)")
	}
	code, stdout, stderr := runInProcess(t, "bench-gpu", "-json", "-samples", "10", "-messages", "100")
	if code != exitOK {
		t.Fatalf("-json: exit %d\n%s", code, stderr)
	}
	var rep gpubench.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("-json: %v\n%s", err, stdout)
	}
	if !rep.Emulated || len(rep.Rows) == 0 || len(rep.Stats) == 0 || len(rep.Phases) == 0 {
		t.Errorf("-json: emulated %v, %d rows, %d stats, %d phases", rep.Emulated, len(rep.Rows), len(rep.Stats), len(rep.Phases))
	}
	names := map[string]bool{}
	for _, s := range rep.Stats {
		names[s.Name] = s.N > 0 && s.Emulated
	}
	for _, want := range []string{"floor/mapped-pingpong", "floor/device-pingpong", "micro/st.release.sys/32-stores", "variant/round-trip-64B"} {
		if !names[want] {
			t.Errorf("-json: no row %s with samples, labelled emulated", want)
		}
	}
	// Every variant has its rows or a line saying why it was left out
	// (the backend refused its launch), never silently nothing.
	for _, v := range gpubench.VariantNames() {
		left := ""
		for _, l := range rep.LeftOut {
			if strings.HasPrefix(l, v+": ") {
				left = l
			}
		}
		for _, row := range []string{"variant/round-trip-64B", "variant/hop-device-link", "variant/pipeline-3stage-64B"} {
			found := false
			for _, s := range rep.Stats {
				found = found || (s.Name == row && s.Variant == v && s.N > 0)
			}
			if !found && left == "" {
				t.Errorf("-json: variant %s has no row %s with samples and no left-out line", v, row)
			}
		}
	}
}
