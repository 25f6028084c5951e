package runtime_test

import (
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
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
		if s.Name() == "ringactor.message" {
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
