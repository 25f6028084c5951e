package runtime_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/internal/demo"
	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/sim"
	ra "github.com/ringactor/ringactor/runtime"
)

// recording is a sim backend that counts the kernels it starts and, like
// the CUDA backend, refuses kernels with steal links.
type recording struct {
	*sim.Backend
	started atomic.Int32
}

func (b *recording) Start(job *rk.Job) (rk.Loop, error) {
	if len(job.StealTo) > 0 {
		return nil, errors.New("recording: stage " + job.Spec.Stage.Name + " has steal links: not supported here")
	}
	b.started.Add(1)
	return b.Backend.Start(job)
}

// A backend given in Config runs the stages, with the devices its kind
// lists.
func TestInjectedBackendIsUsed(t *testing.T) {
	b := &recording{Backend: sim.New(3)}
	var log bytes.Buffer
	rt, err := ra.New(ra.Config{Backend: b, Devices: ra.DeviceOptions{SimDevices: 3, Log: &log}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.Backend() != rk.Backend(b) || len(rt.Registry().GPUs()) != 3 || rt.Registry().BackendName() != "sim" {
		t.Fatalf("runtime on %v with %d devices", rt.Backend(), len(rt.Registry().GPUs()))
	}
	if !strings.Contains(log.String(), "3 simulated devices") || !strings.Contains(log.String(), "given in Config") {
		t.Fatalf("note %q", log.String())
	}
	p, err := rt.Build(ctxT(t), demo.Guide("injected", [3]int{0, 1, 2}))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t), false); err != nil {
		t.Fatal(err)
	}
	if n := b.started.Load(); n != 3 {
		t.Fatalf("the injected backend started %d kernels, want 3", n)
	}
	if !strings.Contains(p.Describe(), "on sim backend") {
		t.Fatal(p.Describe())
	}
}

func TestInjectedBackendMustAgreeWithTheName(t *testing.T) {
	b := sim.New(2)
	rt, err := ra.New(ra.Config{Backend: b, Devices: ra.DeviceOptions{Backend: "sim", Log: io.Discard}})
	if err != nil || len(rt.Registry().GPUs()) != 2 {
		t.Fatalf("a sim backend of 2 devices: %v", err) // as many devices as it accepts
	}
	rt.Close()
	if _, err := ra.New(ra.Config{Backend: b, Devices: ra.DeviceOptions{Backend: "cuda", Log: io.Discard}}); !errors.Is(err, ra.ErrBackend) {
		t.Fatalf("a sim backend with Backend cuda: %v", err)
	}
	if _, err := ra.New(ra.Config{Backend: unnamed{b}, Devices: ra.DeviceOptions{Log: io.Discard}}); !errors.Is(err, ra.ErrBackend) || !strings.Contains(err.Error(), `"opencl"`) {
		t.Fatalf("a backend of an unknown kind: %v", err)
	}
}

type unnamed struct{ *sim.Backend }

func (unnamed) Name() string { return "opencl" }

// The runtime links the CUDA and sim backends by default, and "auto"
// tries them in their kinds' Order: the GPU first.
func TestDefaultKinds(t *testing.T) {
	var names []string
	for _, k := range rk.Kinds() {
		names = append(names, k.Name)
	}
	if strings.Join(names, ",") != "cuda,sim" {
		t.Fatalf("kinds %v; want cuda, then sim", names)
	}
}

// picky is a sim backend that runs no op on its GPUs.
type picky struct{ *sim.Backend }

func (picky) Supports(device int, op kernels.Op) error {
	return &rk.UnsupportedError{Op: op.Name, Device: device, Name: "picky", Kind: rk.KindGPU, Why: "is not liked here", Fix: "try elsewhere"}
}

// Build asks the backend whether each stage's device runs its op, and
// where the CPU can run it, the fix names the CPU's id.
func TestBuildAsksTheBackendWhetherItSupportsTheOp(t *testing.T) {
	rt, err := ra.New(ra.Config{Backend: picky{sim.New(2)}, Devices: ra.DeviceOptions{Log: io.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, err = rt.Build(ctxT(t), ra.PipelineSpec{Name: "picky", Stages: []ra.StageSpec{{Name: "s", Op: "scale", Params: []float32{2}, Device: 1}}})
	if !errors.Is(err, rk.ErrUnsupported) || !strings.Contains(err.Error(), `stage "s": op scale is not liked here, so it cannot run on gpu 1 (picky); place it on the CPU: Device: runtime.CPU (device 2 here, "cpu" in a device list)`) {
		t.Fatalf("Build on a backend that runs no op: %v", err)
	}
	p, err := rt.Build(ctxT(t), ra.PipelineSpec{Name: "on-cpu", Stages: []ra.StageSpec{{Name: "s", Op: "scale", Params: []float32{2}, Device: 2}}})
	if err != nil {
		t.Fatalf("the CPU runs it: %v", err)
	}
	p.Close(ctxT(t), false)
}
