package p2pqueue

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ringactor/ringactor/internal/order"
	"github.com/ringactor/ringactor/internal/wait"
)

// Waiting for space or for a message: internal/wait's spin, yield, sleep,
// with a long yield phase (the other side of a link is usually busy on
// another core). A consumer whose link has a Doorbell parks instead of
// sleeping and is woken by the producer.
var linkWait = wait.Policy{Spin: 32, Yield: 256, MinSleep: time.Microsecond, MaxSleep: 500 * time.Microsecond}

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
			return fmt.Errorf("%w: %s does not ring this doorbell; SetDoorbell on every link first", ErrMisuse, c.l.cfg.LinkID.named())
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
	w := wait.Waiter{P: linkWait}
	defer w.Stop()
	return w.Sleep(ctx, max, bell.ch)
}
