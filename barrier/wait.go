package barrier

import (
	"context"
	"runtime"
	"time"
)

// Waiting for the others: spin a little (the last participant is usually
// running on another core and about to arrive), then yield (on a host with
// fewer cores than participants the one we wait for may need ours), then
// sleep with exponential backoff so a long wait costs little CPU. The
// device side does the same with __nanosleep (ra_barrier_wait).
const (
	spinTries  = 64
	yieldTries = 64
	minSleep   = time.Microsecond
	maxSleep   = 200 * time.Microsecond
)

type waiter struct {
	n     int
	timer *time.Timer
}

// wait waits one step; it returns ctx's error once ctx is done.
func (w *waiter) wait(ctx context.Context) error {
	w.n++
	switch {
	case w.n <= spinTries:
		if w.n%16 == 0 {
			return ctx.Err()
		}
		return nil
	case w.n <= spinTries+yieldTries:
		runtime.Gosched()
		return ctx.Err()
	}
	d := min(minSleep<<min(w.n-spinTries-yieldTries, 20), maxSleep)
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		w.timer.Stop()
		return ctx.Err()
	case <-w.timer.C:
		return nil
	}
}

func (w *waiter) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}
