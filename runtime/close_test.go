package runtime_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
)

// A drained close behind a deactivated stage activates it and finishes:
// every message delivered, no error (before, it waited for its whole ctx
// and reported the drain as unfinished).
func TestDrainedCloseActivatesADeactivatedStage(t *testing.T) {
	e := deviceEnv(t)
	var delivered atomic.Int64
	p := startCounting(t, e.RT, "deactivated", &delivered)
	pid, _ := p.PID("root") // the middle stage
	if _, err := e.RT.System().Root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	const n = 1500 // more than one link holds, less than two
	for i := range n {
		if err := p.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatalf("drained close behind a deactivated stage: %v", err)
	}
	if st := p.Stats(); st.Delivered != n || delivered.Load() != n || st.InFlight != 0 {
		t.Fatalf("account %+v, %d delivered", st, delivered.Load())
	}
}

// Runtime.Shutdown closes the pipelines left open with drain (a
// deactivated stage's messages are delivered), Runtime.Close without
// (they are dead-lettered); a nil ctx is refused, and a second call of
// either does nothing.
func TestShutdownDrainsCloseDoesNot(t *testing.T) {
	for _, graceful := range []bool{true, false} {
		e := deviceEnv(t)
		var delivered atomic.Int64
		p := startCounting(t, e.RT, "left-open", &delivered)
		if err := p.Start(ctxT(t)); err != nil { // Start is idempotent
			t.Fatalf("second Start: %v", err)
		}
		pid, _ := p.PID("root")
		if _, err := e.RT.System().Root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
			t.Fatal(err)
		}
		const n = 100
		for i := range n {
			if err := p.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
				t.Fatal(err)
			}
		}
		if graceful {
			var none context.Context
			if err := e.RT.Shutdown(none); !errors.Is(err, ra.ErrNilContext) {
				t.Fatalf("Shutdown(nil): %v", err)
			}
			if err := e.RT.Shutdown(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		} else if err := e.RT.Close(); err != nil {
			t.Fatal(err)
		}
		st := p.Stats()
		if graceful && (st.Delivered != n || delivered.Load() != n) || !graceful && st.DeadLettered != n || st.InFlight != 0 {
			t.Fatalf("drain %v: account %+v, %d delivered", graceful, st, delivered.Load())
		}
		if err := e.RT.Shutdown(ctxT(t)); err != nil {
			t.Fatalf("second Shutdown: %v", err)
		}
	}
}

// A pipeline closed with drain before it was ever started delivers what
// was sent to it (before, its results stayed in the last stage's egress
// link: Delivered 0, InFlight 10, and Close returned nil).
func TestDrainedCloseOfAPipelineNeverStarted(t *testing.T) {
	e := deviceEnv(t)
	var delivered atomic.Int64
	spec := guide("never-started")
	spec.Deliver.Func = func(ra.Result) { delivered.Add(1) }
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	for i := range n {
		if err := p.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatalf("drained close of a pipeline never started: %v", err)
	}
	if st := p.Stats(); st.Delivered != n || delivered.Load() != n || st.InFlight != 0 {
		t.Fatalf("account %+v, %d delivered", st, delivered.Load())
	}
	if err := p.Start(ctxT(t)); !errors.Is(err, ra.ErrClosed) {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
}
