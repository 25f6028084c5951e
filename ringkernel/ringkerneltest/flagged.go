package ringkerneltest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// allocFormat makes a link of format f in mapped pinned memory of device
// 0, freed at cleanup.
func (s *suite) allocFormat(t testing.TB, f p2pqueue.Format, capacity uint32, floats int) *p2pqueue.Link {
	return s.allocFormatIn(t, p2pqueue.MappedPinnedMemory, f, capacity, floats)
}

// allocFormatIn makes a link of format f in memory of kind on device 0.
func (s *suite) allocFormatIn(t testing.TB, kind p2pqueue.MemoryKind, f p2pqueue.Format, capacity uint32, floats int) *p2pqueue.Link {
	t.Helper()
	cfg := p2pqueue.ConfigForFormat(capacity, 4*floats, f)
	n, err := cfg.RegionSize()
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.b.Alloc(s.device(0), n, kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.b.Free(r) })
	l, err := p2pqueue.Init(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.Format() != f {
		t.Fatalf("link format %s, want %s", l.Format(), f)
	}
	return l
}

// Flagged links only, written by the loops too: a pipeline (host ingress
// → x*2 → a device-local link → x+1 → host egress, flaggedPipeline) and a
// fan-in into a routed stage (flaggedFanInRouted).
func (s *suite) testFlaggedLinks(t *testing.T) {
	t.Run("pipeline", func(t *testing.T) { s.flaggedPipeline(t, p2pqueue.FormatFlagged) })
	t.Run("fan-in routed", s.flaggedFanInRouted)
}

// A flagged host ingress into a pipeline whose other links are indexed:
// see flaggedPipeline.
func (s *suite) testFlaggedIngress(t *testing.T) {
	s.flaggedPipeline(t, p2pqueue.FormatIndexed)
}

