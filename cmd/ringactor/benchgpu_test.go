package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/internal/gpubench"
)

// TestBenchGPUOverEmulator runs `ringactor bench-gpu` over the emulated
// driver (make test), tiny: the table labels its rows emulated and
// carries the floors, microbenchmarks, variants and phases; -json prints
// the whole report.
func TestBenchGPUOverEmulator(t *testing.T) {
	cudatest.Device(t, 0)
	if !cudatest.Emulated() {
		t.Skip("runs over the emulated driver (make test)")
	}
	code, stdout, stderr := runInProcess(t, "bench-gpu", "-samples", "20", "-messages", "200")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"gpu/round-trip-64B", "floor/mapped-pingpong", "floor/device-pingpong", "micro/st.release.sys/32-stores", "variant/round-trip-64B", "phases:", "emulated"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("bench-gpu printed no %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runInProcess(t, "bench-gpu", "-json", "-samples", "20", "-messages", "200")
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
}
