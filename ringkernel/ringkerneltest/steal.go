package ringkerneltest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// A victim forwards queued messages to a thief over their dedicated link:
// the victim stays the only consumer of its in-link, nothing is lost or
// duplicated, and both kernels' counters conserve.
func (s *suite) testStealForwardsQueuedMessages(t *testing.T) {
	ctx := ctxT(t)
	b := s.backend(t)
	vin, tin, steal := s.newLink(t, 64, 4), s.newLink(t, 64, 4), s.newLink(t, 64, 4)
	vout, tout := s.newLink(t, 64, 4), s.newLink(t, 64, 4)
	victim, err := rk.Launch(ctx, b, rk.Spec{Stage: rk.Stage{Name: "victim", Op: "identity"}, ID: 1, Device: s.device(0),
		In: []*p2pqueue.Link{vin}, Out: []*p2pqueue.Link{vout}, StealTo: []*p2pqueue.Link{steal}})
	if err != nil {
		t.Fatal(err)
	}
	thief, err := rk.Launch(ctx, b, rk.Spec{Stage: rk.Stage{Name: "thief", Op: "identity"}, ID: 2, Device: s.device(1),
		In: []*p2pqueue.Link{tin, steal}, Out: []*p2pqueue.Link{tout}})
	if err != nil {
		t.Fatal(err)
	}
	// The victim is not activated yet: its messages queue.
	send, _ := vin.Producer()
	for i := range 30 {
		m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: make([]byte, 4)}
		if err := send.Enqueue(ctx, &m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := victim.Steal(ctx, 5, 1); !errors.Is(err, rk.ErrBadSteal) {
		t.Fatalf("steal to a link it does not have: %v", err)
	}
	if _, err := victim.Steal(ctx, 0, 0); !errors.Is(err, rk.ErrBadSteal) {
		t.Fatalf("steal of nothing: %v", err)
	}
	n, err := victim.Steal(ctx, 12, 0)
	if err != nil || n != 12 {
		t.Fatalf("steal 12 of 30 queued: moved %d, %v", n, err)
	}
	st := victim.Status()
	if st.Stolen != 12 || st.Queued() != 18 || st.In() != st.Processed+st.Dropped+st.Stolen+st.Queued() {
		t.Fatalf("victim after the steal: %+v", st)
	}
	for _, k := range []*rk.Kernel{victim, thief} {
		if err := k.Activate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[uint64]int{}
	for _, l := range []*p2pqueue.Link{vout, tout} {
		c, _ := l.Consumer()
		want := map[*p2pqueue.Link]int{vout: 18, tout: 12}[l]
		var m p2pqueue.Message
		for range want {
			if err := c.Dequeue(ctx, &m); err != nil {
				t.Fatal(err)
			}
			seen[m.ID]++
		}
	}
	for i := range 30 {
		if seen[uint64(i)] != 1 {
			t.Fatalf("message %d seen %d times", i, seen[uint64(i)])
		}
	}
	// Draining: the victim closes its steal link when told to stop, so the
	// thief, which reads it, can drain to the end too.
	send.Close()
	tsend, _ := tin.Producer()
	tsend.Close()
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 2)
	for _, k := range []*rk.Kernel{thief, victim} {
		go func() { errc <- k.Terminate(stop, true) }()
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := victim.Steal(ctx, 1, 0); !errors.Is(err, rk.ErrTransition) {
		t.Fatalf("steal from a terminated kernel: %v", err)
	}
	vs, ts := victim.Status(), thief.Status()
	if vs.Processed != 18 || ts.Processed != 12 || vs.Dropped+ts.Dropped != 0 {
		t.Fatalf("victim %+v, thief %+v", vs, ts)
	}
	conserved(t, vs)
	conserved(t, ts)
}
