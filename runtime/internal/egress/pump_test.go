package egress

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/internal/gate"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/account"
)

// res is the tests' result type.
type res struct {
	id     uint64
	stage  string
	floats []float32
	bytes  []byte
}

type dead struct {
	from uint32
	id   uint64
	why  Why
	err  error
}

// host records what a Pump asks of it. Message ids in requests are
// answered instead of delivered.
type host struct {
	mu       sync.Mutex
	requests map[uint64]bool
	answered []uint64
	dead     []dead
	traced   []uint64
}

func (h *host) Result(r *res, stage string, hd *p2pqueue.Header, floats []float32, bytes []byte) {
	*r = res{id: hd.ID, stage: stage, floats: floats, bytes: bytes}
}

func (h *host) Answer(id uint64, r res) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.requests[id] {
		return false
	}
	h.answered = append(h.answered, id)
	return true
}

func (h *host) Dead(from uint32, id uint64, why Why, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dead = append(h.dead, dead{from, id, why, err})
}

func (h *host) Traced(from uint32, id uint64, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if from != 3 || at.IsZero() {
		panic("traced with a wrong stage or no time")
	}
	h.traced = append(h.traced, id)
}

var errNotRead = errors.New("sink not read")

// exit is a link holding msgs for exit stage "out" (id 3); the link is
// closed after them when closed is set, as a stage that ended.
func exit(t *testing.T, closed bool, msgs ...p2pqueue.Message) (Exit, *p2pqueue.Producer) {
	t.Helper()
	l, err := p2pqueue.NewHostQueue(p2pqueue.ConfigFor(256, 64))
	if err != nil {
		t.Fatal(err)
	}
	prod, err := l.Producer()
	if err != nil {
		t.Fatal(err)
	}
	cons, err := l.Consumer()
	if err != nil {
		t.Fatal(err)
	}
	for i := range msgs {
		if err := prod.TryEnqueue(&msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if closed {
		prod.Close()
	}
	return Exit{From: 3, Stage: "out", Link: cons}, prod
}

// floats is message id carrying the float32 vector v.
func floats(id uint64, v ...float32) p2pqueue.Message {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return p2pqueue.Message{Header: p2pqueue.Header{ID: id, Type: kernels.TypeFloats}, Payload: b}
}

// typed is message id of type 9 carrying b.
func typed(id uint64, b string) p2pqueue.Message {
	return p2pqueue.Message{Header: p2pqueue.Header{ID: id, Type: 9}, Payload: []byte(b)}
}

// pump is a Pump for pipeline "p" delivering to sink, its Ctx's cancel,
// and its Closing, to close.
func pump(h *host, sink Sink[res]) (*Pump[res], context.CancelFunc, chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	closing := make(chan struct{})
	return &Pump[res]{Name: "p", Sink: sink, Host: h, Acct: &account.Account{}, Ctx: ctx, Closing: closing, ErrNotRead: errNotRead,
		Send: func(*actor.PID, any) { panic("no PID sink") }}, cancel, closing
}

// run pumps the exits until they end, within 10 s.
func run(t *testing.T, p *Pump[res], exits ...Exit) {
	t.Helper()
	done := make(chan struct{})
	p.Start(exits, done)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pumps did not end")
	}
}

// totals is p's account, with n messages sent.
func totals(p *Pump[res], n int) account.Totals {
	p.Acct.Enter(n)
	return p.Acct.Read(nil)
}

// Results reach a Func in order, decoded (floats, and a typed result's
// bytes), counted delivered; sampled ones have their trace ended.
func TestDeliversInOrder(t *testing.T) {
	var msgs []p2pqueue.Message
	for id := uint64(1); id <= 200; id++ {
		m := floats(id, float32(id), -float32(id))
		if id%10 == 0 {
			m = typed(id, "x")
		}
		if id%50 == 0 {
			m.Flags |= p2pqueue.FlagSampled
		}
		msgs = append(msgs, m)
	}
	e, _ := exit(t, true, msgs...)
	var got []res
	h := &host{}
	p, cancel, _ := pump(h, Sink[res]{Func: func(r res) { got = append(got, r) }})
	defer cancel()
	run(t, p, e)
	if len(got) != 200 {
		t.Fatalf("%d results, want 200", len(got))
	}
	for i, r := range got {
		id := uint64(i + 1)
		switch {
		case r.id != id || r.stage != "out":
			t.Fatalf("result %d is message %d of %q", i, r.id, r.stage)
		case id%10 == 0 && string(r.bytes) != "x":
			t.Fatalf("message %d: bytes %q", id, r.bytes)
		case id%10 != 0 && (len(r.floats) != 2 || r.floats[0] != float32(id) || r.floats[1] != -float32(id)):
			t.Fatalf("message %d: floats %v", id, r.floats)
		}
	}
	if tot := totals(p, 200); tot.Delivered != 200 || tot.DeadLettered != 0 {
		t.Fatalf("account %+v", tot)
	}
	if len(h.traced) != 4 || h.traced[0] != 50 || h.traced[3] != 200 {
		t.Fatalf("traced %v, want 50, 100, 150, 200", h.traced)
	}
}

// A payload that does not decode is dead at once; the rest go on.
func TestUndecodable(t *testing.T) {
	bad := floats(2, 1)
	bad.Payload = bad.Payload[:3]
	e, _ := exit(t, true, floats(1, 1), bad, floats(3, 3))
	var got []uint64
	h := &host{}
	p, cancel, _ := pump(h, Sink[res]{Func: func(r res) { got = append(got, r.id) }})
	defer cancel()
	run(t, p, e)
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("delivered %v, want 1 and 3", got)
	}
	if len(h.dead) != 1 || h.dead[0].id != 2 || h.dead[0].why != Undecodable || h.dead[0].from != 3 || !errors.Is(h.dead[0].err, kernels.ErrNotFloats) {
		t.Fatalf("dead %+v", h.dead)
	}
	if tot := totals(p, 3); tot.Delivered != 2 || tot.DeadLettered != 1 {
		t.Fatalf("account %+v", tot)
	}
}

