package runtime_test

import (
	"context"
	goruntime "runtime"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
	ra "github.com/ringactor/ringactor/runtime"
)

// The cases that deadlock a careless persistent-kernel runtime, on any
// backend (the GPU bundle runs them on cuda under each CUDA_MODULE_LOADING):
// a second pipeline built and started while the first one's kernels spin,
// and a close without drain while messages are still flowing.

func TestSecondPipelineWhileFirstRuns(t *testing.T) {
	e := deviceEnv(t)
	var got [2]atomic.Int64
	start := func(i int, name string) *ra.Pipeline { return startCounting(t, e.RT, name, &got[i]) }
	first := start(0, "first")
	send := func(p *ra.Pipeline, n int) {
		for i := range n {
			if err := p.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(first, 1000) // its kernels are running now
	second := start(1, "second")
	send(second, 1000)
	send(first, 1000)
	for i, p := range []*ra.Pipeline{first, second} {
		if err := p.Close(ctxT(t), true); err != nil {
			t.Fatalf("close pipeline %d: %v", i, err)
		}
	}
	if a, b := got[0].Load(), got[1].Load(); a != 2000 || b != 1000 {
		t.Fatalf("delivered %d and %d, want 2000 and 1000", a, b)
	}
}

func TestCloseWithoutDrainWhileBusy(t *testing.T) {
	e := deviceEnv(t)
	var delivered atomic.Int64
	p := startCounting(t, e.RT, "busy", &delivered)
	ctx, cancel := context.WithCancel(ctxT(t))
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		batch := make([]ra.Data, 64)
		for i := range batch {
			batch[i] = ra.Data{Floats: []float32{float32(i), 1, 2, 3}}
		}
		for ctx.Err() == nil {
			if _, err := p.SendBatch(ctx, batch); err != nil {
				return // closed under us: refused sends are dead letters
			}
		}
	}()
	// Close once the stages are busy: results are coming out.
	for delivered.Load() < 5000 {
		if ctx.Err() != nil {
			t.Fatal("no results")
		}
		select {
		case <-sent:
			t.Fatal("the sender stopped early")
		default:
			goruntime.Gosched()
		}
	}
	if err := p.Close(ctxT(t), false); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-sent
	st := p.Stats()
	if st.InFlight != 0 || st.Delivered+st.DeadLettered != st.Sent || st.Delivered != uint64(delivered.Load()) {
		t.Fatalf("after a close without drain while busy: %+v (delivered to the callback: %d)", st, delivered.Load())
	}
}

// startCounting builds and starts the guide pipeline under name, counting
// its results into delivered.
func startCounting(t *testing.T, rt *ra.Runtime, name string, delivered *atomic.Int64) *ra.Pipeline {
	t.Helper()
	spec := guide(name)
	spec.Deliver.Func = func(ra.Result) { delivered.Add(1) }
	return buildStarted(t, rt, spec)
}

// buildStarted builds and starts spec.
func buildStarted(t *testing.T, rt *ra.Runtime, spec ra.PipelineSpec) *ra.Pipeline {
	t.Helper()
	p, err := rt.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return p
}

// A second pipeline on a device the first never used, built and started
// while the first one's kernels spin on device 0 (GPU-REVIEW D7): the
// backend opens every device, and enables peer access among them, at its
// first open, so nothing here enables peer access in a context whose
// kernels run. It needs two GPUs (on cuda; the GPU bundle runs it as
// second-device) and skips, saying so, with one.
func TestSecondPipelineOnAFreshDevice(t *testing.T) {
	if !onCUDA() {
		t.Skip("the CUDA backend's device opening: runs with RINGACTOR_TEST_BACKEND=cuda on two or more GPUs (or the emulated driver)")
	}
	e := deviceEnv(t)
	cudatest.Device(t, 1)
	on := func(name string, dev int) ra.PipelineSpec {
		spec := guide(name)
		for i := range spec.Stages {
			spec.Stages[i].Device = dev
		}
		return spec
	}
	var got [2]atomic.Int64
	start := func(i int, spec ra.PipelineSpec) *ra.Pipeline {
		spec.Deliver.Func = func(ra.Result) { got[i].Add(1) }
		return buildStarted(t, e.RT, spec)
	}
	send := func(p *ra.Pipeline, n int) {
		for i := range n {
			if err := p.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := start(0, on("first-on-0", 0))
	send(first, 1000) // its kernels are running now
	second := start(1, on("second-on-1", 1))
	send(second, 1000)
	send(first, 1000)
	for i, p := range []*ra.Pipeline{first, second} {
		if err := p.Close(ctxT(t), true); err != nil {
			t.Fatalf("close pipeline %d: %v", i, err)
		}
	}
	if a, b := got[0].Load(), got[1].Load(); a != 2000 || b != 1000 {
		t.Fatalf("delivered %d and %d, want 2000 and 1000", a, b)
	}
}
