package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/ringactor/ringactor/internal/wait"
	"github.com/ringactor/ringactor/runtime/internal/account"
)

// FaultTeardown bounds the teardown after a fault.
const FaultTeardown = 30 * time.Second

// Teardown runs close, bounded by FaultTeardown, in a goroutine of its
// own: a fault's teardown without drain, which does not hold up the
// watchdog that declared the fault.
func Teardown(close func(ctx context.Context)) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), FaultTeardown)
		defer cancel()
		close(ctx)
	}()
}

// AwaitPump waits for the egress pump to end (done is closed once it has
// delivered the last result). When ctx ends first it stops the pump
// (stop), waits for it, and returns an error saying results were cut
// short.
func AwaitPump(ctx context.Context, done <-chan struct{}, stop func()) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		stop()
		<-done
		return fmt.Errorf("ringactor: results not all delivered: %w", ctx.Err())
	}
}

// Idle polls idle (with IdleWait) until it reports true, or until ctx
// ends, and returns ctx's error then.
func Idle(ctx context.Context, idle func() bool) error {
	w := wait.Waiter{P: IdleWait}
	defer w.Stop()
	for !idle() {
		if err := w.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// IdleWait is how Idle polls: no spin, yields first, then sleeps up to
// 1 ms.
var IdleWait = wait.Policy{Yield: 16, MinSleep: 10 * time.Microsecond, MaxSleep: time.Millisecond}

// IdleAccount is Idle until read's InFlight is 0; the error at ctx's end
// names what (`pipeline "p"`) and its account then.
func IdleAccount(ctx context.Context, what string, read func() account.Totals) error {
	if err := Idle(ctx, func() bool { return read().InFlight == 0 }); err != nil {
		t := read()
		return fmt.Errorf("ringactor: %s still had %d messages in flight (%d sent, %d delivered, %d dead-lettered): %w",
			what, t.InFlight, t.Sent, t.Delivered, t.DeadLettered, err)
	}
	return nil
}

// Dog runs a pipeline's watchdog goroutine: Start it once; Stop ends it
// and waits for it.
type Dog struct {
	stop context.CancelFunc
	done chan struct{}
}

// NewDog is a watchdog not started.
func NewDog() *Dog { return &Dog{done: make(chan struct{})} }

// Start runs watch in a goroutine until Stop; with on false (the
// watchdog turned off) it runs nothing, and Done is closed at once.
func (d *Dog) Start(on bool, watch func(ctx context.Context)) {
	if !on {
		close(d.done)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.stop = cancel
	go func() {
		defer close(d.done)
		watch(ctx)
	}()
}

// Stop ends a started watchdog and waits until it has returned.
func (d *Dog) Stop() {
	if d.stop != nil {
		d.stop()
		<-d.done
	}
}

// Done is closed once the watchdog has returned, or was started off.
func (d *Dog) Done() <-chan struct{} { return d.done }
