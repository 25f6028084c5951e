package p2pqueue

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func flaggedQueue(t *testing.T, capacity uint32, payload int, start uint64) *Link {
	t.Helper()
	cfg := ConfigForFormat(capacity, payload, FormatFlagged)
	n, err := cfg.RegionSize()
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewHostRegion(n)
	if err != nil {
		t.Fatal(err)
	}
	l, err := initAt(r, cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestFlaggedConfig(t *testing.T) {
	c := ConfigForFormat(8, 100, FormatFlagged)
	if c.SlotSize != 320 || c.PayloadCap() != 128 || c.Format != FormatFlagged {
		t.Fatalf("ConfigForFormat(8, 100, flagged) = %+v, payload cap %d; want 320-byte slots holding 128", c, c.PayloadCap())
	}
	if c := ConfigForFormat(8, 100, FormatIndexed); c != ConfigFor(8, 100) {
		t.Fatalf("indexed ConfigForFormat = %+v, want ConfigFor's %+v", c, ConfigFor(8, 100))
	}
	if err := (Config{Capacity: 8, SlotSize: 64, Format: 7}).Validate(); !errors.Is(err, ErrBadFormat) {
		t.Fatalf("format 7: %v, want ErrBadFormat", err)
	}
	l, err := NewHostQueue(c)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(l.Region().Bytes[OffVersion:]); v != VersionFlagged {
		t.Fatalf("version %d, want %d", v, VersionFlagged)
	}
	a, err := Attach(l.Region())
	if err != nil {
		t.Fatal(err)
	}
	if a.Format() != FormatFlagged || a.Config() != l.Config() {
		t.Fatalf("Attach read %+v (%s), want %+v", a.Config(), a.Format(), l.Config())
	}
	p, _ := l.Producer()
	if err := p.TryEnqueue(&Message{Payload: make([]byte, 129)}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("129 bytes into a 128-byte flagged slot: %v, want ErrTooLarge", err)
	}
}

// Many laps of the ring, through every API pair, with the indices
// starting just below the 64-bit wrap: every message arrives once, in
// order, intact, and the counters agree.
func TestFlaggedRoundTrip(t *testing.T) {
	for _, start := range []uint64{0, ^uint64(0) - 5} {
		t.Run(fmt.Sprint(start), func(t *testing.T) {
			l := flaggedQueue(t, 8, 40, start)
			p, _ := l.Producer()
			c, _ := l.Consumer()
			const total = 1000
			payload := func(i int) []byte {
				return bytes.Repeat([]byte{byte(i)}, i%41) // 0 … 40 bytes: partial last words too
			}
			sent, got := 0, 0
			var want uint64
			check := func(h Header, b []byte) {
				t.Helper()
				if h.ID != uint64(got) || h.Type != uint32(got)*3 || !bytes.Equal(b, payload(got)) {
					t.Fatalf("message %d: id %d type %d payload %x", got, h.ID, h.Type, b)
				}
				want += uint64(len(b))
				got++
			}
			ms := make([]Message, 5)
			for round := 0; got < total; round++ {
				switch round % 3 {
				case 0: // Reserve/Write/Commit, Peek/Read/Release
					if r, err := p.Reserve(3); err == nil {
						k := 0
						for ; k < r && sent+k < total; k++ {
							m := Message{Header: Header{ID: uint64(sent + k), Type: uint32(sent+k) * 3}, Payload: payload(sent + k)}
							if err := p.Write(k, &m); err != nil {
								t.Fatal(err)
							}
						}
						if err := p.Commit(k); err != nil {
							t.Fatal(err)
						}
						sent += k
					}
					n, err := c.Peek(4)
					if err != nil && !errors.Is(err, ErrEmpty) {
						t.Fatal(err)
					}
					for i := range n {
						h, b, err := c.Read(i)
						if err != nil {
							t.Fatal(err)
						}
						check(h, b)
					}
					if err := c.Release(n); err != nil {
						t.Fatal(err)
					}
				case 1: // Slot/WriteHeader, TryDequeue
					if r, err := p.Reserve(2); err == nil {
						k := 0
						for ; k < r && sent+k < total; k++ {
							s, err := p.Slot(k)
							if err != nil {
								t.Fatal(err)
							}
							n := copy(s, payload(sent+k))
							if err := p.WriteHeader(k, &Header{ID: uint64(sent + k), Type: uint32(sent+k) * 3}, n); err != nil {
								t.Fatal(err)
							}
						}
						if err := p.Commit(k); err != nil {
							t.Fatal(err)
						}
						sent += k
					}
					var m Message
					if err := c.TryDequeue(&m); err == nil {
						check(m.Header, m.Payload)
					} else if !errors.Is(err, ErrEmpty) {
						t.Fatal(err)
					}
				case 2: // TryEnqueueBatch, TryDequeueBatch
					var in []Message
					for i := sent; i < min(sent+5, total); i++ {
						in = append(in, Message{Header: Header{ID: uint64(i), Type: uint32(i) * 3}, Payload: payload(i)})
					}
					if n, err := p.TryEnqueueBatch(in); err == nil || errors.Is(err, ErrFull) {
						sent += n
					} else {
						t.Fatal(err)
					}
					n, err := c.TryDequeueBatch(ms)
					if err != nil && !errors.Is(err, ErrEmpty) {
						t.Fatal(err)
					}
					for i := range n {
						check(ms[i].Header, ms[i].Payload)
					}
				}
			}
			s := l.Stats()
			if s.Published != start+total || s.Consumed != start+total || s.BytesIn != want || s.BytesOut != want || s.InFlight != 0 {
				t.Fatalf("stats %+v; want %d published and consumed from %d, %d bytes each way", s, total, start, want)
			}
		})
	}
}

// A written slot is not published until Commit: its first word is stored
// last. A Reserve that drops the reservation leaves nothing visible.
func TestFlaggedUncommittedInvisible(t *testing.T) {
	l := flaggedQueue(t, 4, 16, 0)
	p, _ := l.Producer()
	c, _ := l.Consumer()
	if _, err := p.Reserve(2); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(0, &Message{Header: Header{ID: 1}, Payload: []byte("dropped")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Peek(1); !errors.Is(err, ErrEmpty) {
		t.Fatalf("peek of a written, uncommitted slot: %v, want ErrEmpty", err)
	}
	if err := p.TryEnqueue(&Message{Header: Header{ID: 2}, Payload: []byte("kept")}); err != nil {
		t.Fatal(err)
	}
	var m Message
	if err := c.TryDequeue(&m); err != nil || m.ID != 2 || string(m.Payload) != "kept" {
		t.Fatalf("got %d %q %v, want message 2 \"kept\"", m.ID, m.Payload, err)
	}
}

// shuffledWrite publishes m into the slot for seq the way a device
// producer's stores may arrive over PCIe: every word on its own, in a
// random order, the first word not necessarily last. after runs between
// stores.
func shuffledWrite(l *Link, seq uint64, m *Message, rng *rand.Rand, after func()) {
	w0 := l.encodeFlagged(seq, &m.Header, m.Payload) // the words, flags included
	nw := (SlotHeaderSize + len(m.Payload) + 3) / 4
	words := make([]uint64, nw)
	words[0] = w0
	for j := 1; j < nw; j++ {
		words[j] = *l.word(seq, j)
		*l.word(seq, j) = uint64(l.lapFlag(seq-uint64(l.cfg.Capacity))) << 32 // back to "not yet arrived"
	}
	for _, j := range rng.Perm(nw) {
		*l.word(seq, j) = words[j]
		after()
	}
}

// Words landing one at a time in any order: the consumer never takes a
// slot before every word it needs carries the slot's flag, and then reads
// exactly what was sent.
func TestFlaggedOutOfOrderWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := flaggedQueue(t, 4, 64, 0)
	c, _ := l.Consumer()
	var seq uint64
	for i := range 200 { // 50 laps
		m := Message{Header: Header{ID: uint64(i) + 100, Type: 7, Flags: FlagControl, Origin: 3, Enqueued: 99}, Payload: bytes.Repeat([]byte{byte(i), 0xa5}, i%33)}
		stores, early := 0, 0
		var got Message
		shuffledWrite(l, seq, &m, rng, func() {
			stores++
			if err := c.TryDequeue(&got); err == nil {
				early = stores
			} else if !errors.Is(err, ErrEmpty) {
				t.Fatal(err)
			}
		})
		nw := (SlotHeaderSize + len(m.Payload) + 3) / 4
		if early != 0 && early != nw {
			t.Fatalf("message %d: dequeued after %d of its %d words", i, early, nw)
		}
		if early == 0 {
			t.Fatalf("message %d: not dequeued once all %d words landed", i, nw)
		}
		if got.Header != m.Header || !bytes.Equal(got.Payload, m.Payload) {
			t.Fatalf("message %d: got %+v %x, sent %+v %x", i, got.Header, got.Payload, m.Header, m.Payload)
		}
		seq++
	}
}

// A producer goroutine and a consumer goroutine over many laps of a small
// ring, with batches: nothing lost, duplicated or reordered (-race checks
// that every shared word is accessed atomically).
func TestFlaggedConcurrent(t *testing.T) {
	l := flaggedQueue(t, 16, 24, 0)
	p, _ := l.Producer()
	c, _ := l.Consumer()
	const total = 20000
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		batch := make([]Message, 7)
		for sent := 0; sent < total; {
			n := min(len(batch), total-sent)
			for i := range n {
				id := sent + i
				batch[i] = Message{Header: Header{ID: uint64(id)}, Payload: binary.LittleEndian.AppendUint64(nil, uint64(id)*7)[:id%9]}
			}
			k, err := p.EnqueueBatch(ctx, batch[:n])
			if err != nil {
				t.Error(err)
				return
			}
			sent += k
		}
		p.Close()
	})
	ms := make([]Message, 5)
	next := 0
	for {
		n, err := c.DequeueBatch(ctx, ms)
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms[:n] {
			want := binary.LittleEndian.AppendUint64(nil, uint64(next)*7)[:next%9]
			if m.ID != uint64(next) || !bytes.Equal(m.Payload, want) {
				t.Fatalf("got message %d %x, want %d %x", m.ID, m.Payload, next, want)
			}
			next++
		}
	}
	wg.Wait()
	if next != total {
		t.Fatalf("drained after %d messages, want %d", next, total)
	}
}

// Closed is reported only once drained, and a slot whose words land after
// the consumer first saw the link empty is still delivered.
func TestFlaggedCloseDrain(t *testing.T) {
	l := flaggedQueue(t, 4, 8, 0)
	p, _ := l.Producer()
	c, _ := l.Consumer()
	for i := range 3 {
		if err := p.TryEnqueue(&Message{Header: Header{ID: uint64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	if err := p.TryEnqueue(&Message{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("enqueue after close: %v", err)
	}
	for i := range 3 {
		var m Message
		if err := c.TryDequeue(&m); err != nil || m.ID != uint64(i) {
			t.Fatalf("dequeue %d after close: id %d, %v", i, m.ID, err)
		}
	}
	if _, err := c.Peek(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("peek of a closed, drained link: %v, want ErrClosed", err)
	}
	if !l.Closed() || l.Len() != 0 {
		t.Fatalf("closed %v len %d", l.Closed(), l.Len())
	}
}

// Queue memory holding what no correct producer writes: a flag of no
// nearby lap is ErrCorrupt; a length past the slot is a corrupt slot,
// consumed and reported with its header; nothing panics.
func TestFlaggedCorrupt(t *testing.T) {
	t.Run("flag", func(t *testing.T) {
		l := flaggedQueue(t, 4, 8, 0)
		*l.word(0, 0) = 0x1234_5678_0000_0000 // even: no lap's flag
		c, _ := l.Consumer()
		if _, err := c.Peek(1); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("peek of a word with a foreign flag: %v, want ErrCorrupt", err)
		}
	})
	t.Run("payload flag", func(t *testing.T) {
		l := flaggedQueue(t, 4, 8, 0)
		p, _ := l.Producer()
		if err := p.TryEnqueue(&Message{Header: Header{ID: 1}, Payload: []byte("12345678")}); err != nil {
			t.Fatal(err)
		}
		*l.word(0, SlotHeaderSize/4+1) = uint64(l.lapFlag(0)+8) << 32
		c, _ := l.Consumer()
		if _, err := c.Peek(1); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("peek of a slot with a foreign flag in its payload: %v, want ErrCorrupt", err)
		}
	})
	t.Run("length", func(t *testing.T) {
		l := flaggedQueue(t, 4, 8, 0)
		p, _ := l.Producer()
		for i := range 2 {
			if err := p.TryEnqueue(&Message{Header: Header{ID: uint64(i) + 1}, Payload: []byte("ok")}); err != nil {
				t.Fatal(err)
			}
		}
		*l.word(0, SlotOffLen/4) = uint64(l.lapFlag(0))<<32 | 1<<30
		c, _ := l.Consumer()
		ms := make([]Message, 2)
		n, err := c.TryDequeueBatch(ms)
		if n != 1 || !errors.Is(err, ErrCorruptSlot) || ms[0].ID != 1 {
			t.Fatalf("batch over a slot claiming 1 GiB: %d, %v, id %d; want 1 corrupt slot with id 1", n, err, ms[0].ID)
		}
		var m Message
		if err := c.TryDequeue(&m); err != nil || m.ID != 2 || string(m.Payload) != "ok" {
			t.Fatalf("message after the corrupt slot: %d %q %v", m.ID, m.Payload, err)
		}
		if s := l.Stats(); s.Consumed != 2 || s.BytesOut != uint64(l.Config().PayloadCap())+2 {
			t.Fatalf("stats %+v: want 2 consumed, the corrupt slot counting its %d-byte room", s, l.Config().PayloadCap())
		}
	})
}

// Init over a region that held a flagged queue clears the slots: a stale
// word of the old queue must not pass for a new message.
func TestFlaggedReinitClears(t *testing.T) {
	l := flaggedQueue(t, 4, 8, 0)
	p, _ := l.Producer()
	if err := p.TryEnqueue(&Message{Header: Header{ID: 9}}); err != nil {
		t.Fatal(err)
	}
	l2, err := Init(l.Region(), l.Config())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := l2.Consumer()
	if _, err := c.Peek(1); !errors.Is(err, ErrEmpty) {
		t.Fatalf("peek of a re-initialised queue: %v, want ErrEmpty", err)
	}
}

// TestFlagStateOlderLaps: a word a shorter message left alone keeps the
// flag of a lap before the last one; it is "not yet written", not corrupt
// (the TSan case ll saw the device loop take such a word's data as the
// lap's).
func TestFlagStateOlderLaps(t *testing.T) {
	flag := func(lap uint32) uint32 { return lap<<1 | 1 }
	for _, c := range []struct {
		want, f uint32
		st      int
	}{
		{flag(5), flag(5), 1}, {flag(5), 0, 0}, {flag(5), flag(4), 0}, {flag(5), flag(2), 0}, {flag(5), flag(0), 0},
		{flag(1), flag(1<<31 - 1), 0}, // an older lap across the 2^31 wrap
		{flag(5), flag(6), -1}, {flag(5), 4, -1}, {flag(5), flag(5 + 1<<30), -1},
	} {
		if got := flagState(c.want, c.f); got != c.st {
			t.Errorf("flagState(%#x, %#x) = %d, want %d", c.want, c.f, got, c.st)
		}
	}
}
