package ingress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	"github.com/ringactor/ringactor/runtime/internal/account"
)

// msg is a test message: its own id (0: the next), its payload, whether
// its sender asked for a trace, and whether it fails to encode.
type msg struct {
	id      uint64
	payload string
	sampled bool
	bad     bool
}

type reason string

func (r reason) String() string { return string(r) }

var (
	errFull    = errors.New("test: mailbox full")
	errStopped = errors.New("test: stage stopped")
	errOwner   = errors.New("test: pipeline closed")
	errBad     = errors.New("test: wrong type")
)

// dead is one message the link dead-lettered.
type dead struct {
	id     uint64
	reason reason
	err    error
}

// fixture is a Link over a host queue, with the consumer's end and what
// its hooks saw.
type fixture struct {
	l       *Link[msg, reason]
	c       *p2pqueue.Consumer
	acct    *account.Account
	running atomic.Bool

	mu    sync.Mutex
	dead  []dead
	begun []uint64
}

const testType = 7

func newFixture(t testing.TB, capacity int, reject bool, sampleEvery uint64) *fixture {
	t.Helper()
	q, err := p2pqueue.NewHostQueue(p2pqueue.ConfigFor(uint32(capacity), 8))
	if err != nil {
		t.Fatal(err)
	}
	p, err := q.Producer()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{acct: &account.Account{}}
	if f.c, err = q.Consumer(); err != nil {
		t.Fatal(err)
	}
	f.running.Store(true)
	f.l = New(p, Config[msg, reason]{
		Stage: "s", Capacity: capacity, Reject: reject, Acct: f.acct, SampleEvery: sampleEvery,
		Full: errFull, Stopped: errStopped,
		Reasons: Reasons[reason]{Full: "mailbox full", Cancelled: "send cancelled", Stopped: "stage stopped", QueueClosed: "queue closed"},
		Own:     func(m msg) (uint64, bool) { return m.id, m.sampled },
		Encode: func(m *msg, buf []byte) (Encoded, reason, error) {
			e := Encoded{Own: m.id, Sampled: m.sampled}
			if m.bad {
				return e, "wrong type", errBad
			}
			if len(m.payload) > len(buf) {
				return e, "oversize payload", p2pqueue.ErrTooLarge
			}
			e.Type, e.N = testType, copy(buf, m.payload)
			return e, "", nil
		},
		Begin: func(m msg, id uint64, at time.Time) {
			if at.IsZero() {
				t.Errorf("message %d: trace begun at the zero time", id)
			}
			f.mu.Lock()
			f.begun = append(f.begun, id)
			f.mu.Unlock()
		},
		Dead: func(id uint64, r reason, err error) {
			f.acct.DeadLetter()
			f.mu.Lock()
			f.dead = append(f.dead, dead{id, r, err})
			f.mu.Unlock()
		},
		Refusal: func() (reason, error) { return "pipeline closed", fmt.Errorf("%w: pipeline %q", errOwner, "p") },
		Running: func() (bool, fmt.Stringer) { return f.running.Load(), reason("Stopped") },
	})
	return f
}

// drain reads what the link holds, releases it, and returns the headers
// and payloads.
func (f *fixture) drain(t testing.TB) ([]p2pqueue.Header, []string) {
	t.Helper()
	var hs []p2pqueue.Header
	var ps []string
	for {
		n, err := f.c.Peek(1 << 10)
		if errors.Is(err, p2pqueue.ErrEmpty) || errors.Is(err, p2pqueue.ErrClosed) {
			return hs, ps
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			h, b, err := f.c.Read(i)
			if err != nil {
				t.Fatal(err)
			}
			hs, ps = append(hs, h), append(ps, string(b))
		}
		f.c.Release(n)
	}
}

