package nodeproc_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// TestRemoteStallRejoin stops node b (SIGSTOP) while messages stream
// through it, for 1 s and for 5 s, and resumes it: whether or not the
// origin gave b up meanwhile (that depends on timing), every message ends
// exactly once, Rejoin brings b back without restarting it, and messages
// sent after Rejoin are delivered.
func TestRemoteStallRejoin(t *testing.T) {
	for _, stall := range []time.Duration{time.Second, 5 * time.Second} {
		t.Run(stall.String(), func(t *testing.T) { stallRejoin(t, stall) })
	}
}

func stallRejoin(t *testing.T, stall time.Duration) {
	b := startB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l := newLedger(t)
	spec := guide("remote-stall-" + stall.String())
	spec.Deliver = ra.Sink{Func: l.result}
	spec.OnDeadLetter = l.dead
	cp, err := origin.Build(ctx, spec, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // a failed run must not leave its pipeline for the next (-count=N)
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		cp.Close(cctx, false)
	}()
	const batch = 100
	next := uint64(1)
	send := func(k int) {
		t.Helper()
		for range k {
			_, err := cp.SendBatch(ctx, batchOf(next, batch, 8))
			next += batch
			if err != nil && !errors.Is(err, cluster.ErrRemoteUnreachable) {
				t.Fatal(err)
			}
		}
	}
	// within bounds waits up to a minute for cond.
	within := func(what string, cond func() bool) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		for !cond() {
			select {
			case <-wctx.Done():
				d, ended := l.count()
				t.Fatalf("%s: not in a minute (stats %+v; ledger %d delivered, %d ended, dead %v)", what, cp.Stats(), d, ended, l.reasons)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}

	send(20)
	if err := b.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			b.Resume()
		}
	}()
	send(20) // out on b while it is stopped
	time.Sleep(stall - time.Since(paused))
	if err := b.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	resumedAt := time.Now()
	// Whatever was out on b comes back, or was dead-lettered if the
	// origin gave b up; b is a member again either way.
	within("the account settles", func() bool { return cp.Stats().InFlight == 0 })
	within("node b is a member again", func() bool { return slices.Contains(origin.Members(), "b") })
	down := cp.Unreachable()
	start := time.Now()
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	err = cp.Rejoin(rctx)
	rcancel()
	if err != nil {
		t.Fatalf("Rejoin after a %v stall: %v", stall, err)
	}
	if u := cp.Unreachable(); len(u) != 0 {
		t.Fatalf("still unreachable after Rejoin: %v", u)
	}
	t.Logf("stall %v: unreachable at resume+settle %v; Rejoin took %v, %v after the resume", stall, down,
		time.Since(start).Round(time.Millisecond), time.Since(resumedAt).Round(time.Millisecond))

	before, _ := l.count()
	send(20)
	within("the messages sent after Rejoin end", func() bool { _, ended := l.count(); return uint64(ended) == next-1 })
	if after, _ := l.count(); after-before != 20*batch {
		t.Errorf("after Rejoin %d of %d messages delivered (dead %v)", after-before, 20*batch, l.reasons)
	}
	if err := cp.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	st := cp.Stats()
	d, ended := l.count()
	t.Logf("sent %d: delivered %d, dead %d %v, late %d", st.Sent, st.Delivered, st.DeadLettered, l.reasons, cp.Late())
	if st.Sent != next-1 || uint64(ended) != st.Sent || st.Sent != st.Delivered+st.DeadLettered || st.InFlight != 0 || st.Delivered != uint64(d) {
		t.Errorf("sent %d (ids %d), ended %d, delivered %d (ledger %d) + dead %d, in flight %d: want every message ended once",
			st.Sent, next-1, ended, st.Delivered, d, st.DeadLettered, st.InFlight)
	}
	for reason := range l.reasons {
		if reason != ra.ReasonRemoteUnreachable.String() {
			t.Errorf("dead letters for %q: a stall leaves only %q", reason, ra.ReasonRemoteUnreachable)
		}
	}
}
