package ringkerneltest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// rig is one kernel between a host producer and a host consumer.
type rig struct {
	t    *testing.T
	k    *rk.Kernel
	in   *p2pqueue.Link
	out  *p2pqueue.Link
	send *p2pqueue.Producer
	recv *p2pqueue.Consumer

	mu    sync.Mutex
	dead  []rk.DeadLetter
	trace []rk.TraceRecord
}

// launch starts stage between fresh links of capacity slots holding floats
// float32s, activated unless told otherwise.
func (s *suite) launch(t *testing.T, st rk.Stage, capacity uint32, floats int, activate bool) *rig {
	t.Helper()
	r := &rig{t: t, in: s.newLink(t, capacity, floats), out: s.newLink(t, capacity, floats)}
	var err error
	r.k, err = rk.Launch(context.Background(), s.b, rk.Spec{
		Stage: st, ID: 7, Device: s.device(1), In: []*p2pqueue.Link{r.in}, Out: []*p2pqueue.Link{r.out},
		OnDeadLetter: func(d rk.DeadLetter) { r.mu.Lock(); r.dead = append(r.dead, d); r.mu.Unlock() },
		OnTrace:      func(tr rk.TraceRecord) { r.mu.Lock(); r.trace = append(r.trace, tr); r.mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.k.Terminate(ctx, false); err != nil && r.k.Status().State != rk.Faulted {
			t.Errorf("cleanup terminate: %v", err)
		}
	})
	if r.send, err = r.in.Producer(); err != nil {
		t.Fatal(err)
	}
	if r.recv, err = r.out.Consumer(); err != nil {
		t.Fatal(err)
	}
	if activate {
		if err := r.k.Activate(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (r *rig) sendFloats(id uint64, v []float32, flags p2pqueue.Flags) {
	r.t.Helper()
	m := p2pqueue.Message{Header: p2pqueue.Header{ID: id, Flags: flags}, Payload: kernels.EncodeFloats(nil, v)}
	if err := r.send.Enqueue(ctxT(r.t), &m); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) recvFloats() (p2pqueue.Header, []float32) {
	r.t.Helper()
	var m p2pqueue.Message
	if err := r.recv.Dequeue(ctxT(r.t), &m); err != nil {
		r.t.Fatal(err)
	}
	if m.Origin != 7 {
		r.t.Fatalf("message %d: origin %d, want the stage id 7", m.ID, m.Origin)
	}
	v, err := kernels.DecodeFloats(nil, m.Payload)
	if err != nil {
		r.t.Fatal(err)
	}
	return m.Header, v
}

func (r *rig) deadLetters() []rk.DeadLetter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rk.DeadLetter(nil), r.dead...)
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// conserves reports whether in = processed + dropped + stolen + queued.
func conserves(st rk.Status) bool {
	return st.In() == st.Processed+st.Dropped+st.Stolen+st.Queued()
}

// conserved checks in = processed + dropped + stolen + queued on a status
// read once the kernel is still (ended, or every message it was sent
// accounted and its head released: see settled).
func conserved(t *testing.T, st rk.Status) {
	t.Helper()
	if !conserves(st) {
		t.Fatalf("counters do not conserve: in %d != processed %d + dropped %d + stolen %d + queued %d",
			st.In(), st.Processed, st.Dropped, st.Stolen, st.Queued())
	}
}

// settled waits until a running kernel's status meets cond and conserves,
// and returns that status. A loop stores a batch's counters before it
// releases the batch's head (a flagged link's head even later, lazily), so
// a reading just after the last count may still find that batch queued:
// counted twice, which Status documents; the kernel is still once head has
// caught up.
func settled(t *testing.T, k *rk.Kernel, what string, cond func(rk.Status) bool) rk.Status {
	t.Helper()
	var st rk.Status
	eventually(t, what, func() bool { st = k.Status(); return cond(st) && conserves(st) })
	return st
}

// Each built-in op's result through a ring kernel equals a reference
// computed here, independently of the op's own Go function, on fresh random
// inputs. Tolerance: sim runs float32 arithmetic as the reference does, so
// results agree to 1 ulp (sqrt rounds through float64).
func (s *suite) testEveryBuiltinOpThroughAKernel(t *testing.T) {
	type ref struct {
		params []float32
		f      func(p []float32, acc *float32, in []float32) []float32
	}
	halves := func(g func(a, b float32) float32) func([]float32, *float32, []float32) []float32 {
		return func(_ []float32, _ *float32, in []float32) []float32 {
			a, b := in[:len(in)/2], in[len(in)/2:]
			out := make([]float32, len(a))
			for i := range a {
				out[i] = g(a[i], b[i])
			}
			return out
		}
	}
	each := func(g func(p []float32, x float32) float32) func([]float32, *float32, []float32) []float32 {
		return func(p []float32, _ *float32, in []float32) []float32 {
			out := make([]float32, len(in))
			for i, x := range in {
				out[i] = g(p, x)
			}
			return out
		}
	}
	refs := map[string]ref{
		"identity": {nil, each(func(_ []float32, x float32) float32 { return x })},
		"scale":    {[]float32{-2.5}, each(func(p []float32, x float32) float32 { return x * p[0] })},
		"offset":   {[]float32{3.25}, each(func(p []float32, x float32) float32 { return x + p[0] })},
		"relu":     {nil, each(func(_ []float32, x float32) float32 { return float32(math.Max(float64(x), 0)) })},
		"saxpy":    {[]float32{1.5, -4}, each(func(p []float32, x float32) float32 { return p[0]*x + p[1] })},
		"sqrt":     {nil, each(func(_ []float32, x float32) float32 { return float32(math.Sqrt(float64(x))) })},
		"delay":    {[]float32{500, 2}, each(func(_ []float32, x float32) float32 { return x })}, // sleeps at most about 1 µs
		"sum": {nil, func(_ []float32, acc *float32, in []float32) []float32 {
			for _, x := range in {
				*acc += x
			}
			return []float32{*acc}
		}},
		"reduce_sum": {nil, func(_ []float32, _ *float32, in []float32) []float32 {
			var s float32 // in order, in float32, as the kernel adds
			for i := 0; i < len(in); i++ {
				s = s + in[i]
			}
			return []float32{s}
		}},
		"reduce_min": {nil, func(_ []float32, _ *float32, in []float32) []float32 {
			m := math.Inf(1)
			for _, x := range in {
				m = math.Min(m, float64(x))
			}
			return []float32{float32(m)}
		}},
		"reduce_max": {nil, func(_ []float32, _ *float32, in []float32) []float32 {
			m := math.Inf(-1)
			for _, x := range in {
				m = math.Max(m, float64(x))
			}
			return []float32{float32(m)}
		}},
		"pair_sum": {nil, halves(func(a, b float32) float32 { return a + b })},
		"pair_min": {nil, halves(func(a, b float32) float32 { return float32(math.Min(float64(a), float64(b))) })},
		"pair_max": {nil, halves(func(a, b float32) float32 { return float32(math.Max(float64(a), float64(b))) })},
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	for name, rf := range refs {
		t.Run(name, func(t *testing.T) {
			op, err := kernels.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			r := s.launch(t, rk.Stage{Name: name, Op: name, Params: rf.params, Stateful: op.Stateful()}, 64, 56, true)
			var acc float32
			const msgs = 300
			// The inputs exist before the sender starts: on a device
			// backend the results come back through memory the race
			// detector does not see, so nothing it could call ordered
			// links the sender's writes to this goroutine's reads.
			inputs := make([][]float32, msgs)
			for i := range msgs {
				n := 1 + rng.IntN(56)
				if strings.HasPrefix(name, "pair_") {
					n = 2 * (1 + rng.IntN(28)) // two halves of equal length
				}
				for range n {
					x := float32(rng.NormFloat64() * 100)
					if name == "sqrt" {
						x = float32(math.Abs(float64(x)))
					}
					inputs[i] = append(inputs[i], x)
				}
			}
			go func() {
				for i := range msgs {
					m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: kernels.EncodeFloats(nil, inputs[i])}
					if err := r.send.Enqueue(context.Background(), &m); err != nil {
						panic(err)
					}
				}
			}()
			for i := range msgs {
				h, got := r.recvFloats()
				if h.ID != uint64(i) {
					t.Fatalf("message %d arrived as %d: out of order", i, h.ID)
				}
				want := rf.f(rf.params, &acc, inputs[i])
				if len(got) != len(want) {
					t.Fatalf("message %d: %d floats, want %d", i, len(got), len(want))
				}
				for j := range want {
					if d := math.Abs(float64(got[j] - want[j])); d > 1e-6*math.Max(1, math.Abs(float64(want[j]))) {
						t.Fatalf("message %d element %d: %g, want %g", i, j, got[j], want[j])
					}
				}
			}
			// Counters are published after the results they count.
			st := settled(t, r.k, "the count", func(st rk.Status) bool { return st.Processed == msgs })
			if st.Processed != msgs || st.Dropped != 0 {
				t.Fatalf("status %+v, want %d processed and none dropped", st, msgs)
			}
			conserved(t, st)
		})
	}
}

// A stage error dead-letters that message with its reason; the kernel goes
// on with the next one.
func (s *suite) testOpErrorDeadLettersAndKeepsRunning(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "root", Op: "sqrt"}, 128, 8, true)
	const msgs = 100
	for i := range msgs {
		x := float32(i)
		if i%7 == 3 {
			x = -x
		}
		r.sendFloats(uint64(i), []float32{4, x}, 0)
	}
	var bad []uint64
	for i := range msgs {
		if i%7 == 3 {
			bad = append(bad, uint64(i))
			continue
		}
		h, v := r.recvFloats()
		if h.ID != uint64(i) || v[0] != 2 || v[1] != float32(math.Sqrt(float64(i))) {
			t.Fatalf("message %d: got id %d %v", i, h.ID, v)
		}
	}
	eventually(t, "dead letters", func() bool { return len(r.deadLetters()) == len(bad) })
	for i, d := range r.deadLetters() {
		if d.ID != bad[i] || d.Reason != rk.ReasonStageError || d.Code != rk.CodeDomain || d.StageName != "root" || d.Stage != 7 {
			t.Fatalf("dead letter %d: %+v, want message %d, stage error, domain", i, d, bad[i])
		}
		if d.Err == nil || s.has(ErrorTexts) && !strings.Contains(d.Err.Error(), "negative") { // a device loop may report codes, not texts
			t.Fatalf("dead letter without the stage's error text: %+v", d)
		}
	}
	// Counters are published after the records and results they count.
	st := settled(t, r.k, "the counts", func(st rk.Status) bool { return st.Processed+st.Dropped == msgs })
	if st.State != rk.Active || st.Errors != uint64(len(bad)) || st.Dropped != uint64(len(bad)) || st.Processed != msgs-uint64(len(bad)) {
		t.Fatalf("status %+v", st)
	}
	if st.LastError == nil || st.LastError.MessageID != bad[len(bad)-1] || st.LastError.Code != rk.CodeDomain {
		t.Fatalf("last error %v, want message %d", st.LastError, bad[len(bad)-1])
	}
	conserved(t, st)
}

// Every lifecycle transition, valid and invalid, through a running kernel.
func (s *suite) testLifecycle(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "id", Op: "identity"}, 16, 4, false)
	ctx := ctxT(t)
	if s := r.k.Status().State; s != rk.Launched {
		t.Fatalf("after launch: %s", s)
	}
	if err := r.k.Deactivate(ctx); !errors.Is(err, rk.ErrTransition) {
		t.Fatalf("deactivate a launched kernel: %v, want ErrTransition", err)
	}
	// Launched takes no messages.
	r.sendFloats(1, []float32{1}, 0)
	time.Sleep(20 * time.Millisecond)
	if st := r.k.Status(); st.Processed != 0 || st.InQueued[0] != 1 {
		t.Fatalf("a launched kernel took a message: %+v", st)
	}
	if err := r.k.Activate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.k.Activate(ctx); !errors.Is(err, rk.ErrTransition) {
		t.Fatalf("activate an active kernel: %v", err)
	}
	r.recvFloats()
	if err := r.k.Deactivate(ctx); err != nil {
		t.Fatal(err)
	}
	if s := r.k.Status().State; s != rk.Idle {
		t.Fatalf("after deactivate: %s", s)
	}
	r.sendFloats(2, []float32{2}, 0)
	time.Sleep(20 * time.Millisecond)
	if st := r.k.Status(); st.Processed != 1 || st.InQueued[0] != 1 {
		t.Fatalf("an idle kernel took a message: %+v", st)
	}
	if err := r.k.Deactivate(ctx); !errors.Is(err, rk.ErrTransition) {
		t.Fatalf("deactivate an idle kernel: %v", err)
	}
	if err := r.k.Activate(ctx); err != nil {
		t.Fatal(err)
	}
	if h, _ := r.recvFloats(); h.ID != 2 {
		t.Fatalf("got %d after reactivation", h.ID)
	}
	if err := r.k.Terminate(ctx, false); err != nil {
		t.Fatal(err)
	}
	if s := r.k.Status().State; s != rk.Terminated {
		t.Fatalf("after terminate: %s", s)
	}
	for _, f := range []func(context.Context) error{r.k.Activate, r.k.Deactivate} {
		if err := f(ctx); !errors.Is(err, rk.ErrTransition) {
			t.Fatalf("command to a terminated kernel: %v", err)
		}
	}
	if err := r.k.Terminate(ctx, true); err != nil {
		t.Fatalf("second terminate: %v", err)
	}
	select {
	case <-r.k.Done():
	default:
		t.Fatal("Done not closed after Terminate")
	}
	// The kernel closed its out-link on the way out.
	var m p2pqueue.Message
	if err := r.recv.TryDequeue(&m); !errors.Is(err, p2pqueue.ErrClosed) {
		t.Fatalf("out-link after terminate: %v, want ErrClosed", err)
	}
}

