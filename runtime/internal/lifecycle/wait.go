package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/ringactor/ringactor/internal/wait"
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