var errBoom = errors.New("boom")

// A Func that panics is recovered: that result is dead (Panicked, an
// error wrapping ringkernel.ErrStagePanic and the panic's error, with the
// stack), moved from delivered to dead, and the pump goes on.
func TestFuncPanics(t *testing.T) {
	var msgs []p2pqueue.Message
	for id := uint64(1); id <= 9; id++ {
		msgs = append(msgs, floats(id, 1))
	}
	e, _ := exit(t, true, msgs...)
	var got []uint64
	h := &host{}
	p, cancel, _ := pump(h, Sink[res]{Func: func(r res) {
		if r.id%3 == 0 {
			panic(errBoom)
		}
		got = append(got, r.id)
	}})
	defer cancel()
	run(t, p, e)
	if len(got) != 6 || len(h.dead) != 3 {
		t.Fatalf("delivered %v, dead %+v", got, h.dead)
	}
	for i, d := range h.dead {
		msg := d.err.Error()
		if d.id != uint64(3*(i+1)) || d.why != Panicked || !errors.Is(d.err, rk.ErrStagePanic) || !errors.Is(d.err, errBoom) ||
			!strings.HasPrefix(msg, `pipeline "p": `+rk.ErrStagePanic.Error()+": Sink.Func, message ") || !strings.Contains(msg, "goroutine ") {
			t.Fatalf("dead %d: %+v", i, d)
		}
	}
	if tot := totals(p, 9); tot.Delivered != 6 || tot.DeadLettered != 3 {
		t.Fatalf("account %+v", tot)
	}
}

// A Chan nobody reads holds the pump while the pipeline runs
// (backpressure); once Close has begun, it is waited for CloseWait, once:
// then every result is dead (NotRead, wrapping ErrNotRead), moved from
// delivered to dead.
func TestChanNotRead(t *testing.T) {
	e, _ := exit(t, true, floats(1, 1), floats(2, 2), floats(3, 3))
	h := &host{}
	ch := make(chan res) // never read
	const wait = 100 * time.Millisecond
	p, cancel, closing := pump(h, Sink[res]{Chan: ch, CloseWait: wait})
	defer cancel()
	done := make(chan struct{})
	p.Start([]Exit{e}, done)
	select {
	case <-done:
		t.Fatal("the pump ended while the pipeline runs and its Chan is full")
	case <-time.After(wait):
	}
	if tot := p.Acct.Read(nil); tot.Delivered != 1 || tot.DeadLettered != 0 {
		t.Fatalf("account while held: %+v; want message 1 counted delivered", tot)
	}
	start := time.Now()
	close(closing)
	<-done
	if took := time.Since(start); took < wait || took > 2*wait+time.Second {
		t.Fatalf("took %v after Close began; want CloseWait (%v) once", took, wait)
	}
	if len(h.dead) != 3 {
		t.Fatalf("dead %+v, want 3", h.dead)
	}
	for i, d := range h.dead {
		if d.id != uint64(i+1) || d.why != NotRead || !errors.Is(d.err, errNotRead) ||
			d.err.Error() != `sink not read: pipeline "p" closed with the result unread in its Deliver channel; read the channel until Close returns, or raise Sink.CloseWait` {
			t.Fatalf("dead %d: %+v: %v", i, d, d.err)
		}
	}
	if tot := totals(p, 3); tot.Delivered != 0 || tot.DeadLettered != 3 || tot.InFlight != 0 {
		t.Fatalf("account %+v", tot)
	}
}

