package p2pqueue

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ringactor/ringactor/internal/order"
)

// Waiting for space or for a message: spin a little (the other side is
// usually running on another core), then yield, then sleep with exponential
// backoff so an idle side costs little CPU. A consumer whose link has a
// Doorbell parks instead of sleeping and is woken by the producer.
const (
	spinTries  = 32
	yieldTries = 256
	minSleep   = time.Microsecond
	maxSleep   = 500 * time.Microsecond
)

type waiter struct {
	n     int
	timer *time.Timer
}

func (w *waiter) reset() { w.n = 0 }

// sleeping reports whether the next wait would sleep rather than spin.
func (w *waiter) sleeping() bool { return w.n >= spinTries+yieldTries }

// wait waits one step; it returns ctx's error once ctx is done.
func (w *waiter) wait(ctx context.Context) error {
	w.n++
	switch {
	case w.n <= spinTries:
		if w.n%8 == 0 {
			return ctx.Err()
		}
		return nil
	case w.n <= spinTries+yieldTries:
		runtime.Gosched()
		return ctx.Err()
	}
	d := minSleep << min(w.n-spinTries-yieldTries, 20)
	return w.sleep(ctx, min(d, maxSleep), nil)
}

// sleep waits for d, a ring of bell (if not nil), or ctx.
func (w *waiter) sleep(ctx context.Context, d time.Duration, bell <-chan struct{}) error {
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

func (w *waiter) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// Doorbell wakes a parked consumer. The consumer announces it is parked in
// its line of the queue and re-checks tail before sleeping; the producer
// checks that announcement after each publish and rings only then, so a busy
// link pays one load per batch and an idle consumer costs no CPU. It works
// only when both sides run in this process (the sim backend).
type Doorbell struct {
	ch       chan struct{}
	fallback time.Duration // re-check anyway after this long
	rings    atomic.Uint64
}

// NewDoorbell returns a doorbell for one consumer (of one or more links).
func NewDoorbell() *Doorbell {
	return &Doorbell{ch: make(chan struct{}, 1), fallback: 10 * time.Millisecond}
}

// ring wakes the consumer if it is not already due to wake.
func (d *Doorbell) ring() {
	d.rings.Add(1)
	select {
	case d.ch <- struct{}{}:
	default:
	}
}

// Ring wakes the consumer now, parked or not: for a host that has written
// it something other than a message (a command) and wants it looked at.
func (d *Doorbell) Ring() {
	select {
	case d.ch <- struct{}{}:
	default:
	}
}

// Rings is the number of times the producer rang: how often the consumer
// had parked while messages arrived.
func (d *Doorbell) Rings() uint64 { return d.rings.Load() }

// ParkAll parks one consumer on all its links until a producer publishes to
// any of them, one is closed, bell is rung, max passes, or ctx is done. Every
// link must have bell as its doorbell. It announces "parked" on each link
// and re-checks them all before sleeping, the handshake Consumer.Dequeue
// uses for one link, so no publish is missed; it returns at once when a
// link already has messages or is closed.
func ParkAll(ctx context.Context, bell *Doorbell, max time.Duration, cs ...*Consumer) error {
	for _, c := range cs {
		if c.l.bell.Load() != bell {
			return fmt.Errorf("%w: link %d does not ring this doorbell; SetDoorbell on every link first", ErrMisuse, c.l.cfg.LinkID)
		}
	}
	for _, c := range cs {
		order.StoreRelease32(c.l.parked, 1) // sequentially consistent: before the re-checks below
	}
	defer func() {
		for _, c := range cs {
			order.StoreRelease32(c.l.parked, 0)
		}
	}()
	for _, c := range cs {
		if c.l.Len() != 0 || c.l.Closed() {
			return nil
		}
	}
	var w waiter
	defer w.stop()
	return w.sleep(ctx, max, bell.ch)
}
