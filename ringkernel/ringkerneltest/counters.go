package ringkerneltest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// The loop keeps the link counters the Go producer and consumer keep
// (p2pqueue.Stats), and its busy time: messages of 3 and 5 floats and a
// few that are not whole floats (dead letters) through one out-link
// (RouteOne, gaps closed) and through two by round robin. The in-link's
// bytes out are every payload byte it consumed (the producer's bytes in);
// each out-link's bytes in are its results' payload bytes (what its
// consumer counted out), with one index store per batch at most; and the
// kernel was busy some time (Status.Busy > 0).
func (s *suite) testCountsItsWork(t *testing.T) {
	for _, c := range []struct {
		name  string
		route rk.Route
		outs  int
	}{{"one", rk.RouteOne, 1}, {"round-robin", rk.RouteRoundRobin, 2}} {
		t.Run(c.name, func(t *testing.T) {
			const n = 90
			in := s.newLink(t, 64, 8)
			out := make([]*p2pqueue.Link, c.outs)
			for i := range out {
				out[i] = s.newLink(t, 64, 8)
			}
			dead := make(chan rk.DeadLetter, n)
			k, err := rk.Launch(context.Background(), s.backend(t), rk.Spec{Stage: rk.Stage{Name: "double", Op: "scale", Params: []float32{2}},
				ID: 5, Device: s.device(1), In: []*p2pqueue.Link{in}, Out: out, Route: c.route, OnDeadLetter: func(d rk.DeadLetter) { dead <- d }})
			if err != nil {
				t.Fatal(err)
			}
			if err := k.Activate(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			// Every out-link read at once: a kernel waits for room on all of them.
			ctx := ctxT(t)
			got := make([]uint64, c.outs) // payload bytes received per out-link
			var wg sync.WaitGroup
			for d, l := range out {
				cons, _ := l.Consumer()
				wg.Go(func() {
					var m p2pqueue.Message
					for cons.Dequeue(ctx, &m) == nil {
						got[d] += uint64(len(m.Payload))
					}
				})
			}
			p, _ := in.Producer()
			var sent, results uint64
			for i := 1; i <= n; i++ {
				m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}}
				switch {
				case i%15 == 0:
					m.Payload = []byte{1, 2, 3, 4, 5, 6} // not whole floats: a dead letter
				default:
					m.Payload = kernels.EncodeFloats(nil, make([]float32, 3+2*(i%2)))
					results += uint64(len(m.Payload))
				}
				sent += uint64(len(m.Payload))
				if err := p.Enqueue(ctx, &m); err != nil {
					t.Fatal(err)
				}
			}
			p.Close()
			wg.Wait()
			select {
			case <-k.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("kernel did not end when its in-link closed")
			}
			st := k.Status()
			if st.Processed != n-n/15 || len(dead) != n/15 {
				t.Fatalf("processed %d, %d dead letters; want %d and %d", st.Processed, len(dead), n-n/15, n/15)
			}
			is := in.Stats()
			if is.BytesIn != sent || is.BytesOut != sent || is.Releases == 0 || is.Releases > n {
				t.Errorf("in-link: bytes in %d, out %d (want %d, every payload consumed), releases %d", is.BytesIn, is.BytesOut, sent, is.Releases)
			}
			var all uint64
			for d, l := range out {
				os := l.Stats()
				all += os.BytesIn
				if os.BytesIn != got[d] || os.BytesOut != got[d] || (os.Published > 0) != (os.Publishes > 0) || os.Publishes > os.Published {
					t.Errorf("out-link %d: bytes in %d, out %d (its consumer received %d), publishes %d for %d results", d, os.BytesIn, os.BytesOut, got[d], os.Publishes, os.Published)
				}
			}
			if all != results {
				t.Errorf("out-links: %d result bytes counted, want %d (3 and 5 floats, doubled in place)", all, results)
			}
			if st.Busy <= 0 {
				t.Errorf("busy %v after %d messages: the loop counts its time on batches", st.Busy, st.Processed)
			}
		})
	}
}
