package devreg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	drv "github.com/ringactor/ringactor/cuda"
	rk "github.com/ringactor/ringactor/ringkernel"
	_ "github.com/ringactor/ringactor/ringkernel/cuda" // registers the cuda kind, stubbed below
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// Backend selection with the CUDA kind's opener stubbed: cuda.LoadDriver
// loads once per process, so these tests never call it (the subprocess
// test in runtime/devices_test.go runs the real one).

// kindNamed is the registered kind of that name.
func kindNamed(t *testing.T, name string) rk.Kind {
	for _, k := range rk.Kinds() {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("no backend kind %q registered", name)
	return rk.Kind{}
}

// noDriverKind is the cuda kind on a machine without a driver.
func noDriverKind(t *testing.T) rk.Kind {
	k := kindNamed(t, "cuda")
	k.Open = func(rk.OpenOptions) (rk.Backend, error) {
		return nil, fmt.Errorf("%w (tried /nonexistent)", drv.ErrNoDriver)
	}
	return k
}

// gpuKind is the cuda kind on a machine with two GPUs, run by a sim backend.
func gpuKind(t *testing.T, opened *rk.Backend) rk.Kind {
	k := kindNamed(t, "cuda")
	k.Open = func(rk.OpenOptions) (rk.Backend, error) {
		b := sim.New(2)
		*opened = b
		return b, nil
	}
	k.List = func(rk.Backend, rk.OpenOptions) ([]rk.Device, error) {
		return []rk.Device{{ID: 0, Name: "gpu0", Backend: "cuda", P2P: []bool{false, true}}, {ID: 1, Name: "gpu1", Backend: "cuda", P2P: []bool{true, false}}}, nil
	}
	return k
}

func TestAutoWithoutDriverPicksSimAndSaysWhy(t *testing.T) {
	var log bytes.Buffer
	sel, err := Open([]rk.Kind{noDriverKind(t), kindNamed(t, "sim")}, Options{Backend: "auto", Open: rk.OpenOptions{Devices: 3}, Log: &log}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Reg.BackendName() != "sim" || sel.Backend.Name() != "sim" || len(sel.Reg.GPUs()) != 3 || !sel.Owned {
		t.Fatalf("auto without a driver chose %s with %d devices", sel.Reg.BackendName(), len(sel.Reg.GPUs()))
	}
	line := log.String()
	for _, want := range []string{"no GPU to run on", "driver not found", "/nonexistent", "using 3 simulated devices"} {
		if !strings.Contains(line, want) {
			t.Errorf("note %q lacks %q", line, want)
		}
	}
	if strings.Count(line, "\n") != 1 || sel.Reg.Note()+"\n" != line {
		t.Fatalf("want one line, the registry's note; got %q", line)
	}
}

func TestCUDAWithoutDriverWrapsTheCause(t *testing.T) {
	var log bytes.Buffer
	_, err := Open([]rk.Kind{noDriverKind(t), kindNamed(t, "sim")}, Options{Backend: "cuda", Log: &log}, nil)
	if !errors.Is(err, ErrBackend) || !errors.Is(err, drv.ErrNoDriver) {
		t.Fatalf("cuda without a driver: %v; want ErrBackend wrapping cuda.ErrNoDriver", err)
	}
	if !strings.Contains(err.Error(), `backend "sim"`) || log.Len() != 0 {
		t.Fatalf("the error should name the way out (%v), and nothing be printed (%q)", err, log.String())
	}
	// The kind is named once: the cause names it already.
	if !strings.HasPrefix(err.Error(), "ringactor: backend unavailable: cuda: driver not found") {
		t.Fatalf("error %q: want the kind named once, by the cause", err)
	}
	k := noDriverKind(t)
	k.Open = func(rk.OpenOptions) (rk.Backend, error) { return nil, errors.New("no libcuda") }
	if _, err := Open([]rk.Kind{k, kindNamed(t, "sim")}, Options{Backend: "cuda", Log: &log}, nil); err == nil ||
		!strings.HasPrefix(err.Error(), "ringactor: backend unavailable: cuda: no libcuda;") {
		t.Fatalf("error %v: want the kind named before a cause that does not name it", err)
	}
}

func TestAutoPrefersTheGPU(t *testing.T) {
	var log bytes.Buffer
	var opened rk.Backend
	sel, err := Open([]rk.Kind{gpuKind(t, &opened), kindNamed(t, "sim")}, Options{Log: &log}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Reg.BackendName() != "cuda" || sel.Backend != opened || len(sel.Reg.GPUs()) != 2 || !sel.Reg.Peer(0, 1) {
		t.Fatalf("auto with GPUs chose %s", sel.Reg.BackendName())
	}
	if line := log.String(); !strings.Contains(line, "using 2 CUDA GPU(s)") || !strings.Contains(line, "gpu0, gpu1") || strings.Contains(line, "no GPU") {
		t.Fatalf("note %q", line)
	}
	// Asked for by name, the simulator is used even where a GPU is.
	sel, err = Open([]rk.Kind{gpuKind(t, &opened), kindNamed(t, "sim")}, Options{Backend: "sim", Open: rk.OpenOptions{Devices: 1}, Log: &log}, nil)
	if err != nil || sel.Reg.BackendName() != "sim" {
		t.Fatalf("sim by name: %v", err)
	}
}

// With a Logger, what Open found is one Info record, its parts as
// attributes (why "auto" passed over the GPU among them), and the
// deprecated writer gets nothing (with neither, nothing is said:
// runtime's TestNothingPrintedWithoutLogger).
func TestTheNoteIsOneRecord(t *testing.T) {
	var records, log bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&records, nil))
	sel, err := Open([]rk.Kind{noDriverKind(t), kindNamed(t, "sim")}, Options{Open: rk.OpenOptions{Devices: 3}, Logger: l, Log: &log}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(records.Bytes(), &r); err != nil || strings.Count(records.String(), "\n") != 1 || log.Len() != 0 {
		t.Fatalf("want one record, and nothing on Log (%q): %q (%v)", log.String(), records.String(), err)
	}
	if r["level"] != "INFO" || r["msg"] != NoteMessage || r["backend"] != "sim" || r["gpus"] != 3.0 ||
		r["devices"] != "using 3 simulated devices (P2P all pairs)" || !strings.HasPrefix(fmt.Sprint(r["cpu"]), "the CPU (") ||
		!strings.Contains(fmt.Sprint(r["passed_over"]), "no GPU to run on") || !strings.Contains(fmt.Sprint(r["passed_over"]), "/nonexistent") {
		t.Fatalf("record %v", r)
	}
	if note := sel.Reg.Note(); !strings.Contains(note, "no GPU to run on") || !strings.HasSuffix(note, fmt.Sprint(r["cpu"])) {
		t.Fatalf("the registry's note %q", note)
	}
	// A backend given in Config: said so, and nothing passed over.
	records.Reset()
	if _, err := Open([]rk.Kind{noDriverKind(t), kindNamed(t, "sim")}, Options{Logger: l}, sim.New(2)); err != nil {
		t.Fatal(err)
	}
	if s := records.String(); !strings.Contains(s, `"config_backend":true`) || strings.Contains(s, "passed_over") || !strings.Contains(s, `"gpus":2`) {
		t.Fatalf("record %s", s)
	}
}
