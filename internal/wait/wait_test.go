package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The phases come in order, a done ctx ends any of them, and a bell ends a
// sleep before its time.
func TestPhasesCtxAndBell(t *testing.T) {
	w := Waiter{P: Policy{Spin: 8, Yield: 4, MinSleep: time.Microsecond, MaxSleep: 10 * time.Microsecond}}
	defer w.Stop()
	ctx := context.Background()
	for i := range 12 {
		if w.Sleeping() {
			t.Fatalf("step %d: sleeping before spin and yield are done", i)
		}
		if err := w.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !w.Sleeping() {
		t.Fatal("not sleeping after spin and yield")
	}
	if err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	w.Reset()
	if w.Sleeping() {
		t.Fatal("Reset did not start over")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		err = w.Wait(done)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("20 steps with a done ctx: %v", err)
	}
	bell := make(chan struct{}, 1)
	bell <- struct{}{}
	if err := w.Sleep(ctx, time.Hour, bell); err != nil {
		t.Fatalf("a rung bell: %v", err)
	}
}
