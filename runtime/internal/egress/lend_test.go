package egress

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/ringactor/ringactor/p2pqueue"
)

// A Sink.Batch gets every result in order, a batch at a time, lent: each
// one's payload is its slot's (floats and typed bytes alike), right
// during the call; an undecodable one is dead instead, a requested one
// goes to its request in its own memory (and one offered to no request
// goes with the batch, counted once; while a request waits, the batch is
// decoded, not lent), the sampled ones' traces end; the
// account conserves, and the pump keeps nothing of them after the call.
func TestLendsBatches(t *testing.T) {
	var msgs []p2pqueue.Message
	for id := uint64(1); id <= 250; id++ {
		m := floats(id, float32(id), -float32(id))
		switch {
		case id%10 == 0:
			m = typed(id, "xy")
		case id == 33:
			m.Payload = m.Payload[:3] // undecodable
		}
		if id%50 == 0 {
			m.Flags |= p2pqueue.FlagSampled
		}
		msgs = append(msgs, m)
	}
	e, _ := exit(t, true, msgs...)
	h := &host{requests: map[uint64]bool{7: true, 150: true}}
	var got []uint64
	var kept []res // what the pump lent, kept past the calls (to see it cleared)
	calls, bad, asked, lent := 0, "", false, 0
	link := e.Link
	p, cancel, _ := pump(h, Sink[res]{Batch: func(rs []res) {
		calls++
		if len(rs) > Batch {
			bad = "a batch over Batch"
		}
		for _, r := range rs {
			got = append(got, r.id)
			switch {
			case r.id%10 == 0 && string(r.bytes) != "xy":
				bad = "typed bytes"
			case r.id%10 != 0 && (len(r.floats) != 2 || r.floats[0] != float32(r.id) || r.floats[1] != -float32(r.id)):
				bad = "floats"
			case !asked && r.id%10 != 0 && !inPeek(link, unsafe.Pointer(&r.floats[0])):
				bad = "floats copied out of the slot"
			case !asked:
				lent++
			}
		}
		kept = rs
	}})
	p.Pending = func() bool { // a request waits: 7 or 150 not answered yet
		asked = len(h.answered) < 2
		return asked
	}
	defer cancel()
	run(t, p, e)
	if bad != "" || lent == 0 {
		t.Fatalf("a lent result was wrong: %q; %d lent with no request waiting", bad, lent)
	}
	if len(got) != 247 || calls >= len(got) {
		t.Fatalf("%d results in %d calls, want 247 (250 less one dead, two answered), batched", len(got), calls)
	}
	want := uint64(1)
	for _, id := range got {
		for want == 7 || want == 33 || want == 150 {
			want++
		}
		if id != want {
			t.Fatalf("result %d after %d: out of order", id, want-1)
		}
		want++
	}
	for _, r := range kept[:cap(kept)] {
		if r.id != 0 || r.floats != nil || r.bytes != nil {
			t.Fatalf("the pump kept a lent result past its call: %+v", r)
		}
	}
	if len(h.answered) != 2 || len(h.dead) != 1 || h.dead[0].id != 33 || h.dead[0].why != Undecodable {
		t.Fatalf("answered %v, dead %+v", h.answered, h.dead)
	}
	if tot := totals(p, 250); tot.Delivered != 249 || tot.DeadLettered != 1 {
		t.Fatalf("account %+v", tot)
	}
	if len(h.traced) != 5 || h.traced[0] != 50 || h.traced[4] != 250 {
		t.Fatalf("traced %v, want 50, 100, 150 (answered), 200, 250", h.traced)
	}
}

// inPeek reports whether p is the payload of a slot c has peeked (the
// pump's peek, during its call).
func inPeek(c *p2pqueue.Consumer, p unsafe.Pointer) bool {
	for i := range Batch {
		_, b, err := c.Read(i)
		if err != nil {
			return false
		}
		if len(b) > 0 && unsafe.Pointer(&b[0]) == p {
			return true
		}
	}
	return false
}

// A Batch that panics: each of its results is dead (Panicked, the panic
// in the error) and no longer delivered; the pump goes on.
func TestLendPanics(t *testing.T) {
	var msgs []p2pqueue.Message
	for id := uint64(1); id <= Batch; id++ { // one batch
		msgs = append(msgs, floats(id, 1))
	}
	e, prod := exit(t, false, msgs...)
	h := &host{}
	first := true
	var after []uint64
	p, cancel, _ := pump(h, Sink[res]{Batch: func(rs []res) {
		if first {
			first = false
			for _, m := range msgs {
				if err := prod.TryEnqueue(&m); err != nil { // the next batch
					panic(err)
				}
			}
			prod.Close()
			panic("batch refused")
		}
		for _, r := range rs {
			after = append(after, r.id)
		}
	}})
	defer cancel()
	run(t, p, e)
	if len(h.dead) != Batch || len(after) != Batch {
		t.Fatalf("%d dead, %d delivered after the panic; want the first batch dead and the next delivered", len(h.dead), len(after))
	}
	for i, d := range h.dead {
		if d.id != uint64(i+1) || d.why != Panicked || !strings.Contains(d.err.Error(), "batch refused") {
			t.Fatalf("dead letter %d: %+v", i, d)
		}
	}
	if tot := totals(p, 2*Batch); tot.Delivered != Batch || tot.DeadLettered != Batch {
		t.Fatalf("account %+v", tot)
	}
}

// A Batch sink cannot take results one at a time (a group's, a cluster's).
func TestCheckRefusesBatch(t *testing.T) {
	if err := (Sink[res]{Batch: func([]res) {}}).Check(false); err == nil || !strings.Contains(err.Error(), "Batch") {
		t.Fatalf("Check: %v", err)
	}
	if n := (Sink[res]{Batch: func([]res) {}, Func: func(res) {}}).Count(false); n != 2 {
		t.Fatalf("Count %d", n)
	}
}
