package runtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/internal/demo"
	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
)

// The library prints nothing: a runtime made with no Config.Logger (New
// used to print its note on the devices to stderr), a pipeline built, run
// and closed on it, and its Close write nothing on the process's standard
// output or error. The work runs in a child process whose stdout and
// stderr are pipes this test reads. "auto" is the backend: where there is
// no GPU it passes over CUDA, which is when the note said why.
func TestNothingPrintedWithoutLogger(t *testing.T) {
	if rttest.InChild(t) {
		rttest.ChildExit(runQuietGuide(ra.Config{Devices: ra.DeviceOptions{SimDevices: 2}}))
	}
	out, errOut := rttest.ChildOutput(t)
	if len(out) != 0 || len(errOut) != 0 {
		t.Fatalf("a runtime with no logger printed:\nstdout: %q\nstderr: %q", out, errOut)
	}
}

// logFileEnv is where TestLoggerGetsTheNoteAndProtoactor's child writes
// its records.
const logFileEnv = "RINGACTOR_TEST_LOG_FILE"

// With Config.Logger, New's note on the devices is one Info record with
// its parts as attributes, and protoactor's logs arrive there too, marked
// component=protoactor; still nothing is printed.
func TestLoggerGetsTheNoteAndProtoactor(t *testing.T) {
	if rttest.InChild(t) {
		f, err := os.Create(os.Getenv(logFileEnv))
		if err != nil {
			rttest.ChildExit(err)
		}
		err = runQuietGuide(ra.Config{Devices: ra.DeviceOptions{SimDevices: 2}, Logger: slog.New(slog.NewJSONHandler(f, nil))})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		rttest.ChildExit(err)
	}
	file := filepath.Join(t.TempDir(), "log.json")
	out, errOut := rttest.ChildOutput(t, logFileEnv+"="+file)
	if len(out) != 0 || len(errOut) != 0 {
		t.Fatalf("a runtime with a logger printed:\nstdout: %q\nstderr: %q", out, errOut)
	}
	recs := readRecords(t, file)
	var notes, proto int
	for _, r := range recs {
		if r["msg"] == "ringactor devices" {
			notes++
			if r["level"] != "INFO" || r["backend"] == nil || r["gpus"] == nil ||
				!strings.Contains(fmt.Sprint(r["devices"]), "using") || !strings.Contains(fmt.Sprint(r["cpu"]), "the CPU") {
				t.Errorf("the note's record: %v", r)
			}
			if r["backend"] == "sim" && (r["gpus"] != 2.0 || !strings.Contains(fmt.Sprint(r["passed_over"]), "no GPU to run on")) {
				t.Errorf("auto chose 2 simulated devices; the record should say so, and why: %v", r)
			}
		}
		if r["component"] == "protoactor" {
			proto++
		}
	}
	if notes != 1 || proto == 0 {
		t.Fatalf("%d note records (want 1), %d of protoactor (want some), in:\n%v", notes, proto, recs)
	}
}

// The deprecated DeviceOptions.Log still receives the note, as its one
// line, when Config.Logger is nil; with a Logger, the Logger has it.
func TestDeprecatedLogGetsTheNote(t *testing.T) {
	var w, both bytes.Buffer
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: &w}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if note := rt.Registry().Note(); w.String() != note+"\n" || !strings.Contains(note, "using 2 simulated devices") {
		t.Fatalf("Log got %q; want the note %q", w.String(), note)
	}
	var records bytes.Buffer
	rt2, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: &both}, Logger: slog.New(slog.NewTextHandler(&records, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	if both.Len() != 0 || !strings.Contains(records.String(), `msg="ringactor devices" backend=sim gpus=2`) {
		t.Fatalf("with a Logger too: Log got %q, the Logger %q", both.String(), records.String())
	}
}

// runQuietGuide makes a runtime of cfg, runs the guide's pipeline on its
// device 0 (a simulated device or a GPU, whichever "auto" took), closes
// both, and says what went wrong.
func runQuietGuide(cfg ra.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := ra.New(cfg)
	if err != nil {
		return err
	}
	results := make(chan ra.Result, 10)
	spec := demo.Guide("quiet", [3]int{0, 0, 0})
	spec.Deliver = ra.Sink{Chan: results}
	p, err := rt.Build(ctx, spec)
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	for i := range 10 {
		if err := p.Send(ctx, ra.Data{Floats: []float32{float32(i)}}); err != nil {
			return err
		}
	}
	if err := p.Close(ctx, true); err != nil {
		return err
	}
	if len(results) != 10 {
		return fmt.Errorf("%d results of 10 (%+v)", len(results), p.Stats())
	}
	return rt.Close()
}

// readRecords reads a JSON handler's records, one a line.
func readRecords(t *testing.T, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	for s := bufio.NewScanner(bytes.NewReader(data)); s.Scan(); {
		var r map[string]any
		if err := json.Unmarshal(s.Bytes(), &r); err != nil {
			t.Fatalf("record %q: %v", s.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}