// Terminate without drain while messages are queued: each is dead-lettered
// with reason "shutdown without drain", and the counters conserve.
func (s *suite) testTerminateWithoutDrain(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "id", Op: "identity"}, 64, 4, true)
	for i := range 5 {
		r.sendFloats(uint64(i), []float32{1}, 0)
	}
	eventually(t, "5 processed", func() bool { return r.k.Status().Processed == 5 })
	if err := r.k.Deactivate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for i := 5; i < 45; i++ {
		r.sendFloats(uint64(i), []float32{1}, 0)
	}
	if err := r.k.Terminate(ctxT(t), false); err != nil {
		t.Fatal(err)
	}
	dead := r.deadLetters() // delivered before Terminate returned
	if len(dead) != 40 {
		t.Fatalf("%d dead letters, want 40", len(dead))
	}
	for i, d := range dead {
		if d.ID != uint64(5+i) || d.Reason != rk.ReasonShutdown {
			t.Fatalf("dead letter %d: %+v", i, d)
		}
	}
	st := r.k.Status()
	if st.Processed != 5 || st.Dropped != 40 || st.Errors != 0 || st.Queued() != 0 {
		t.Fatalf("status %+v", st)
	}
	conserved(t, st)
}

// Terminate with drain while busy: every message is processed, in order,
// once the producer closes the in-link; the out-link is then closed.
func (s *suite) testTerminateWithDrainWhileBusy(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "x2", Op: "scale", Params: []float32{2}}, 32, 4, true)
	const msgs = 5000
	go func() {
		for i := range msgs {
			m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: kernels.EncodeFloats(nil, []float32{float32(i)})}
			if err := r.send.Enqueue(context.Background(), &m); err != nil {
				panic(err)
			}
		}
		r.send.Close()
	}()
	got := make(chan error, 1)
	go func() {
		var m p2pqueue.Message
		for i := 0; ; i++ {
			err := r.recv.Dequeue(context.Background(), &m)
			if errors.Is(err, p2pqueue.ErrClosed) {
				if i != msgs {
					err = fmt.Errorf("closed after %d messages", i)
				} else {
					err = nil
				}
				got <- err
				return
			}
			if err == nil && m.ID != uint64(i) {
				err = fmt.Errorf("message %d arrived as %d", i, m.ID)
			}
			if err != nil {
				got <- err
				return
			}
		}
	}()
	time.Sleep(5 * time.Millisecond) // busy now
	if err := r.k.Terminate(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	st := r.k.Status()
	if st.State != rk.Terminated || st.Processed != msgs || st.Dropped != 0 {
		t.Fatalf("status %+v", st)
	}
	conserved(t, st)
}