// flaggedPipeline: a flagged host ingress → x*2 → x+1 → host egress, the
// two later links of format rest (a flagged middle link in device memory,
// local to both kernels), small rings so each link wraps many laps, and
// messages of 1 to 8 floats, so a slot's later words keep older laps': every message arrives once, in order, with the right values; a
// message that is not floats is dead-lettered by the first stage and
// leaves no gap; closing the ingress drains both kernels; the counters
// conserve.
func (s *suite) flaggedPipeline(t *testing.T, rest p2pqueue.Format) {
	in := s.allocFormat(t, p2pqueue.FormatFlagged, 16, 8)
	mid, out := s.allocFormat(t, rest, 16, 8), s.allocFormat(t, rest, 16, 8)
	local := []bool{rest == p2pqueue.FormatFlagged}
	if local[0] {
		mid = s.allocFormatIn(t, p2pqueue.DeviceMemory, rest, 16, 8)
	}
	ctx := ctxFor(t, time.Minute)
	var mu sync.Mutex
	var dead []rk.DeadLetter
	onDead := func(d rk.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }
	k1, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "double", Op: "scale", Params: []float32{2}}, ID: 1,
		In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{mid}, OutLocal: local, OnDeadLetter: onDead})
	if err != nil {
		t.Fatal(err)
	}
	k2, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "plus1", Op: "offset", Params: []float32{1}}, ID: 2,
		In: []*p2pqueue.Link{mid}, InLocal: local, Out: []*p2pqueue.Link{out}, OnDeadLetter: onDead})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*rk.Kernel{k1, k2} {
		if err := k.Activate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	send, _ := in.Producer()
	recv, _ := out.Consumer()
	const msgs, bad = 2000, 777 // message bad is 3 bytes: not floats
	value := func(i, j int) float32 { return float32(i*10 + j) }
	go func() {
		batch := make([]p2pqueue.Message, 0, 5)
		for i := 0; i < msgs; {
			batch = batch[:0]
			for ; i < msgs && len(batch) < cap(batch); i++ {
				v := make([]float32, 1+i%8)
				for j := range v {
					v[j] = value(i, j)
				}
				m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i), Type: kernels.TypeFloats}, Payload: kernels.EncodeFloats(nil, v)}
				if i == bad {
					m.Payload = []byte{1, 2, 3}
				}
				batch = append(batch, m)
			}
			if _, err := send.EnqueueBatch(ctx, batch); err != nil {
				return
			}
		}
		send.Close()
	}()
	var m p2pqueue.Message
	for i := range msgs {
		if i == bad {
			continue
		}
		if err := recv.Dequeue(ctx, &m); err != nil {
			t.Fatalf("message %d: %v (stage 1 %+v, stage 2 %+v)", i, err, k1.Status(), k2.Status())
		}
		got, err := kernels.DecodeFloats(nil, m.Payload)
		if err != nil || m.ID != uint64(i) || len(got) != 1+i%8 || m.Origin != 2 {
			t.Fatalf("message %d: id %d origin %d, %d floats, %v", i, m.ID, m.Origin, len(got), err)
		}
		for j, x := range got {
			if want := value(i, j)*2 + 1; x != want {
				t.Fatalf("message %d element %d: %g, want %g", i, j, x, want)
			}
		}
	}
	for _, k := range []*rk.Kernel{k1, k2} {
		if err := k.Terminate(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := recv.Dequeue(ctx, &m); !errors.Is(err, p2pqueue.ErrClosed) {
		t.Fatalf("after the last message: id %d, %v; want the egress closed and drained", m.ID, err)
	}
	s1, s2 := k1.Status(), k2.Status()
	mu.Lock()
	defer mu.Unlock()
	if s1.Processed != msgs-1 || s1.Dropped != 1 || s2.Processed != msgs-1 || s2.Dropped != 0 ||
		len(dead) != 1 || dead[0].ID != bad || dead[0].Code != rk.CodeNotFloats {
		t.Fatalf("stage 1 %+v, stage 2 %+v, dead letters %+v; want message %d alone dead-lettered (not floats)", s1, s2, dead, bad)
	}
	for _, l := range []*p2pqueue.Link{in, mid, out} {
		if st := l.Stats(); st.Published != st.Consumed || st.InFlight != 0 || !st.Closed {
			t.Fatalf("link %v after the drain: %+v", l.Config().LinkID, st)
		}
	}
	if st := mid.Stats(); st.Published != msgs-1 {
		t.Fatalf("middle link published %d, want %d", st.Published, msgs-1)
	}
}

// flaggedFanInRouted: two flagged host ingresses → x*2 (fan-in) → a
// flagged device-local link → x+1 routed round-robin → two flagged host
// egresses; 8-slot rings (many laps, the lazy head at every other slot),
// messages of 1 to 8 floats; one message per ingress is not floats and is
// dead-lettered (a gap the loop closes). Every other message arrives
// once, intact, on one egress, in order per ingress; the egresses share
// the results by turns; the counters and links conserve.
func (s *suite) flaggedFanInRouted(t *testing.T) {
	const perLink, capacity = 600, 8
	ff := p2pqueue.FormatFlagged
	ins := []*p2pqueue.Link{s.allocFormat(t, ff, capacity, 8), s.allocFormat(t, ff, capacity, 8)}
	mid := s.allocFormatIn(t, p2pqueue.DeviceMemory, ff, capacity, 8)
	outs := []*p2pqueue.Link{s.allocFormat(t, ff, capacity, 8), s.allocFormat(t, ff, capacity, 8)}
	ctx := ctxFor(t, time.Minute)
	var mu sync.Mutex
	var dead []rk.DeadLetter
	onDead := func(d rk.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }
	k1, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "double", Op: "scale", Params: []float32{2}}, ID: 1,
		In: ins, Out: []*p2pqueue.Link{mid}, OutLocal: []bool{true}, OnDeadLetter: onDead})
	if err != nil {
		t.Fatal(err)
	}
	k2, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "plus1", Op: "offset", Params: []float32{1}}, ID: 2,
		In: []*p2pqueue.Link{mid}, InLocal: []bool{true}, Out: outs, Route: rk.RouteRoundRobin, OnDeadLetter: onDead})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*rk.Kernel{k1, k2} {
		if err := k.Activate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Ingress src sends ids src, src+2, ...; id bad(src) is 3 bytes.
	bad := func(src int) uint64 { return uint64(2*(perLink/3+src*100) + src) }
	value := func(id uint64, j int) float32 { return float32(id*10 + uint64(j)) }
	var sent sync.WaitGroup
	for src, l := range ins {
		send, err := l.Producer()
		if err != nil {
			t.Fatal(err)
		}
		sent.Add(1)
		go func() {
			defer sent.Done()
			defer send.Close()
			batch := make([]p2pqueue.Message, 0, 3+src)
			for i := 0; i < perLink; {
				batch = batch[:0]
				for ; i < perLink && len(batch) < cap(batch); i++ {
					id := uint64(2*i + src)
					v := make([]float32, 1+int(id%8))
					for j := range v {
						v[j] = value(id, j)
					}
					m := p2pqueue.Message{Header: p2pqueue.Header{ID: id, Type: kernels.TypeFloats}, Payload: kernels.EncodeFloats(nil, v)}
					if id == bad(src) {
						m.Payload = []byte{1, 2, 3}
					}
					batch = append(batch, m)
				}
				if _, err := send.EnqueueBatch(ctx, batch); err != nil {
					return
				}
			}
		}()
	}
	got := make([][]uint64, len(outs))
	errs := make([]error, len(outs))
	var recvd sync.WaitGroup
	for o, l := range outs {
		recv, err := l.Consumer()
		if err != nil {
			t.Fatal(err)
		}
		recvd.Add(1)
		go func() {
			defer recvd.Done()
			var m p2pqueue.Message
			for {
				if err := recv.Dequeue(ctx, &m); err != nil {
					if !errors.Is(err, p2pqueue.ErrClosed) {
						errs[o] = err
					}
					return
				}
				v, err := kernels.DecodeFloats(nil, m.Payload)
				if err != nil || len(v) != 1+int(m.ID%8) || m.Origin != 2 {
					errs[o] = fmt.Errorf("message %d: origin %d, %d floats, %v", m.ID, m.Origin, len(v), err)
					return
				}
				for j, x := range v {
					if want := value(m.ID, j)*2 + 1; x != want {
						errs[o] = fmt.Errorf("message %d element %d: %g, want %g", m.ID, j, x, want)
						return
					}
				}
				got[o] = append(got[o], m.ID)
			}
		}()
	}
	sent.Wait()
	for _, k := range []*rk.Kernel{k1, k2} { // each drains its closed in-links, then closes its out-links
		if err := k.Terminate(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	recvd.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("%v (stage 1 %+v, stage 2 %+v)", err, k1.Status(), k2.Status())
		}
	}
	seen := map[uint64]bool{}
	for o, ids := range got {
		last := [2]int64{-1, -1}
		for _, id := range ids {
			if seen[id] || int64(id) <= last[id%2] {
				t.Fatalf("egress %d: message %d twice or out of its ingress's order (%v)", o, id, ids)
			}
			seen[id], last[id%2] = true, int64(id)
		}
	}
	const total = 2 * perLink
	if len(seen) != total-2 || seen[bad(0)] || seen[bad(1)] {
		t.Fatalf("%d messages arrived, want %d: all but %d and %d", len(seen), total-2, bad(0), bad(1))
	}
	if d := len(got[0]) - len(got[1]); d < -1 || d > 1 {
		t.Fatalf("round-robin egresses got %d and %d messages", len(got[0]), len(got[1]))
	}
	s1, s2 := k1.Status(), k2.Status()
	mu.Lock()
	defer mu.Unlock()
	if s1.Processed != total-2 || s1.Dropped != 2 || s2.Processed != total-2 || s2.Dropped != 0 || len(dead) != 2 {
		t.Fatalf("stage 1 %+v, stage 2 %+v, dead letters %+v; want messages %d and %d alone dead-lettered", s1, s2, dead, bad(0), bad(1))
	}
	for _, d := range dead {
		if d.Code != rk.CodeNotFloats || (d.ID != bad(0) && d.ID != bad(1)) {
			t.Fatalf("dead letter %+v; want %d or %d, not floats", d, bad(0), bad(1))
		}
	}
	for _, l := range append(append(ins, mid), outs...) {
		if st := l.Stats(); st.Published != st.Consumed || st.InFlight != 0 || !st.Closed {
			t.Fatalf("link %v after the drain: %+v", l.Config().LinkID, st)
		}
	}
	if st := mid.Stats(); st.Published != total-2 {
		t.Fatalf("middle link published %d, want %d", st.Published, total-2)
	}
}
