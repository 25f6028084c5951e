package runtime_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/ringactor/ringactor/internal/rttest"
	"github.com/ringactor/ringactor/kernels"
	ra "github.com/ringactor/ringactor/runtime"
)

var cpuOpOnce sync.Once

// gpuDevice is testDevice for a case that puts stages on GPUs beside the
// CPU: under the cpu backend it keeps the simulated GPU d.
func gpuDevice(d int) int {
	if rttest.Backend() == rttest.CPU {
		return d
	}
	return testDevice(d)
}

// registerCPUOp registers test_cpu_square, a Go stage with no CUDA side: it
// squares a Keyed's values and counts them.
func registerCPUOp(t *testing.T) {
	t.Helper()
	var err error
	cpuOpOnce.Do(func() {
		err = ra.GoStage("test_cpu_square", func(k kernels.Keyed) (kernels.Keyed, error) {
			if k.Count > uint32(len(k.Values)) {
				return k, fmt.Errorf("count %d is more than %d values", k.Count, len(k.Values))
			}
			for i := range k.Count {
				k.Values[i] *= k.Values[i]
			}
			return k, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Stages on the CPU device beside GPU stages (simulated, or the CUDA
// backend's under RINGACTOR_TEST_BACKEND=cuda): the guide's pipeline with
// its middle stage on the CPU, and a typed one whose middle stage is a Go
// stage, which only the CPU runs. Every result is checked against Go, the
// account is exact, and the links that join a GPU and the CPU are in
// pinned host memory.
func TestCPUStagesBesideGPUStages(t *testing.T) {
	registerCPUOp(t)
	e := deviceEnv(t)
	cpu := e.RT.Registry().CPUDevice()
	if cpu.Kind != ra.KindCPU || cpu.Name != ra.CPUName || cpu.Cores < 1 {
		t.Fatalf("the CPU device: %+v", cpu)
	}

	const n = 3000
	acc := newAccount()
	spec := guide("cpu-guide")
	spec.Stages[0].Device, spec.Stages[1].Device, spec.Stages[2].Device = gpuDevice(0), cpu.ID, gpuDevice(2)
	spec.Deliver.Func, spec.OnDeadLetter = acc.result, acc.deadLetter
	var mu sync.Mutex
	got := map[uint64][]float32{}
	deliver := spec.Deliver.Func
	spec.Deliver.Func = func(r ra.Result) {
		mu.Lock()
		got[r.ID] = append([]float32(nil), r.Floats...)
		mu.Unlock()
		deliver(r)
	}
	p := buildStarted(t, e.RT, spec)
	desc := p.Describe()
	for _, want := range []string{
		fmt.Sprintf("root       op sqrt[] on device %d (cpu)", cpu.ID),
		fmt.Sprintf("from double: egress (mapped-pinned memory on device %d) over PHB", gpuDevice(0)),
		fmt.Sprintf("from root: ingress (mapped-pinned memory on device %d) over PHB", gpuDevice(2)),
		fmt.Sprintf("ingress: ingress (host memory on device %d)", cpu.ID),
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("Describe lacks %q:\n%s", want, desc)
		}
	}
	for i := 1; i <= n; i++ {
		if err := p.Send(ctxT(t), ra.Data{ID: uint64(i), Floats: []float32{float32(i), float32(i % 7)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if reasons := acc.check(t, n, p.Stats()); len(reasons) != 0 {
		t.Fatalf("dead letters: %v", reasons)
	}
	for i := 1; i <= n; i++ {
		r := got[uint64(i)]
		for j, x := range []float32{float32(i), float32(i % 7)} {
			want := math.Sqrt(float64(2*x)) + 1
			if len(r) != 2 || math.Abs(float64(r[j])-want) > 1e-5*want {
				t.Fatalf("message %d: %v, want sqrt(2x)+1 of %v", i, r, x)
			}
		}
	}

	// A Go stage between two device stages: Keyed scaled on a GPU, squared
	// in Go on the CPU, summed on a GPU.
	res := make(chan ra.Result, 64)
	q := buildStarted(t, e.RT, ra.PipelineSpec{Name: "cpu-typed", Stages: []ra.StageSpec{
		{Name: "scale", Op: "keyed_scale", Params: []float32{3}, Device: gpuDevice(0)},
		{Name: "square", Op: "test_cpu_square", Device: cpu.ID},
		{Name: "sum", Op: "keyed_sum", Device: gpuDevice(1)},
	}, Deliver: ra.Sink{Chan: res}})
	const m = 200
	go func() {
		for i := 1; i <= m; i++ {
			k := kernels.Keyed{Key: uint32(i), Count: 3, Values: [8]float32{1, float32(i % 5), 0.5}}
			if err := q.Send(ctxT(t), ra.Data{ID: uint64(i), Value: k}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range m {
		r := <-res
		i := float64(r.ID)
		want := 9 * (1 + math.Pow(math.Mod(i, 5), 2) + 0.25)
		if len(r.Floats) != 2 || r.Floats[0] != float32(r.ID) || math.Abs(float64(r.Floats[1])-want) > 1e-4*want {
			t.Fatalf("message %d: %v, want [key %d, %g]", r.ID, r.Floats, r.ID, want)
		}
	}
	if err := q.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := q.Stats(); st.Sent != m || st.Delivered != m || st.InFlight != 0 {
		t.Fatalf("typed pipeline account %+v", st)
	}
}

// A stage whose op has only a Go side cannot go to a GPU: Build says which
// stage, why, and where to put it; on the CPU it builds.
func TestGoOnlyOpRefusedOnGPU(t *testing.T) {
	registerCPUOp(t)
	e := newEnv(t, "")
	cpu := e.RT.Registry().CPUDevice()
	spec := ra.PipelineSpec{Name: "go-on-gpu", Stages: []ra.StageSpec{
		{Name: "scale", Op: "keyed_scale", Params: []float32{1}, Device: 0},
		{Name: "square", Op: "test_cpu_square", Device: 2},
	}}
	_, err := e.RT.Build(ctxT(t), spec)
	want := fmt.Sprintf(`stage "square": op test_cpu_square has only a Go side (no CUDA source), so it cannot run on gpu 2 (sim-2); place it on the CPU: Device: runtime.CPU (device %d here, "cpu" in a device list)`, cpu.ID)
	if !errors.Is(err, ra.ErrBadPipeline) || !strings.Contains(fmt.Sprint(err), want) {
		t.Fatalf("Build: %v\nwant an error saying %s", err, want)
	}
	spec.Stages[1].Device = cpu.ID
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t), false); err != nil {
		t.Fatal(err)
	}
}
