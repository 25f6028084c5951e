package nodeproc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// bigGuide is the guide's pipeline on nodes a, b, a with slots that take
// messages past the codec's limit, so that the link, not a slot, is what
// refuses one.
func bigGuide(name string, l *ledger) ra.PipelineSpec {
	spec := guide(name)
	for i := range spec.Stages {
		spec.Stages[i].SlotSize = 6 << 20
		spec.Stages[i].Capacity = 4
	}
	spec.Deliver = ra.Sink{Func: l.result}
	spec.OnDeadLetter = l.dead
	return spec
}

// waitEnded waits until the ledger holds n ended messages.
func waitEnded(ctx context.Context, t *testing.T, l *ledger, n int) {
	t.Helper()
	for {
		if _, ended := l.count(); ended >= n {
			return
		}
		select {
		case <-ctx.Done():
			d, ended := l.count()
			t.Fatalf("%d of %d messages ended (%d delivered, dead %v): %v", ended, n, d, l.reasons, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestRemoteBigMessages sends messages of up to the codec's limit (4 MiB)
// through a stage on node b, several to a batch: every one arrives with its
// contents, a larger one is dead-lettered "oversize payload" at the sender,
// and the link lives on (b stays reachable, a small message still arrives).
func TestRemoteBigMessages(t *testing.T) {
	startB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := newLedger(t)
	var errs []error
	spec := bigGuide("remote-big", l)
	spec.OnDeadLetter = func(d ra.DeadLetter) {
		l.mu.Lock()
		errs = append(errs, d.Err)
		l.mu.Unlock()
		l.dead(d)
	}
	cp, err := origin.Build(ctx, spec, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	next, sent := uint64(1), 0
	send := func(n, floats int) {
		t.Helper()
		start := time.Now()
		if _, err := cp.SendBatch(ctx, batchOf(next, n, floats)); err != nil {
			t.Fatal(err)
		}
		next += uint64(n)
		sent += n
		waitEnded(ctx, t, l, sent)
		t.Logf("%d messages of %g MiB: ended in %v", n, float64(4*floats)/(1<<20), time.Since(start).Round(time.Millisecond))
	}
	for _, c := range []struct{ n, floats int }{{20, 1 << 15}, {20, 1 << 17}, {8, 1 << 18}, {8, 1 << 19}, {8, cluster.MaxFloats}} {
		send(c.n, c.floats)
	}
	if d, ended := l.count(); d != ended {
		t.Fatalf("%d of %d messages up to MaxFloats delivered; dead: %v", d, ended, l.reasons)
	}
	send(1, cluster.MaxFloats+1<<18) // 5 MiB: refused at the sender
	if l.reasons[ra.ReasonOversize.String()] != 1 || !errors.Is(errs[0], cluster.ErrNotEncodable) {
		t.Fatalf("a 5 MiB message: dead %v (%v), want one %q wrapping ErrNotEncodable", l.reasons, errs, ra.ReasonOversize)
	}
	send(4, 8) // the link lives on
	if u := cp.Unreachable(); len(u) != 0 {
		t.Fatalf("node b is marked unreachable after big messages: %v", u)
	}
	if err := cp.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	st := cp.Stats()
	d, ended := l.count()
	if st.Sent != uint64(sent) || ended != sent || st.Delivered != uint64(d) || d != sent-1 || st.DeadLettered != 1 || st.InFlight != 0 {
		t.Fatalf("sent %d delivered %d dead %d in flight %d (ledger: %d delivered, %d ended, dead %v): want %d sent, all but the 5 MiB one delivered",
			st.Sent, st.Delivered, st.DeadLettered, st.InFlight, d, ended, l.reasons, sent)
	}
}
