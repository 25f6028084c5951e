package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// Backend selection with the CUDA kind's opener stubbed: cuda.LoadDriver
// loads once per process, so these tests never call it (the subprocess
// test in devices_test.go runs the real one).

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
	k.List = func(rk.Backend, rk.OpenOptions) ([]Device, error) {
		return []Device{{ID: 0, Name: "gpu0", Backend: "cuda", P2P: []bool{false, true}}, {ID: 1, Name: "gpu1", Backend: "cuda", P2P: []bool{true, false}}}, nil
	}
	return k
}

func TestAutoWithoutDriverPicksSimAndSaysWhy(t *testing.T) {
	var log bytes.Buffer
	sel, err := selectBackend([]rk.Kind{noDriverKind(t), kindNamed(t, "sim")}, DeviceOptions{Backend: "auto", SimDevices: 3, Log: &log}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel.reg.BackendName() != "sim" || sel.backend.Name() != "sim" || len(sel.reg.GPUs()) != 3 || !sel.owned {
		t.Fatalf("auto without a driver chose %s with %d devices", sel.reg.BackendName(), len(sel.reg.GPUs()))
	}
	line := log.String()
	for _, want := range []string{"no GPU to run on", "driver not found", "/nonexistent", "using 3 simulated devices"} {
		if !strings.Contains(line, want) {
			t.Errorf("note %q lacks %q", line, want)
		}
	}
	if strings.Count(line, "\n") != 1 || sel.reg.Note()+"\n" != line {
		t.Fatalf("want one line, the registry's note; got %q", line)
	}
}

func TestCUDAWithoutDriverWrapsTheCause(t *testing.T) {
	var log bytes.Buffer
	_, err := selectBackend([]rk.Kind{noDriverKind(t), kindNamed(t, "sim")}, DeviceOptions{Backend: "cuda", Log: &log}, nil)
	if !errors.Is(err, ErrBackend) || !errors.Is(err, drv.ErrNoDriver) {
		t.Fatalf("cuda without a driver: %v; want ErrBackend wrapping cuda.ErrNoDriver", err)
	}
	if !strings.Contains(err.Error(), `backend "sim"`) || log.Len() != 0 {
		t.Fatalf("the error should name the way out (%v), and nothing be printed (%q)", err, log.String())
	}
}

func TestAutoPrefersTheGPU(t *testing.T) {
	var log bytes.Buffer
	var opened rk.Backend
	sel, err := selectBackend([]rk.Kind{gpuKind(t, &opened), kindNamed(t, "sim")}, DeviceOptions{Log: &log}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel.reg.BackendName() != "cuda" || sel.backend != opened || len(sel.reg.GPUs()) != 2 || !sel.reg.Peer(0, 1) {
		t.Fatalf("auto with GPUs chose %s", sel.reg.BackendName())
	}
	if line := log.String(); !strings.Contains(line, "using 2 CUDA GPU(s)") || !strings.Contains(line, "gpu0, gpu1") || strings.Contains(line, "no GPU") {
		t.Fatalf("note %q", line)
	}
	// Asked for by name, the simulator is used even where a GPU is.
	sel, err = selectBackend([]rk.Kind{gpuKind(t, &opened), kindNamed(t, "sim")}, DeviceOptions{Backend: "sim", SimDevices: 1, Log: &log}, nil)
	if err != nil || sel.reg.BackendName() != "sim" {
		t.Fatalf("sim by name: %v", err)
	}
}

// closingBackend is a sim backend that holds "device memory": it refuses
// to close while a kernel runs, as the CUDA backend does.
type closingBackend struct {
	*sim.Backend
	mu     sync.Mutex
	loops  []rk.Loop
	closed int
}

func (b *closingBackend) Start(job *rk.Job) (rk.Loop, error) {
	l, err := b.Backend.Start(job)
	if err == nil {
		b.mu.Lock()
		b.loops = append(b.loops, l)
		b.mu.Unlock()
	}
	return l, err
}

func (b *closingBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.loops {
		select {
		case <-l.Done():
		default:
			return errors.New("a kernel still runs")
		}
	}
	b.closed++
	return nil
}

// Runtime.Close ends a pipeline left open before it closes the backend it
// opened, and closes it once.
func TestCloseReleasesTheBackendAfterItsKernels(t *testing.T) {
	cb := &closingBackend{Backend: sim.New(3)}
	kind := kindNamed(t, "sim")
	kind.Open = func(rk.OpenOptions) (rk.Backend, error) { return cb, nil }
	var log bytes.Buffer
	rt, err := newRuntime(Config{Devices: DeviceOptions{SimDevices: 3, Log: &log}}, []rk.Kind{kind})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := GuideSpec("left-open", [3]int{0, 1, 2})
	p, err := rt.Build(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(ctx, Data{Floats: []float32{1}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil || cb.closed != 1 {
		t.Fatalf("second Close: %v; backend closed %d times, want 1", err, cb.closed)
	}
	if st := p.Stats(); st.InFlight != 0 || st.Sent != 1 {
		t.Fatalf("the pipeline left open was not ended: %+v", st)
	}
}