// A drain that cannot finish (the producer never closes) ends at ctx's
// deadline as a terminate without drain: Terminate still ends the loop.
func (s *suite) testTerminateDrainBoundedByContext(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "id", Op: "identity"}, 16, 4, false)
	for i := range 3 {
		r.sendFloats(uint64(i), []float32{1}, 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.k.Deactivate(ctx); !errors.Is(err, rk.ErrTransition) {
		t.Fatal(err)
	}
	// Draining processes what is queued, then waits for a close that never comes.
	err := r.k.Terminate(ctx, true)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("terminate: %v, want the deadline", err)
	}
	st := r.k.Status()
	if st.State != rk.Terminated || st.Processed != 3 {
		t.Fatalf("status %+v", st)
	}
	conserved(t, st)
}

// The heartbeat advances, idle or busy.
func (s *suite) testHeartbeatAdvances(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "id", Op: "identity"}, 16, 4, true)
	first := r.k.Status().Heartbeat
	if first.IsZero() {
		t.Fatal("no heartbeat after launch")
	}
	eventually(t, "an idle heartbeat", func() bool { return r.k.Status().Heartbeat.After(first) })
	st := r.k.Status()
	if st.HeartbeatAge > 5*time.Second {
		t.Fatalf("heartbeat %v old", st.HeartbeatAge)
	}
	r.sendFloats(1, []float32{1}, 0)
	r.recvFloats()
	// A device loop beats on a period, not per message: wait for the next.
	eventually(t, "a heartbeat after work", func() bool { return r.k.Status().Heartbeat.After(st.Heartbeat) })
}

