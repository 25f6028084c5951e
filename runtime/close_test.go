package runtime_test

import (
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
