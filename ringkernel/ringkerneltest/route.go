package ringkerneltest

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// routed launches a kernel of op over one in-link and outs out-links with
// route r, sends msgs (message i has id i+1), closes the in-link, waits
// for the kernel to end by itself, and returns what each out-link got
// and the dead letters.
func (s *suite) routed(t *testing.T, st rk.Stage, r rk.Route, keyOff, outs int, msgs [][]float32) ([][]p2pqueue.Message, []rk.DeadLetter, rk.Status) {
	t.Helper()
	ms := make([]p2pqueue.Message, len(msgs))
	for i, v := range msgs {
		ms[i] = p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i + 1)}, Payload: kernels.EncodeFloats(nil, v)}
	}
	return s.routedMsgs(t, st, r, keyOff, outs, ms)
}

// routedMsgs is routed for messages as they are, headers and all.
func (s *suite) routedMsgs(t *testing.T, st rk.Stage, r rk.Route, keyOff, outs int, msgs []p2pqueue.Message) ([][]p2pqueue.Message, []rk.DeadLetter, rk.Status) {
	t.Helper()
	in := s.newLink(t, 256, 16) // 64 bytes: a Keyed fits
	out := make([]*p2pqueue.Link, outs)
	for i := range out {
		out[i] = s.newLink(t, 256, 16)
	}
	var dead []rk.DeadLetter
	deadCh := make(chan rk.DeadLetter, len(msgs))
	k, err := rk.Launch(context.Background(), s.backend(t), rk.Spec{Stage: st, ID: 3, Device: s.device(1), In: []*p2pqueue.Link{in},
		Out: out, Route: r, KeyOffset: keyOff, OnDeadLetter: func(d rk.DeadLetter) { deadCh <- d }})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Activate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	p, _ := in.Producer()
	for i := range msgs {
		if err := p.Enqueue(ctxT(t), &msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	// Every out-link read at once: a kernel waits for room on all of them.
	got := make([][]p2pqueue.Message, outs)
	var wg sync.WaitGroup
	ctx := ctxT(t)
	for d, l := range out {
		c, _ := l.Consumer()
		wg.Go(func() {
			for {
				var m p2pqueue.Message
				if err := c.Dequeue(ctx, &m); err != nil {
					return // closed and drained: the kernel ended (or the test timed out, which the checks then show)
				}
				got[d] = append(got[d], m)
			}
		})
	}
	wg.Wait()
	select {
	case <-k.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("kernel did not end when its in-link closed")
	}
	close(deadCh)
	for d := range deadCh {
		dead = append(dead, d)
	}
	return got, dead, k.Status()
}

func ids(ms []p2pqueue.Message) []uint64 {
	var v []uint64
	for _, m := range ms {
		v = append(v, m.ID)
	}
	return v
}

func payload(t *testing.T, m p2pqueue.Message) []float32 {
	t.Helper()
	v, err := kernels.DecodeFloats(nil, m.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Every route sends each result where its table says, in order per link,
// on the sim loop and the device loop alike; dead letters in the batch
// leave no gap and take no turn.
func (s *suite) testRoutes(t *testing.T) {
	const n = 300
	msgs := make([][]float32, n)
	for i := range msgs {
		// Every 7th message is negative: sqrt dead-letters it.
		x := float32(i)
		if i%7 == 3 {
			x = -1
		}
		msgs[i] = []float32{x * x, x, float32(i % 5)}
		if i%7 == 3 {
			msgs[i][0] = -1
		}
	}
	good := func(i int) bool { return i%7 != 3 }
	sqrtOf := func(i int) []float32 {
		v := msgs[i]
		return []float32{float32(math.Sqrt(float64(v[0]))), float32(math.Sqrt(float64(v[1]))), float32(math.Sqrt(float64(v[2])))}
	}
	check := func(t *testing.T, got [][]p2pqueue.Message, dead []rk.DeadLetter, st rk.Status, want func(i int) []int) {
		t.Helper()
		wantIDs := make([][]uint64, len(got))
		for i := range n {
			if good(i) {
				for _, d := range want(i) {
					wantIDs[d] = append(wantIDs[d], uint64(i+1))
				}
			}
		}
		for d := range got {
			if !slices.Equal(ids(got[d]), wantIDs[d]) {
				t.Fatalf("out-link %d got ids %v\nwant %v", d, ids(got[d]), wantIDs[d])
			}
			for _, m := range got[d] {
				if m.Origin != 3 {
					t.Fatalf("message %d: origin %d, want 3", m.ID, m.Origin)
				}
				if v, w := payload(t, m), sqrtOf(int(m.ID-1)); !slices.Equal(v, w) {
					t.Fatalf("message %d on out-link %d: %v, want %v", m.ID, d, v, w)
				}
			}
		}
		bad := 0
		for i := range n {
			if !good(i) {
				bad++
			}
		}
		if len(dead) != bad || st.Dropped != uint64(bad) || st.Processed != uint64(n-bad) {
			t.Fatalf("%d dead letters, status %+v; want %d dead and %d processed", len(dead), st, bad, n-bad)
		}
		conserved(t, st)
	}
	st := rk.Stage{Name: "sqrt", Op: "sqrt"}
	t.Run("all", func(t *testing.T) {
		got, dead, s := s.routed(t, st, rk.RouteAll, 0, 3, msgs)
		check(t, got, dead, s, func(int) []int { return []int{0, 1, 2} })
	})
	t.Run("round-robin", func(t *testing.T) {
		got, dead, s := s.routed(t, st, rk.RouteRoundRobin, 0, 3, msgs)
		turn := map[int]int{}
		k := 0
		for i := range n {
			if good(i) {
				turn[i] = k % 3
				k++
			}
		}
		check(t, got, dead, s, func(i int) []int { return []int{turn[i]} })
	})
	t.Run("key", func(t *testing.T) {
		got, dead, s := s.routed(t, st, rk.RouteKey, 8, 4, msgs) // the key: element 2, i%5 through sqrt
		check(t, got, dead, s, func(i int) []int {
			return []int{int(rk.KeyHash(math.Float32bits(sqrtOf(i)[2])) % 4)}
		})
		// Each key reached one out-link.
		at := map[float32]int{}
		for d := range got {
			for _, m := range got[d] {
				k := payload(t, m)[2]
				if prev, ok := at[k]; ok && prev != d {
					t.Fatalf("key %v reached out-links %d and %d", k, prev, d)
				}
				at[k] = d
			}
		}
	})
	t.Run("all at the out-link limit", func(t *testing.T) {
		got, dead, s := s.routed(t, st, rk.RouteAll, 0, rk.MaxDeviceOutLinks, msgs)
		check(t, got, dead, s, func(int) []int {
			v := make([]int, rk.MaxDeviceOutLinks)
			for d := range v {
				v[d] = d
			}
			return v
		})
	})
}

// RoutePort sends each result where the op's port says (branch: element 0
// below the threshold to port 0, else 1).
func (s *suite) testRoutePort(t *testing.T) {
	msgs := make([][]float32, 200)
	for i := range msgs {
		msgs[i] = []float32{float32(i % 10), float32(i)}
	}
	got, dead, st := s.routed(t, rk.Stage{Name: "branch", Op: "branch", Params: []float32{5}}, rk.RoutePort, 0, 2, msgs)
	if len(dead) != 0 || st.Processed != 200 {
		t.Fatalf("dead %v, status %+v", dead, st)
	}
	for d := range got {
		var want []uint64
		for i, v := range msgs {
			if (v[0] >= 5) == (d == 1) {
				want = append(want, uint64(i+1))
			}
		}
		if !slices.Equal(ids(got[d]), want) {
			t.Fatalf("port %d got %v, want %v", d, ids(got[d]), want)
		}
		for _, m := range got[d] {
			if v := payload(t, m); !slices.Equal(v, msgs[m.ID-1]) {
				t.Fatalf("message %d: %v, want it unchanged, %v", m.ID, v, msgs[m.ID-1])
			}
		}
	}
}

// A result without a key at the key offset is dead-lettered as a route
// error, not routed somewhere arbitrary; the rest still go.
func (s *suite) testRouteKeyMissingDeadLetters(t *testing.T) {
	msgs := [][]float32{{1, 2, 3}, {1}, {4, 5, 6}, {}}
	got, dead, st := s.routed(t, rk.Stage{Name: "id", Op: "identity"}, rk.RouteKey, 8, 2, msgs)
	delivered := len(got[0]) + len(got[1])
	if delivered != 2 || len(dead) != 2 || st.Dropped != 2 || st.Errors != 0 {
		t.Fatalf("%d delivered, dead %v, status %+v; want 2 and 2, counted as dropped, not as stage errors", delivered, dead, st)
	}
	for _, d := range dead {
		if d.Reason != rk.ReasonRoute || d.Code != rk.CodeNoKey || (d.ID != 2 && d.ID != 4) {
			t.Fatalf("dead letter %+v (%v), want messages 2 and 4 with a route error", d, d.Err)
		}
	}
	conserved(t, st)
}