// Status read while the kernel is busy is consistent: counters only grow,
// never account for more than was sent, and conserve once still.
func (s *suite) testStatusUnderLoad(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "root", Op: "sqrt"}, 64, 4, true)
	ctx := ctxT(t)
	const msgs = 20000
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range msgs {
			x := float32(i)
			if i%100 == 0 {
				x = -1
			}
			m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: kernels.EncodeFloats(nil, []float32{x})}
			if err := r.send.Enqueue(ctx, &m); err != nil {
				return // the test failed and ended the kernel: its error says why
			}
		}
	}()
	drained := make(chan error, 1)
	go func() {
		var m p2pqueue.Message
		for range msgs - msgs/100 {
			if err := r.recv.Dequeue(ctx, &m); err != nil {
				drained <- err
				return
			}
		}
		drained <- nil
	}()
	var last rk.Status
	polls := 0
	for done := false; !done; {
		select {
		case err := <-drained:
			if err != nil {
				t.Fatalf("receiving the results: %v (%+v)", err, r.k.Status())
			}
			done = true
		default:
		}
		st := r.k.Status()
		polls++
		if st.Processed < last.Processed || st.Dropped < last.Dropped {
			t.Fatalf("counters went back: %+v after %+v", st, last)
		}
		// Status reads the in-link before the counters (docs/ARCHITECTURE.md
		// §3.2), so the counters may include messages published after its
		// reading of the link, but never more than were published by the
		// time it returned; and, on a loop that stores a batch's counters
		// before it releases the batch's head (CountsBeforeHead), every
		// message below the head it read was already counted.
		sent := r.in.Stats().Published
		if st.Processed+st.Dropped > sent {
			t.Fatalf("more accounted than sent: %d processed and dropped, %d published: %+v", st.Processed+st.Dropped, sent, st)
		}
		if consumed := st.In() - st.Queued(); s.has(CountsBeforeHead) && st.Processed+st.Dropped < consumed {
			t.Fatalf("a message below head not counted: %d processed and dropped, %d consumed: %+v", st.Processed+st.Dropped, consumed, st)
		}
		if st.State != rk.Active {
			t.Fatalf("state %s under load", st.State)
		}
		last = st
		time.Sleep(100 * time.Microsecond)
	}
	<-sent
	st := settled(t, r.k, "all accounted", func(st rk.Status) bool { return st.Processed+st.Dropped == msgs })
	if st.Dropped != msgs/100 || st.Errors != msgs/100 {
		t.Fatalf("status %+v, want %d dropped", st, msgs/100)
	}
	conserved(t, st)
	t.Logf("%d status polls under load", polls)
}

