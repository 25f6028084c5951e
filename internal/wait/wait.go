// Package wait is the host's one way to wait for another agent (a kernel, a
// producer, the other participants of a barrier): spin a little, since the
// other side usually runs on another core and is about to act; then yield,
// since on a host with fewer cores than busy goroutines the one waited for
// may need ours; then sleep with exponential backoff, so a long wait costs
// little CPU. Each user picks the lengths of the three phases.
package wait

import (
	"context"
	"runtime"
	"time"
)

// Policy is the length of each phase.
type Policy struct {
	Spin, Yield int           // steps that spin, then steps that yield
	MinSleep    time.Duration // the first sleep, doubling from there
	MaxSleep    time.Duration // the longest sleep
}

// Waiter waits one step at a time under a Policy. The zero Waiter of a
// policy is ready; it is not safe for concurrent use.
type Waiter struct {
	P     Policy
	n     int
	timer *time.Timer
}

// Reset starts the next wait from its first (spinning) step.
func (w *Waiter) Reset() { w.n = 0 }

// Sleeping reports whether the next step would sleep rather than spin or
// yield.
func (w *Waiter) Sleeping() bool { return w.n >= w.P.Spin+w.P.Yield }

// Wait waits one step; it returns ctx's error once ctx is done (checked
// every eighth spin, and on every yield and sleep).
func (w *Waiter) Wait(ctx context.Context) error {
	w.n++
	switch {
	case w.n <= w.P.Spin:
		if w.n%8 == 0 {
			return ctx.Err()
		}
		return nil
	case w.n <= w.P.Spin+w.P.Yield:
		runtime.Gosched()
		return ctx.Err()
	}
	d := min(w.P.MinSleep<<min(w.n-w.P.Spin-w.P.Yield-1, 20), w.P.MaxSleep)
	return w.Sleep(ctx, d, nil)
}

// Sleep waits for d, a ring of bell (if not nil), or ctx.
func (w *Waiter) Sleep(ctx context.Context, d time.Duration, bell <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		w.timer.Stop()
		return ctx.Err()
	case <-bell:
		w.timer.Stop()
		return nil
	case <-w.timer.C:
		return nil
	}
}

// Stop releases the waiter's timer.
func (w *Waiter) Stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}
