package p2pqueue

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// fill writes a payload that is a function of id, so a torn or stale slot
// read shows up as a mismatch.
func fill(p []byte, id uint64) {
	for i := range p {
		p[i] = byte(id>>(8*(i%8))) ^ byte(i)
	}
}

func checkPayload(t *testing.T, m *Message, wantLen int) {
	t.Helper()
	if len(m.Payload) != wantLen {
		t.Fatalf("message %d: payload %d bytes, want %d", m.ID, len(m.Payload), wantLen)
	}
	for i, b := range m.Payload {
		if b != byte(m.ID>>(8*(i%8)))^byte(i) {
			t.Fatalf("message %d: payload byte %d is %#x", m.ID, i, b)
		}
	}
}

func payloadLen(id uint64, capLen int) int { return int(id*7919) % (capLen + 1) }

// stress moves n messages through a queue of the given capacity with random
// batch sizes on both sides, and checks order, content and counters.
func stress(t *testing.T, l *Link, n uint64, seed uint64) {
	t.Helper()
	p, err := l.Producer()
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Consumer()
	if err != nil {
		t.Fatal(err)
	}
	start := l.Stats().Published
	capLen := l.Config().PayloadCap()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	perr := make(chan error, 1)
	go func() {
		defer p.Close()
		r := rand.New(rand.NewPCG(seed, 1))
		batch := make([]Message, 64)
		for i := range batch {
			batch[i].Payload = make([]byte, 0, capLen)
		}
		for id := uint64(0); id < n; {
			k := min(uint64(1+r.IntN(len(batch))), n-id)
			for i := range k {
				m := &batch[i]
				m.ID, m.Type = id+i, uint32(id+i)
				m.Payload = m.Payload[:payloadLen(m.ID, capLen)]
				fill(m.Payload, m.ID)
			}
			var err error
			switch r.IntN(3) {
			case 0:
				err = p.Enqueue(ctx, &batch[0])
				k = 1
			case 1:
				_, err = p.EnqueueBatch(ctx, batch[:k])
			default:
				// Zero-copy path: write k, commit only some; the rest go next round.
				var got int
				if got, err = p.Reserve(int(k)); errors.Is(err, ErrFull) {
					runtime.Gosched()
					continue
				}
				for i := 0; err == nil && i < got; i++ {
					err = p.Write(i, &batch[i])
				}
				k = uint64(1 + r.IntN(got))
				if err == nil {
					err = p.Commit(int(k))
				}
			}
			if err != nil {
				perr <- err
				return
			}
			id += k
		}
		perr <- nil
	}()

	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]Message, 64)
	var want uint64
	for {
		var k int
		var err error
		switch r.IntN(3) {
		case 0:
			err = c.Dequeue(ctx, &out[0])
			if err == nil {
				k = 1
			}
		case 1:
			k, err = c.DequeueBatch(ctx, out[:1+r.IntN(len(out))])
		default:
			// Zero-copy path: peek some, read them in place, release only part.
			var got int
			if got, err = c.Peek(1 + r.IntN(len(out))); errors.Is(err, ErrEmpty) {
				runtime.Gosched()
				continue
			}
			k = 0
			if err == nil {
				k = 1 + r.IntN(got)
				for i := 0; err == nil && i < k; i++ {
					var payload []byte
					out[i].Header, payload, err = c.Read(i)
					out[i].Payload = append(out[i].Payload[:0], payload...)
				}
				if err == nil {
					err = c.Release(k)
				}
			}
		}
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil {
			t.Fatalf("after %d messages: %v", want, err)
		}
		for i := range k {
			m := &out[i]
			if m.ID != want || m.Type != uint32(want) {
				t.Fatalf("got message %d, want %d (lost, duplicated or reordered)", m.ID, want)
			}
			checkPayload(t, m, payloadLen(want, capLen))
			want++
		}
	}
	if err := <-perr; err != nil {
		t.Fatal(err)
	}
	if want != n {
		t.Fatalf("received %d of %d", want, n)
	}
	s := l.Stats()
	if s.Published-start != n || s.Consumed != s.Published || s.InFlight != 0 || !s.Closed {
		t.Fatalf("counters do not conserve: %+v (start %d, sent %d)", s, start, n)
	}
	if s.BytesIn != s.BytesOut {
		t.Fatalf("bytes in %d, out %d", s.BytesIn, s.BytesOut)
	}
}

func TestStressMillionMessagesRandomBatches(t *testing.T) {
	n := uint64(1_000_000)
	if testing.Short() {
		n = 100_000
	}
	l, err := NewHostQueue(ConfigFor(256, 40))
	if err != nil {
		t.Fatal(err)
	}
	stress(t, l, n, 1)
}

func TestStressWithDoorbell(t *testing.T) {
	l, err := NewHostQueue(ConfigFor(8, 24))
	if err != nil {
		t.Fatal(err)
	}
	bell := NewDoorbell()
	bell.fallback = time.Hour // a lost wake-up hangs the test instead of hiding
	l.SetDoorbell(bell)
	stress(t, l, 30_000, 4)
	t.Logf("doorbell rang %d times", bell.Rings())
}

func TestStressCapacityTwo(t *testing.T) {
	l, err := NewHostQueue(ConfigFor(2, 24))
	if err != nil {
		t.Fatal(err)
	}
	stress(t, l, 50_000, 2)
}

func TestStressIndicesWrapPast64Bits(t *testing.T) {
	cfg := ConfigFor(16, 24)
	n, _ := cfg.RegionSize()
	r, _ := NewHostRegion(n)
	start := ^uint64(0) - 1000 // wraps after 1001 messages
	l, err := initAt(r, cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	stress(t, l, 20_000, 3)
	if s := l.Stats(); s.Published >= start || s.Published != start+20_000 {
		t.Fatalf("tail %d did not wrap", s.Published)
	}
}

func TestWrapEdgesOneByOne(t *testing.T) {
	cfg := ConfigFor(4, 8)
	n, _ := cfg.RegionSize()
	r, _ := NewHostRegion(n)
	l, err := initAt(r, cfg, ^uint64(0)-2)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := l.Producer()
	c, _ := l.Consumer()
	var m Message
	buf := make([]byte, 8)
	for id := uint64(0); id < 40; id++ {
		// Keep the queue full across the wrap point.
		for l.Len() < 4 {
			binary.LittleEndian.PutUint64(buf, id+uint64(l.Len()))
			if err := p.TryEnqueue(&Message{Header: Header{ID: id + uint64(l.Len())}, Payload: buf}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.TryEnqueue(&Message{}); err != ErrFull {
			t.Fatalf("at %d: %v", id, err)
		}
		if err := c.TryDequeue(&m); err != nil || m.ID != id || binary.LittleEndian.Uint64(m.Payload) != id {
			t.Fatalf("at %d: %v id %d", id, err, m.ID)
		}
	}
	if _, err := Attach(r); err != nil {
		t.Fatalf("attach after wrap: %v", err)
	}
}
