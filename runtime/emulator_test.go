package runtime_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ringactor/ringactor/cuda/cudatest"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
)

// A device's estimate of host time is off by the calibration's error; the
// emulated driver can make that error large (its clock kernel answers
// late, so the device's times read 1 ms early). Stage spans still never
// end before they start: a kernel never dequeues a message before its
// enqueue stamp, and its service time stays the difference of one clock's
// readings. Without that, the first stage's spans (host enqueue stamp,
// device done time) run backwards, or lose their service time to a clamp.
func TestStageSpansSurviveACalibrationError(t *testing.T) {
	if !onCUDA() || !cudatest.Emulated() {
		t.Skip("needs the emulated driver's clock lag (RINGACTOR_EMU_CLOCK_LAG_NS): run with make test's emulated suite")
	}
	t.Setenv("RINGACTOR_EMU_CLOCK_LAG_NS", "2000000") // read by the clock kernel at each calibration
	e := deviceEnv(t)
	spec := guide("skewed")
	spec.SampleRatio = 1
	p := buildStarted(t, e.RT, spec)
	const n = 50
	for i := range n {
		if err := p.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	stages := 0
	for _, s := range e.Spans.Ended() {
		if s.SpanKind() == trace.SpanKindProducer { // the message's root
			continue
		}
		stages++
		if s.EndTime().Before(s.StartTime()) {
			t.Fatalf("%s of message %v ends %v before it starts", s.Name(), s.Attributes(), s.StartTime().Sub(s.EndTime()))
		}
		// The service time is one clock's difference, whatever the
		// offset: two readings of the emulator's clock are never equal.
		for _, a := range s.Attributes() {
			if a.Key == "ringactor.service_ns" && a.Value.AsInt64() <= 0 {
				t.Fatalf("%s of message %v: service time %d ns lost to the clamp", s.Name(), s.Attributes(), a.Value.AsInt64())
			}
		}
	}
	if stages != 3*n {
		t.Fatalf("%d stage spans, want %d", stages, 3*n)
	}
}

// A busy host or GPU answers the clock kernel late: with every answer
// 300 ms late (RINGACTOR_EMU_CLOCK_DELAY_NS), Build still opens the device
// within its ctx (the calibration retries with growing patience, bounded
// by Build's ctx, not a constant) and the pipeline delivers. Then the
// answers turn later than a recalibration waits for (3 s): the periodic
// recalibrations give up and keep the offset, and nothing faults or fails.
func TestBuildSurvivesASlowClockKernel(t *testing.T) {
	if !onCUDA() {
		t.Skip("needs the CUDA backend over the emulated driver (RINGACTOR_EMU_CLOCK_DELAY_NS): run with make test's emulated suite")
	}
	cudatest.Driver(t) // none: skipped, or failed under RINGACTOR_REQUIRE_GPU=1
	if !cudatest.Emulated() {
		t.Skip("a real GPU: the clock delay is the emulated driver's (RINGACTOR_EMU_CLOCK_DELAY_NS)")
	}
	const delay = 300 * time.Millisecond
	t.Setenv("RINGACTOR_EMU_CLOCK_DELAY_NS", strconv.FormatInt(int64(delay), 10)) // read by the clock kernel at each launch
	e := deviceEnv(t)
	ctx, cancel := context.WithTimeout(ctxT(t), 60*time.Second)
	defer cancel()
	a := newAccount()
	spec := guide("slow-clock")
	spec.Deliver.Func, spec.OnDeadLetter = a.result, a.deadLetter
	start := time.Now()
	p, err := e.RT.Build(ctx, spec)
	if err != nil {
		t.Fatalf("Build with the clock kernel's answers %v late: %v", delay, err)
	}
	took := time.Since(start)
	// Proof that this Build opened the device and calibrated against the
	// delay (not an open made earlier): at least one answer was waited for.
	if took < delay {
		t.Fatalf("Build took %v, less than one delayed answer (%v): the device was not opened (calibrated) by this Build", took, delay)
	}
	t.Logf("Build (device open and clock calibration) with answers %v late took %v", delay, took.Round(time.Millisecond))
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Later than a recalibration's patience: each recalibration fails and
	// the offset stays; the pipeline runs on.
	t.Setenv("RINGACTOR_EMU_CLOCK_DELAY_NS", strconv.FormatInt(int64(1500*time.Millisecond), 10))
	const n = 200
	for i := 1; i <= n; i++ {
		if err := p.Send(ctx, ra.Data{ID: uint64(i), Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
		if i == n/2 {
			// Across a few recalibration periods (100 ms each): waits for
			// a condition, not a time, to hold the pipeline up a while.
			if err := p.Idle(ctx); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(1500 * time.Millisecond)
			for time.Now().Before(deadline) {
				for _, s := range p.Stats().Stages {
					if s.State == rk.Faulted {
						t.Fatalf("stage %s faulted while recalibrations were late: %v", s.Stage, s.LastError)
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	if err := p.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	if reasons := a.check(t, n, p.Stats()); len(reasons) != 0 {
		t.Fatalf("dead letters %v; want every message delivered", reasons)
	}
}