// A stateful sum sees its messages one at a time, in order: its outputs are
// exactly the prefix sums.
func (s *suite) testStatefulSumInOrder(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "total", Op: "sum", Stateful: true}, 8, 4, true)
	const msgs = 3000
	go func() {
		for i := range msgs {
			m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: kernels.EncodeFloats(nil, []float32{float32(i % 10), 1})}
			if err := r.send.Enqueue(context.Background(), &m); err != nil {
				panic(err)
			}
		}
	}()
	var want float32
	for i := range msgs {
		want += float32(i%10) + 1
		h, v := r.recvFloats()
		if h.ID != uint64(i) || len(v) != 1 || v[0] != want {
			t.Fatalf("message %d: id %d total %v, want %g", i, h.ID, v, want)
		}
	}
}

// A stateless stage with parallel workers keeps every message and the
// order of the survivors, with dead letters among them.
func (s *suite) testStatelessWorkers(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "root", Op: "sqrt", Workers: 3}, 128, 4, true)
	const msgs = 10000
	go func() {
		batch := make([]p2pqueue.Message, 64)
		for i := 0; i < msgs; i += len(batch) {
			for j := range batch {
				x := float32(i + j)
				if (i+j)%13 == 0 {
					x = -x - 1
				}
				batch[j] = p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i + j)}, Payload: kernels.EncodeFloats(nil, []float32{x})}
			}
			if _, err := r.send.EnqueueBatch(context.Background(), batch[:min(len(batch), msgs-i)]); err != nil {
				panic(err)
			}
		}
	}()
	for i := range msgs {
		if i%13 == 0 {
			continue
		}
		h, v := r.recvFloats()
		if h.ID != uint64(i) || v[0] != float32(math.Sqrt(float64(i))) {
			t.Fatalf("message %d: got %d %v", i, h.ID, v)
		}
	}
	eventually(t, "dead letters", func() bool { return len(r.deadLetters()) == (msgs+12)/13 })
	settled(t, r.k, "the counts", func(st rk.Status) bool { return st.Processed+st.Dropped == msgs })
}

