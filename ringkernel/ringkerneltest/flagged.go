package ringkerneltest

import (
	"errors"
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
	t.Helper()
	cfg := p2pqueue.ConfigForFormat(capacity, 4*floats, f)
	n, err := cfg.RegionSize()
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.b.Alloc(s.device(0), n, p2pqueue.MappedPinnedMemory)
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

// A pipeline over flagged links only (host ingress → x*2 → x+1 → host
// egress): see flaggedPipeline.
func (s *suite) testFlaggedLinks(t *testing.T) {
	s.flaggedPipeline(t, p2pqueue.FormatFlagged)
}

// A flagged host ingress into a pipeline whose other links are indexed
// (what a device loop reads but does not yet write): see flaggedPipeline.
func (s *suite) testFlaggedIngress(t *testing.T) {
	s.flaggedPipeline(t, p2pqueue.FormatIndexed)
}

// flaggedPipeline: a flagged host ingress → x*2 → x+1 → host egress, the
// two later links of format rest, small rings so each link wraps many
// laps: every message arrives once, in order, with the right values; a
// message that is not floats is dead-lettered by the first stage and
// leaves no gap; closing the ingress drains both kernels; the counters
// conserve.
func (s *suite) flaggedPipeline(t *testing.T, rest p2pqueue.Format) {
	in := s.allocFormat(t, p2pqueue.FormatFlagged, 16, 8)
	mid, out := s.allocFormat(t, rest, 16, 8), s.allocFormat(t, rest, 16, 8)
	ctx := ctxFor(t, time.Minute)
	var mu sync.Mutex
	var dead []rk.DeadLetter
	onDead := func(d rk.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }
	k1, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "double", Op: "scale", Params: []float32{2}}, ID: 1,
		In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{mid}, OnDeadLetter: onDead})
	if err != nil {
		t.Fatal(err)
	}
	k2, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "plus1", Op: "offset", Params: []float32{1}}, ID: 2,
		In: []*p2pqueue.Link{mid}, Out: []*p2pqueue.Link{out}, OnDeadLetter: onDead})
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
