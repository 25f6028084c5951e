package ringkerneltest

import (
	"errors"
	"testing"

	"github.com/ringactor/ringactor/barrier"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// newFlags makes a flag array of n participants in portable pinned memory
// (every device's kernels and the host reach it), freed at cleanup, after
// the kernels launched later have ended (their cleanups run first).
func (s *suite) newFlags(t *testing.T, n int, names ...string) *barrier.Flags {
	t.Helper()
	size, err := barrier.Size(n)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.b.Alloc(s.device(0), size, p2pqueue.PortablePinnedMemory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.b.Free(r) })
	var opts []barrier.Option
	if len(names) > 0 {
		opts = append(opts, barrier.WithNames(names...))
	}
	f, err := barrier.Init(r, n, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A kernel at a barrier (CmdBarrier, Kernel.ArriveAt) takes the messages
// sent before the mark, arrives after publishing them, and then takes
// none until the other participant (the host, here) arrives, while it
// keeps beating; then it goes on. A terminate ends a wait.
func (s *suite) testBarrierArriveAndWait(t *testing.T) {
	ctx := ctxT(t)
	f := s.newFlags(t, 2, "kernel", "host")
	r := s.launch(t, rk.Stage{Name: "phased", Op: "identity"}, 64, 4, false)
	host, err := f.Participant(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.k.ArriveAt(ctx, f, 2, 1, r.in, 0); !errors.Is(err, rk.ErrBadBarrier) {
		t.Fatalf("ArriveAt participant 2 of 2: %v, want ErrBadBarrier", err)
	}
	if err := r.k.ArriveAt(ctx, f, 1, 1, r.in, 0); !errors.Is(err, rk.ErrBadBarrier) || !errors.Is(err, barrier.ErrClaimed) {
		t.Fatalf("ArriveAt as the host's claimed participant: %v, want ErrBadBarrier wrapping ErrClaimed", err)
	}
	if err := r.k.ArriveAt(ctx, f, 0, 1, r.out, 0); !errors.Is(err, rk.ErrBadBarrier) {
		t.Fatalf("ArriveAt counting a link the kernel does not read: %v, want ErrBadBarrier", err)
	}
	for i := range 3 { // phase 1
		r.sendFloats(uint64(i), []float32{float32(i)}, 0)
	}
	at := r.in.Stats().Published
	if err := r.k.ArriveAt(ctx, f, 0, 1, r.in, at); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 7; i++ { // phase 2, queued behind the mark
		r.sendFloats(uint64(i), []float32{float32(i)}, 0)
	}
	// All seven are queued before the kernel takes any: a batch may not
	// cross the mark.
	if err := r.k.Activate(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if h, _ := r.recvFloats(); h.ID != uint64(i) {
			t.Fatalf("phase 1: message %d came out %d-th", h.ID, i)
		}
	}
	eventually(t, "the kernel's arrival", func() bool { g, _ := f.Generation(0); return g == 1 })
	if err := r.k.ArriveAt(ctx, f, 0, 1, r.in, at); !errors.Is(err, rk.ErrBadBarrier) {
		t.Fatalf("ArriveAt at the same generation again: %v, want ErrBadBarrier", err)
	}
	// Waiting: the loop beats on (three fresh heartbeats) and takes nothing.
	for range 3 {
		hb := r.k.Counters().Heartbeat
		eventually(t, "a heartbeat while waiting", func() bool { return r.k.Counters().Heartbeat != hb })
	}
	if st := r.k.Status(); st.Processed != 3 || st.Queued() != 4 {
		t.Fatalf("waiting at the barrier: processed %d, queued %d; want 3 and 4 (phase 2 held back)", st.Processed, st.Queued())
	}
	if err := host.ArriveAndWait(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 7; i++ {
		if h, _ := r.recvFloats(); h.ID != uint64(i) {
			t.Fatalf("phase 2: message %d came out %d-th", h.ID, i)
		}
	}
	// Generation 2: the mark is already passed, so the kernel arrives at
	// once and waits; a terminate without drain ends the wait, and what
	// was sent meanwhile is dead-lettered.
	at = r.in.Stats().Published
	if err := r.k.ArriveAt(ctx, f, 0, 2, r.in, at); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the kernel's second arrival", func() bool { g, _ := f.Generation(0); return g == 2 })
	r.sendFloats(7, []float32{7}, 0)
	r.sendFloats(8, []float32{8}, 0)
	r.send.Close()
	if err := r.k.Terminate(ctx, false); err != nil {
		t.Fatalf("terminate while waiting at a barrier: %v", err)
	}
	st := r.k.Status()
	if st.State != rk.Terminated || st.Processed != 7 || st.Dropped != 2 {
		t.Fatalf("after terminate at the barrier: %+v; want terminated, 7 processed, 2 dropped", st)
	}
	conserved(t, st)
	if m := f.Missing(2); len(m) != 1 || m[0] != 1 {
		t.Fatalf("missing at generation 2: %v, want the host (1)", m)
	}
}