// Sampled messages get one trace record per stage, with ordered times; the
// next stage sees the time they were put into its in-link.
func (s *suite) testTraceRecords(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "x2", Op: "scale", Params: []float32{2}}, 16, 4, true)
	before := time.Now()
	for i := range 20 {
		var f p2pqueue.Flags
		if i%2 == 0 {
			f = p2pqueue.FlagSampled
		}
		r.sendFloats(uint64(i), []float32{1}, f)
	}
	for i := range 20 {
		h, _ := r.recvFloats()
		if sampled := h.Flags&p2pqueue.FlagSampled != 0; sampled != (i%2 == 0) {
			t.Fatalf("message %d: sampled flag %v not carried", i, sampled)
		}
		if i%2 == 0 && h.Enqueued == 0 {
			t.Fatalf("message %d: sampled but not stamped for the next stage", i)
		}
	}
	eventually(t, "10 trace records", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.trace) == 10 })
	for i, tr := range r.trace {
		if tr.ID != uint64(2*i) || tr.Stage != 7 {
			t.Fatalf("record %d: %+v", i, tr)
		}
		if tr.Enqueued.Before(before) || tr.Dequeued.Before(tr.Enqueued) || tr.Done.Before(tr.Dequeued) || tr.Done.After(time.Now()) {
			t.Fatalf("record %d times out of order: %+v", i, tr)
		}
	}
	eventually(t, "10 traced", func() bool { return r.k.Status().Traced == 10 })
}