// A Chan read late takes every result, in order: a full Chan is waited
// for while the pipeline runs.
func TestChanBackpressure(t *testing.T) {
	var msgs []p2pqueue.Message
	for id := uint64(1); id <= 100; id++ {
		msgs = append(msgs, floats(id, 1))
	}
	e, _ := exit(t, true, msgs...)
	ch := make(chan res, 4)
	p, cancel, _ := pump(&host{}, Sink[res]{Chan: ch, CloseWait: time.Millisecond})
	defer cancel()
	done := make(chan struct{})
	p.Start([]Exit{e}, done)
	time.Sleep(20 * time.Millisecond)
	for id := uint64(1); id <= 100; id++ {
		if r := <-ch; r.id != id {
			t.Fatalf("got message %d, want %d", r.id, id)
		}
	}
	<-done
	if tot := totals(p, 100); tot.Delivered != 100 || tot.DeadLettered != 0 {
		t.Fatalf("account %+v", tot)
	}
}

// collector is an actor that passes the results it receives on.
type collector chan res

func (c collector) Receive(ctx actor.Context) {
	if r, ok := ctx.Message().(res); ok {
		c <- r
	}
}

// A PID sink gets each result as a message, through the actor system's
// send.
func TestPIDSink(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	got := make(collector, 10)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return got }))
	e, _ := exit(t, true, floats(1, 1), typed(2, "b"), floats(3, 3))
	p, cancel, _ := pump(&host{}, Sink[res]{PID: pid})
	defer cancel()
	p.Send = system.Root.Send
	run(t, p, e)
	for id := uint64(1); id <= 3; id++ {
		select {
		case r := <-got:
			if r.id != id {
				t.Fatalf("got message %d, want %d", r.id, id)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("message %d did not reach the actor", id)
		}
	}
	if tot := totals(p, 3); tot.Delivered != 3 {
		t.Fatalf("account %+v", tot)
	}
}

// A request's result goes to its waiter, not the sink, and counts as
// delivered.
func TestRequestAnswered(t *testing.T) {
	e, _ := exit(t, true, floats(1, 1), floats(2, 2), floats(3, 3))
	h := &host{requests: map[uint64]bool{2: true}}
	var got []uint64
	p, cancel, _ := pump(h, Sink[res]{Func: func(r res) { got = append(got, r.id) }})
	defer cancel()
	run(t, p, e)
	if len(got) != 2 || got[0] != 1 || got[1] != 3 || len(h.answered) != 1 || h.answered[0] != 2 {
		t.Fatalf("sink got %v, answered %v", got, h.answered)
	}
	if tot := totals(p, 3); tot.Delivered != 3 {
		t.Fatalf("account %+v", tot)
	}
}

// A Slots sink takes each batch undecoded, in place and in order, counted
// delivered.
func TestSlots(t *testing.T) {
	var msgs []p2pqueue.Message
	for id := uint64(1); id <= 150; id++ {
		msgs = append(msgs, typed(id, string(rune('a'+id%26))))
	}
	e, _ := exit(t, true, msgs...)
	var ids []uint64
	var batches int
	p, cancel, _ := pump(&host{}, Sink[res]{Func: func(res) { t.Error("Func called beside Slots") }})
	defer cancel()
	p.Slots = func(ctx context.Context, hs []p2pqueue.Header, ps [][]byte) {
		batches++
		if len(hs) > Batch || len(hs) != len(ps) {
			t.Errorf("batch of %d headers, %d payloads", len(hs), len(ps))
		}
		for i, h := range hs {
			if string(ps[i]) != string(rune('a'+h.ID%26)) {
				t.Errorf("message %d: payload %q", h.ID, ps[i])
			}
			ids = append(ids, h.ID)
		}
	}
	run(t, p, e)
	if len(ids) != 150 || ids[0] != 1 || ids[149] != 150 || batches < 3 {
		t.Fatalf("%d ids in %d batches", len(ids), batches)
	}
	if tot := totals(p, 150); tot.Delivered != 150 {
		t.Fatalf("account %+v", tot)
	}
}