// check checks the batch's account once Send has returned taken of n
// messages with ids: every message counted once (Sent), each either in
// the link or dead-lettered, never both, every id once; the dead are
// wantDead of them, each with reason why.
func (f *fixture) check(t *testing.T, n, taken int, ids []uint64, inLink []p2pqueue.Header, wantDead int, why reason) {
	t.Helper()
	tot := f.acct.Read(nil)
	if tot.Sent != uint64(n) {
		t.Errorf("Sent = %d, want %d (each message counted once)", tot.Sent, n)
	}
	if len(inLink) != taken {
		t.Errorf("%d messages in the link, Send took %d", len(inLink), taken)
	}
	if len(f.dead) != wantDead || tot.DeadLettered != uint64(wantDead) {
		t.Errorf("%d dead letters (account %d), want %d", len(f.dead), tot.DeadLettered, wantDead)
	}
	if taken+len(f.dead) != n {
		t.Errorf("taken %d + dead %d != %d sent", taken, len(f.dead), n)
	}
	seen := map[uint64]string{}
	for _, h := range inLink {
		seen[h.ID] = "in the link"
	}
	for _, d := range f.dead {
		if where, ok := seen[d.id]; ok {
			t.Errorf("message %d dead-lettered and %s", d.id, where)
		}
		seen[d.id] = "dead-lettered"
		if d.reason != why {
			t.Errorf("message %d dead-lettered %q, want %q", d.id, d.reason, why)
		}
	}
	for i, id := range ids {
		if _, ok := seen[id]; !ok || id == 0 {
			t.Errorf("ids[%d] = %d, which is neither in the link nor dead-lettered", i, id)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct ids ended, want %d", len(seen), n)
	}
}

func batch(n int) []msg {
	ms := make([]msg, n)
	for i := range ms {
		ms[i] = msg{payload: fmt.Sprint("m", i)}
	}
	return ms
}

func TestSendWritesInOrderWithIDs(t *testing.T) {
	f := newFixture(t, 8, false, 0)
	ms := batch(5)
	ms[2].id = 100 // explicit: later auto ids keep clear of it
	ids := make([]uint64, 5)
	n, err := f.l.Send(context.Background(), ms, ids)
	if n != 5 || err != nil {
		t.Fatalf("Send = %d, %v; want 5, nil", n, err)
	}
	if want := []uint64{1, 2, 100, 101, 102}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	hs, ps := f.drain(t)
	for i, h := range hs {
		if h.ID != ids[i] || h.Type != testType || ps[i] != ms[i].payload || h.Flags&p2pqueue.FlagSampled != 0 {
			t.Errorf("slot %d: %+v %q; want id %d, type %d, %q, not sampled", i, h, ps[i], ids[i], testType, ms[i].payload)
		}
	}
	f.check(t, 5, n, ids, hs, 0, "")
}

func TestShortIDsAndNone(t *testing.T) {
	f := newFixture(t, 8, false, 0)
	ids := make([]uint64, 2) // room for the first two only
	if n, err := f.l.Send(context.Background(), batch(3), ids); n != 3 || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	if ids[0] != 1 || ids[1] != 2 {
		t.Errorf("ids %v, want [1 2]", ids)
	}
	if n, err := f.l.Send(context.Background(), batch(2), nil); n != 2 || err != nil {
		t.Fatalf("Send without ids = %d, %v", n, err)
	}
	hs, _ := f.drain(t)
	f.check(t, 5, 5, nil, hs, 0, "")
}

func TestRejectRefusesWhatDoesNotFit(t *testing.T) {
	f := newFixture(t, 4, true, 0)
	ids := make([]uint64, 6)
	n, err := f.l.Send(context.Background(), batch(6), ids)
	if n != 4 || !errors.Is(err, errFull) {
		t.Fatalf("Send = %d, %v; want 4 and errFull", n, err)
	}
	if want := `test: mailbox full: stage "s" holds 4 messages: 4 of 6 taken, the rest dead-lettered; send slower, raise its Capacity, or build it with Backpressure: Block`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	hs, _ := f.drain(t)
	f.check(t, 6, n, ids, hs, 2, "mailbox full")
	if !errors.Is(f.dead[0].err, errFull) || f.dead[0].id != 5 || f.dead[1].id != 6 {
		t.Errorf("dead letters %+v, want messages 5 and 6 wrapping errFull", f.dead)
	}
}

func TestBlockWaitsForRoom(t *testing.T) {
	f := newFixture(t, 4, false, 0)
	var hs []p2pqueue.Header
	done := make(chan struct{})
	go func() { // the stage: reads once the sender has filled the link
		defer close(done)
		for len(hs) < 10 {
			h, _ := f.drain(t)
			hs = append(hs, h...)
			time.Sleep(time.Millisecond)
		}
	}()
	ids := make([]uint64, 10)
	n, err := f.l.Send(context.Background(), batch(10), ids)
	if n != 10 || err != nil {
		t.Fatalf("Send = %d, %v; want 10, nil", n, err)
	}
	<-done
	f.check(t, 10, n, ids, hs, 0, "")
}

func TestBlockCtxEndsMidBatch(t *testing.T) {
	f := newFixture(t, 4, false, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	ids := make([]uint64, 7)
	n, err := f.l.Send(ctx, batch(7), ids)
	if n != 4 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send = %d, %v; want 4 and the ctx's error", n, err)
	}
	if want := `ringactor: send to stage "s": 4 of 7 taken, the rest dead-lettered: context deadline exceeded`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	hs, _ := f.drain(t)
	f.check(t, 7, n, ids, hs, 3, "send cancelled")
}

func TestRefusedMidBatch(t *testing.T) {
	f := newFixture(t, 4, false, 0)
	go func() { // the owner closes while the sender waits for room
		for f.c.Link().Len() < 4 {
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(time.Millisecond)
		f.l.Refuse()
		f.l.Close()
	}()
	ids := make([]uint64, 6)
	n, err := f.l.Send(context.Background(), batch(6), ids)
	if n != 4 || !errors.Is(err, errOwner) {
		t.Fatalf("Send = %d, %v; want 4 and the owner's refusal", n, err)
	}
	if want := `test: pipeline closed: pipeline "p": 4 of 6 messages taken by stage "s", the rest dead-lettered (pipeline closed)`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	hs, _ := f.drain(t)
	f.check(t, 6, n, ids, hs, 2, "pipeline closed")

	// From then on every message is refused at once, and counted.
	n, err = f.l.Send(context.Background(), batch(3), nil)
	if n != 0 || !errors.Is(err, errOwner) {
		t.Fatalf("Send after Refuse = %d, %v", n, err)
	}
	if tot := f.acct.Read(nil); tot.Sent != 9 || tot.DeadLettered != 5 {
		t.Errorf("account %+v, want 9 sent, 5 dead", tot)
	}
}

func TestKernelEndedWhileFull(t *testing.T) {
	f := newFixture(t, 2, false, 0)
	f.running.Store(false)
	n, err := f.l.Send(context.Background(), batch(3), nil)
	if n != 2 || !errors.Is(err, errStopped) {
		t.Fatalf("Send = %d, %v; want 2 and errStopped", n, err)
	}
	if want := `test: stage stopped: the kernel of stage "s" has ended (Stopped): 2 of 3 taken`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	hs, _ := f.drain(t)
	f.check(t, 3, n, nil, hs, 1, "stage stopped")
}

func TestClosedQueueWithoutRefuse(t *testing.T) {
	f := newFixture(t, 4, false, 0)
	f.l.Close()
	n, err := f.l.Send(context.Background(), batch(2), nil)
	if n != 0 || !errors.Is(err, p2pqueue.ErrClosed) || !strings.HasPrefix(err.Error(), `ringactor: stage "s": `) {
		t.Fatalf("Send = %d, %v; want 0 and the queue's ErrClosed", n, err)
	}
	f.check(t, 2, 0, nil, nil, 2, "queue closed")
}

func TestEncodeRefusalsMidBatch(t *testing.T) {
	f := newFixture(t, 8, false, 0)
	ms := batch(5)
	ms[1].payload = strings.Repeat("x", 1000) // larger than the slot
	ms[3].bad = true
	ids := make([]uint64, 5)
	n, err := f.l.Send(context.Background(), ms, ids)
	if n != 3 || !errors.Is(err, p2pqueue.ErrTooLarge) {
		t.Fatalf("Send = %d, %v; want 3 and the first refusal's error", n, err)
	}
	if want := "ringactor: message 2: " + p2pqueue.ErrTooLarge.Error(); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	hs, ps := f.drain(t)
	if fmt.Sprint(ps) != "[m0 m2 m4]" || hs[1].ID != 3 {
		t.Errorf("link holds %v, %+v; want m0 m2 m4, the rest sent in order", ps, hs)
	}
	if len(f.dead) != 2 || f.dead[0].reason != "oversize payload" || f.dead[1].reason != "wrong type" {
		t.Fatalf("dead letters %+v", f.dead)
	}
	f.dead[0].reason, f.dead[1].reason = "", "" // two reasons: check the rest
	f.check(t, 5, n, ids, hs, 2, "")
}

func TestTraced(t *testing.T) {
	f := newFixture(t, 8, true, 3) // every third id, and those asked for
	ms := batch(10)
	ms[0].sampled = true
	n, err := f.l.Send(context.Background(), ms, nil)
	if n != 8 || !errors.Is(err, errFull) {
		t.Fatalf("Send = %d, %v", n, err)
	}
	hs, _ := f.drain(t)
	for _, h := range hs {
		traced := h.ID == 1 || h.ID%3 == 0
		if got := h.Flags&p2pqueue.FlagSampled != 0; got != traced || (h.Enqueued != 0) != traced {
			t.Errorf("message %d: sampled %v, enqueued %d; want traced %v", h.ID, got, h.Enqueued, traced)
		}
	}
	// 1, 3, 6 written; 9 refused, still traced.
	if fmt.Sprint(f.begun) != "[1 3 6 9]" {
		t.Errorf("traces begun for %v, want [1 3 6 9]", f.begun)
	}
}

func TestConcurrentSenders(t *testing.T) {
	f := newFixture(t, 16, false, 0)
	stop := make(chan struct{})
	var hs []p2pqueue.Header
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			h, _ := f.drain(t)
			hs = append(hs, h...)
			select {
			case <-stop:
				h, _ := f.drain(t)
				hs = append(hs, h...)
				return
			default:
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if n, err := f.l.Send(context.Background(), batch(10), nil); n != 10 || err != nil {
					t.Errorf("Send = %d, %v", n, err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-read
	f.check(t, 400, 400, nil, hs, 0, "")
}

// A batch on the sender's stack stays there: Send allocates nothing per
// message.
func TestSendAllocatesNothing(t *testing.T) {
	f := newFixture(t, 64, false, 0)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		var one [1]msg
		one[0] = msg{payload: "x"}
		if _, err := f.l.Send(ctx, one[:], nil); err != nil {
			t.Fatal(err)
		}
		var four [4]msg
		if _, err := f.l.Send(ctx, four[:], nil); err != nil {
			t.Fatal(err)
		}
		n, _ := f.c.Peek(64)
		f.c.Release(n)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
}

// BenchmarkSend is the link alone: batches of one and of 64 into a link
// that the same goroutine drains after each. ns/op is per message.
func BenchmarkSend(b *testing.B) {
	for _, size := range []int{1, 64} {
		b.Run(fmt.Sprint("batch", size), func(b *testing.B) {
			f := newFixture(b, 1024, false, 0)
			ms := batch(size)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; i < b.N; i += size {
				if _, err := f.l.Send(ctx, ms, nil); err != nil {
					b.Fatal(err)
				}
				n, _ := f.c.Peek(size)
				f.c.Release(n)
			}
		})
	}
}

// ref is the ids and traces one Account.ID per message gives ms, in
// order: what write's runs of auto ids must equal.
func ref(ms []msg, every uint64) (ids []uint64, traced map[uint64]bool) {
	var next uint64
	traced = map[uint64]bool{}
	for _, m := range ms {
		id := m.id
		if id == 0 {
			next++
			id = next
		} else if id > next {
			next = id
		}
		ids = append(ids, id)
		if m.sampled || every != 0 && id%every == 0 {
			traced[id] = true
		}
	}
	return ids, traced
}

// A batch longer than a chunk, with explicit ids (one at a chunk's
// start, one at its end), refusals and sampled messages among auto ids,
// gets the ids and traces one message at a time would: into a link that
// holds it all, and into one that holds less than a chunk, drained while
// the sender waits (the batch straddles a full queue).
func TestRunsOfAutoIDs(t *testing.T) {
	for _, capacity := range []int{512, 16} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			f := newFixture(t, capacity, false, 7)
			ms := batch(3*chunk + 5)
			ms[0].id = 5
			ms[chunk-1].id = 3 // below the counter: moves nothing
			ms[chunk].id = 300
			ms[chunk+1].id = 90 // a duplicate auto id would follow it, were the run not cut
			ms[2*chunk+3].id = 400
			for _, i := range []int{1, 2, chunk + 2, 2 * chunk} {
				ms[i].sampled = true
			}
			ms[chunk+5].bad = true
			ms[2*chunk-1].payload = strings.Repeat("x", 100)
			want, traced := ref(ms, 7)
			var inLink []p2pqueue.Header
			done := make(chan struct{})
			go func() { // the kernel: drains until the link is closed
				defer close(done)
				for {
					hs, _ := f.drain(t)
					inLink = append(inLink, hs...)
					if _, err := f.c.Peek(1); errors.Is(err, p2pqueue.ErrClosed) {
						return
					}
					time.Sleep(20 * time.Microsecond)
				}
			}()
			ids := make([]uint64, len(ms))
			n, err := f.l.Send(context.Background(), ms, ids)
			f.l.Close()
			<-done
			if n != len(ms)-2 || !errors.Is(err, errBad) && !errors.Is(err, p2pqueue.ErrTooLarge) {
				t.Fatalf("Send = %d, %v; want %d and a refusal", n, err, len(ms)-2)
			}
			if fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Fatalf("ids\n%v, want\n%v", ids, want)
			}
			var begun []uint64
			for _, id := range want {
				if traced[id] {
					begun = append(begun, id)
				}
			}
			if fmt.Sprint(f.begun) != fmt.Sprint(begun) {
				t.Errorf("traces begun for %v, want %v", f.begun, begun)
			}
			for _, h := range inLink {
				if got := h.Flags&p2pqueue.FlagSampled != 0; got != traced[h.ID] || (h.Enqueued != 0) != got {
					t.Errorf("message %d: sampled %v, enqueued %d; want traced %v", h.ID, got, h.Enqueued, traced[h.ID])
				}
			}
			reasons := map[reason]int{}
			for i := range f.dead {
				reasons[f.dead[i].reason]++
				f.dead[i].reason = ""
			}
			if reasons["wrong type"] != 1 || reasons["oversize payload"] != 1 {
				t.Errorf("dead letters %+v", reasons)
			}
			f.check(t, len(ms), n, ids, inLink, 2, "")
		})
	}
}

// A batch of 64 takes its auto ids with one atomic add and allocates
// nothing, sampled or not.
func TestBatchAllocatesNothing(t *testing.T) {
	f := newFixture(t, 256, false, 5)
	ctx := context.Background()
	var ms [64]msg
	ms[10].sampled = true
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := f.l.Send(ctx, ms[:], nil); err != nil {
			t.Fatal(err)
		}
		n, _ := f.c.Peek(256)
		f.c.Release(n)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per batch, want 0", allocs)
	}
}