// Payloads that are not float vectors, and results that do not fit the out
// slot, are dead-lettered with their reasons.
func (s *suite) testBadMessagesDeadLettered(t *testing.T) {
	in := s.newLink(t, 16, 16)
	out := s.newLink(t, 16, 4) // holds 8 floats: the 16-float message does not fit
	var mu sync.Mutex
	var dead []rk.DeadLetter
	k, err := rk.Launch(context.Background(), s.backend(t), rk.Spec{
		Stage: rk.Stage{Name: "id", Op: "identity"}, In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{out},
		OnDeadLetter: func(d rk.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Activate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	p, _ := in.Producer()
	for i, payload := range [][]byte{make([]byte, 7), make([]byte, 64), make([]byte, 8)} {
		if err := p.TryEnqueue(&p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	if err := k.Terminate(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if len(dead) != 2 || dead[0].ID != 0 || dead[0].Reason != rk.ReasonDecode || dead[1].ID != 1 || dead[1].Reason != rk.ReasonOversize {
		t.Fatalf("dead letters %+v", dead)
	}
	st := k.Status()
	if st.Processed != 1 || st.Dropped != 2 || st.Errors != 1 {
		t.Fatalf("status %+v", st)
	}
	conserved(t, st)
}

// A kernel fans in from as many in-links as a device loop reads
// (MaxDeviceInLinks) and ends when all are closed.
func (s *suite) testFanIn(t *testing.T) {
	ins := make([]*p2pqueue.Link, rk.MaxDeviceInLinks) // the device loop's limit
	for i := range ins {
		ins[i] = s.newLink(t, 8, 4)
	}
	k, err := rk.Launch(context.Background(), s.backend(t), rk.Spec{Stage: rk.Stage{Name: "sink", Op: "identity"}, In: ins})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Activate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, l := range ins {
		p, _ := l.Producer()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				if err := p.Enqueue(context.Background(), &p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: make([]byte, 4)}); err != nil {
					panic(err)
				}
			}
			p.Close()
		}()
	}
	wg.Wait()
	select {
	case <-k.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("kernel did not end when its in-links closed")
	}
	st := k.Status()
	if want := uint64(1000 * len(ins)); st.State != rk.Terminated || st.Processed != want {
		t.Fatalf("status %+v, want %d processed", st, want)
	}
	if err := k.Terminate(ctxT(t), false); err != nil {
		t.Fatal(err)
	}
}

// A corrupt in-link faults the kernel; Terminate reports the fault.
func (s *suite) testCorruptLinkFaults(t *testing.T) {
	r := s.launch(t, rk.Stage{Name: "id", Op: "identity"}, 16, 4, true)
	r.sendFloats(1, []float32{1}, 0)
	r.recvFloats()
	// A peer scribbles a tail far ahead of head.
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&r.in.Region().Bytes[p2pqueue.OffTail])), 1<<62)
	select {
	case <-r.k.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("kernel did not fault")
	}
	st := r.k.Status()
	if st.State != rk.Faulted || st.LastError == nil || st.LastError.Code != rk.CodeCorruptQueue || st.LastError.Text == "" {
		t.Fatalf("status %+v, last error %v", st, st.LastError)
	}
	if err := r.k.Terminate(ctxT(t), false); err == nil || !errors.Is(err, p2pqueue.ErrCorrupt) && st.LastError.Text == "" {
		t.Fatalf("terminate of a faulted kernel: %v", err)
	}
}