// A pump told to stop (Ctx ended) delivers what its link holds, though
// the link is not closed, and ends.
func TestStopSweeps(t *testing.T) {
	e, prod := exit(t, false, floats(1, 1), floats(2, 2))
	defer prod.Close()
	var got []uint64
	p, cancel, _ := pump(&host{}, Sink[res]{Func: func(r res) { got = append(got, r.id) }})
	cancel()
	run(t, p, e)
	if len(got) != 2 {
		t.Fatalf("delivered %v, want 1 and 2", got)
	}
}

// A closed Gate holds the pump before its next batch.
func TestGate(t *testing.T) {
	e, _ := exit(t, true, floats(1, 1))
	var g gate.Gate
	open := g.Close()
	got := make(chan res, 1)
	p, cancel, _ := pump(&host{}, Sink[res]{Chan: got})
	defer cancel()
	p.Gate = &g
	done := make(chan struct{})
	p.Start([]Exit{e}, done)
	select {
	case <-got:
		t.Fatal("delivered through a closed gate")
	case <-time.After(20 * time.Millisecond):
	}
	open()
	<-done
	if r := <-got; r.id != 1 {
		t.Fatalf("got %d", r.id)
	}
}

// Pending is asked once a batch: while it says no request waits, no
// result is offered to Answer (all go to the sink); once it says one
// may, each is.
func TestPendingAskedOncePerBatch(t *testing.T) {
	for _, pending := range []bool{false, true} {
		e, _ := exit(t, true, floats(1, 1), floats(2, 2), floats(3, 3))
		h := &host{requests: map[uint64]bool{2: true}}
		var got []uint64
		p, cancel, _ := pump(h, Sink[res]{Func: func(r res) { got = append(got, r.id) }})
		asked := 0
		p.Pending = func() bool { asked++; return pending }
		run(t, p, e)
		cancel()
		want, answered := "[1 2 3]", "[]"
		if pending {
			want, answered = "[1 3]", "[2]"
		}
		if fmt.Sprint(got) != want || fmt.Sprint(h.answered) != answered || asked != 1 {
			t.Errorf("pending %v: sink got %v, answered %v, Pending asked %d times; want %s, %s, once", pending, got, h.answered, asked, want, answered)
		}
	}
}

// A batch of float results makes one allocation, whatever its size: the
// results' floats, which they keep.
func TestBatchAllocatesOnce(t *testing.T) {
	const n = 64
	e, prod := exit(t, false)
	h := &host{}
	var sum float32
	p, cancel, _ := pump(h, Sink[res]{Func: func(r res) { sum += r.floats[0] }})
	defer cancel()
	ms := make([]p2pqueue.Message, n)
	for i := range ms {
		ms[i] = floats(uint64(i+1), 1, 2, 3, 4)
	}
	rs := make([]res, Batch)
	allocs := testing.AllocsPerRun(50, func() {
		if k, err := prod.TryEnqueueBatch(ms); k != n || err != nil {
			t.Fatalf("enqueue: %d, %v", k, err)
		}
		if k, err := e.Link.Peek(n); k != n || err != nil {
			t.Fatalf("peek: %d, %v", k, err)
		}
		if !p.batch(&e, n, rs) {
			t.Fatal("batch failed")
		}
	})
	if allocs != 1 {
		t.Errorf("%v allocations per batch of %d, want 1", allocs, n)
	}
	if len(h.dead) != 0 || sum == 0 {
		t.Errorf("dead %+v, sum %v", h.dead, sum)
	}
}

// BenchmarkBatch is the pump's cost alone: batches of 64 results of 16
// floats, published and decoded into a Func by one goroutine, no
// waiting. ns/op is per result.
func BenchmarkBatch(b *testing.B) {
	const n = 64
	l, err := p2pqueue.NewHostQueue(p2pqueue.ConfigFor(256, 64))
	if err != nil {
		b.Fatal(err)
	}
	prod, _ := l.Producer()
	cons, _ := l.Consumer()
	e := Exit{From: 3, Stage: "out", Link: cons}
	var got int
	p, cancel, _ := pump(&host{}, Sink[res]{Func: func(r res) { got += len(r.floats) }})
	defer cancel()
	ms := make([]p2pqueue.Message, n)
	for i := range ms {
		ms[i] = floats(uint64(i+1), make([]float32, 16)...)
	}
	rs := make([]res, Batch)
	b.ReportAllocs()
	for done := 0; done < b.N; done += n {
		prod.TryEnqueueBatch(ms)
		k, _ := e.Link.Peek(n)
		if !p.batch(&e, k, rs) {
			b.Fatal("batch failed")
		}
	}
}