// Bad specs are refused with errors naming the fix, and a failed launch
// leaves its links free to claim.
func (s *suite) testLaunchRefusesBadSpecs(t *testing.T) {
	in := s.newLink(t, 8, 4)
	two := []*p2pqueue.Link{s.newLink(t, 8, 4), s.newLink(t, 8, 4)}
	cases := []struct {
		name string
		spec rk.Spec
		want string
	}{
		{"unknown op", rk.Spec{Stage: rk.Stage{Name: "a", Op: "nope"}, In: []*p2pqueue.Link{in}}, "unknown op"},
		{"params", rk.Spec{Stage: rk.Stage{Name: "a", Op: "scale"}, In: []*p2pqueue.Link{in}}, "takes 1 params"},
		{"stateful", rk.Spec{Stage: rk.Stage{Name: "a", Op: "sum"}, In: []*p2pqueue.Link{in}}, "declare the stage Stateful"},
		{"workers", rk.Spec{Stage: rk.Stage{Name: "a", Op: "sum", Stateful: true, Workers: 2}, In: []*p2pqueue.Link{in}}, "stateful stage has one"},
		{"no name", rk.Spec{Stage: rk.Stage{Op: "identity"}, In: []*p2pqueue.Link{in}}, "needs a name"},
		{"no in", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}}, "no in-link"},
		{"slot", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity", SlotSize: 100}, In: []*p2pqueue.Link{in}}, "64"},
		{"negative slot", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity", SlotSize: -64}, In: []*p2pqueue.Link{in}}, "SlotSize -64"},
		{"device", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}, Device: 9, In: []*p2pqueue.Link{in}}, "no device 9"},
		{"trace", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}, TraceCapacity: 100, In: []*p2pqueue.Link{in}}, "power of two"},
		{"one route, two outs", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}, In: []*p2pqueue.Link{in}, Out: two}, "RouteOne takes one"},
		{"route, no outs", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}, Route: rk.RouteAll, In: []*p2pqueue.Link{in}}, "no out-links to route over"},
		{"port, plain op", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}, Route: rk.RoutePort, In: []*p2pqueue.Link{in}, Out: two}, "chooses no port"},
		{"port op, other route", rk.Spec{Stage: rk.Stage{Name: "a", Op: "branch", Params: []float32{0}}, Route: rk.RouteAll, In: []*p2pqueue.Link{in}, Out: two}, "route it with RoutePort"},
		{"ports vs outs", rk.Spec{Stage: rk.Stage{Name: "a", Op: "branch", Params: []float32{0}}, Route: rk.RoutePort, In: []*p2pqueue.Link{in}, Out: two[:1]}, "among 2 ports, the stage has 1"},
		{"key offset", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}, Route: rk.RouteKey, KeyOffset: 3, In: []*p2pqueue.Link{in}, Out: two}, "key offset 3"},
		{"unknown route", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}, Route: 99, In: []*p2pqueue.Link{in}, Out: two}, "unknown route 99"},
		{"too many outs", rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}, Route: rk.RouteAll, In: []*p2pqueue.Link{in}, Out: make([]*p2pqueue.Link, rk.MaxDeviceOutLinks+1)}, "at most 8"},
	}
	for _, c := range cases {
		_, err := rk.Launch(context.Background(), s.backend(t), c.spec)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	// The failed launches gave their claims back.
	if _, err := in.Consumer(); err != nil {
		t.Fatalf("in-link still claimed after failed launches: %v", err)
	}
	// A claimed link is refused.
	if _, err := rk.Launch(context.Background(), s.backend(t), rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}, In: []*p2pqueue.Link{in}}); !errors.Is(err, p2pqueue.ErrClaimed) {
		t.Fatalf("launch on a claimed in-link: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// scribbling is a backend whose freed memory is at once used for
// something else, as an arena's is: Free overwrites the region first.
type scribbling struct{ rk.Backend }

func (b scribbling) Free(r p2pqueue.Region) error {
	for i := range r.Bytes {
		r.Bytes[i] = 0xA5
	}
	return b.Backend.Free(r)
}

// A kernel's control block goes back to the backend when it ends, and the
// memory may then serve anything (on the CUDA backend a clock-calibration
// buffer was seen there, under load): Status still reports the ended
// kernel's last word, and a command to it is refused without writing to
// the freed memory.
func (s *suite) testStatusOutlivesTheControlBlock(t *testing.T) {
	b := scribbling{s.backend(t)}
	in := s.newLink(t, 64, 4)
	k, err := rk.Launch(context.Background(), b, rk.Spec{Stage: rk.Stage{Name: "sink", Op: "identity"}, Device: s.device(0), In: []*p2pqueue.Link{in}})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Activate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	p, _ := in.Producer()
	for i := range 7 {
		if err := p.Enqueue(ctxT(t), &p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: make([]byte, 4)}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	if err := k.Terminate(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := k.Status(); st.State != rk.Terminated || st.Processed != 7 || st.Dropped != 0 {
		t.Fatalf("status after the control block was freed: %+v", st)
	}
	if err := k.Activate(ctxT(t)); !errors.Is(err, rk.ErrTransition) {
		t.Fatalf("activating an ended kernel: %v, want ErrTransition", err)
	}
	if err := k.Terminate(ctxT(t), false); err != nil {
		t.Fatalf("terminating an ended kernel again: %v", err)
	}
}
