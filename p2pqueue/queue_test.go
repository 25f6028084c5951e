package p2pqueue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ringactor/ringactor/internal/order"
)

func msg(id uint64, payload string) *Message {
	return &Message{Header: Header{ID: id, Type: 1, Origin: 2}, Payload: []byte(payload)}
}

func TestFullAndEmptyEdges(t *testing.T) {
	for _, capacity := range []uint32{2, 8} {
		l, p, c := mustQueue(t, capacity, 16)
		var m Message
		if err := c.TryDequeue(&m); !errors.Is(err, ErrEmpty) {
			t.Fatalf("empty queue: %v", err)
		}
		for i := range capacity {
			if err := p.TryEnqueue(msg(uint64(i), "abc")); err != nil {
				t.Fatalf("enqueue %d of %d: %v", i, capacity, err)
			}
		}
		if l.Len() != int(capacity) {
			t.Fatalf("len %d, want %d", l.Len(), capacity)
		}
		if err := p.TryEnqueue(msg(99, "")); !errors.Is(err, ErrFull) {
			t.Fatalf("full queue: %v", err)
		}
		// One slot freed is one slot usable again.
		if err := c.TryDequeue(&m); err != nil || m.ID != 0 {
			t.Fatalf("dequeue: %v id %d", err, m.ID)
		}
		if err := p.TryEnqueue(msg(uint64(capacity), "abc")); err != nil {
			t.Fatalf("enqueue after one freed: %v", err)
		}
		for i := uint64(1); i <= uint64(capacity); i++ {
			if err := c.TryDequeue(&m); err != nil || m.ID != i || string(m.Payload) != "abc" {
				t.Fatalf("dequeue %d: %v %+v", i, err, m)
			}
		}
		if err := c.TryDequeue(&m); !errors.Is(err, ErrEmpty) {
			t.Fatalf("drained queue: %v", err)
		}
		s := l.Stats()
		if s.Published != uint64(capacity)+1 || s.Consumed != s.Published || s.FullWaits != 1 || s.EmptyPolls != 2 {
			t.Fatalf("stats %+v", s)
		}
	}
}

func TestLargeCapacityFillAndDrain(t *testing.T) {
	const capacity = 1 << 20
	l, p, c := mustQueue(t, capacity, 8)
	batch := make([]Message, 4096)
	payloads := make([]byte, 8*len(batch))
	for i := range batch {
		batch[i].Payload = payloads[i*8 : i*8+8 : i*8+8]
	}
	var id uint64
	for l.Len() < capacity {
		for i := range batch {
			batch[i].ID = id + uint64(i)
			binary.LittleEndian.PutUint64(batch[i].Payload, id+uint64(i))
		}
		n, err := p.TryEnqueueBatch(batch)
		if err != nil {
			t.Fatal(err)
		}
		id += uint64(n)
	}
	if id != capacity {
		t.Fatalf("filled %d", id)
	}
	if _, err := p.TryEnqueueBatch(batch[:1]); !errors.Is(err, ErrFull) {
		t.Fatalf("full: %v", err)
	}
	out := make([]Message, 1000)
	for want := uint64(0); want < capacity; {
		n, err := c.TryDequeueBatch(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out[:n] {
			if m.ID != want || binary.LittleEndian.Uint64(m.Payload) != want {
				t.Fatalf("got id %d, want %d", m.ID, want)
			}
			want++
		}
	}
	if l.Len() != 0 {
		t.Fatalf("len %d after drain", l.Len())
	}
}

func TestCloseSemantics(t *testing.T) {
	l, p, c := mustQueue(t, 4, 8)
	for i := range 3 {
		if err := p.TryEnqueue(msg(uint64(i), "m")); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	p.Close() // idempotent
	if !l.Closed() {
		t.Fatal("not closed")
	}
	if err := p.TryEnqueue(msg(9, "late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("enqueue after close: %v", err)
	}
	if _, err := p.Reserve(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("reserve after close: %v", err)
	}
	var m Message
	for i := range 3 {
		if err := c.TryDequeue(&m); err != nil || m.ID != uint64(i) {
			t.Fatalf("queued message %d lost after close: %v", i, err)
		}
	}
	for range 2 { // stays closed
		if err := c.TryDequeue(&m); !errors.Is(err, ErrClosed) {
			t.Fatalf("drained closed queue: %v", err)
		}
	}
	if err := c.Dequeue(context.Background(), &m); !errors.Is(err, ErrClosed) {
		t.Fatalf("Dequeue on drained closed queue: %v", err)
	}
	// A producer attached to a closed link cannot reopen it.
	l2, err := Attach(l.Region())
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := l2.Producer()
	if err := p2.TryEnqueue(msg(1, "")); !errors.Is(err, ErrClosed) {
		t.Fatalf("reattached producer: %v", err)
	}
}

// waitParked waits until the consumer has announced it is parked.
func waitParked(t *testing.T, l *Link) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !l.Stats().ConsumerParked {
		if time.Now().After(deadline) {
			t.Fatal("consumer never parked")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCloseWakesParkedConsumer(t *testing.T) {
	bell := NewDoorbell()
	bell.fallback = time.Hour // only Close's ring can wake it
	l, p, c := mustQueue(t, 4, 8, bell)
	done := make(chan error)
	go func() {
		var m Message
		done <- c.Dequeue(context.Background(), &m)
	}()
	waitParked(t, l)
	p.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked Dequeue: %v", err)
	}
}

func TestContextEndsWaits(t *testing.T) {
	_, p, c := mustQueue(t, 2, 8)
	for i := range 2 {
		if err := p.TryEnqueue(msg(uint64(i), "")); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Enqueue(ctx, msg(3, "")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Enqueue on full queue: %v", err)
	}
	if _, err := p.EnqueueBatch(ctx, []Message{{}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("EnqueueBatch on full queue: %v", err)
	}
	var m Message
	for range 2 {
		if err := c.TryDequeue(&m); err != nil {
			t.Fatal(err)
		}
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := c.Dequeue(ctx2, &m); !errors.Is(err, context.Canceled) {
		t.Fatalf("Dequeue on empty queue: %v", err)
	}
	if _, err := c.DequeueBatch(ctx2, make([]Message, 2)); !errors.Is(err, context.Canceled) {
		t.Fatalf("DequeueBatch on empty queue: %v", err)
	}
}

func TestDoorbellWakesParkedConsumer(t *testing.T) {
	bell := NewDoorbell()
	bell.fallback = time.Hour // only a ring can wake it
	l, p, c := mustQueue(t, 4, 8, bell)
	got := make(chan uint64)
	go func() {
		var m Message
		if err := c.Dequeue(context.Background(), &m); err != nil {
			t.Error(err)
		}
		got <- m.ID
	}()
	waitParked(t, l)
	if err := p.TryEnqueue(msg(77, "wake")); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		if id != 77 {
			t.Fatalf("got %d", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("parked consumer not woken by the producer")
	}
	if bell.Rings() == 0 {
		t.Fatal("producer never rang")
	}
	if l.Stats().ConsumerParked {
		t.Fatal("consumer still marked parked")
	}
}

func TestOversizePayloadRejectedWithoutPublishing(t *testing.T) {
	l, p, _ := mustQueue(t, 4, 32)
	big := &Message{Payload: make([]byte, 33)}
	if err := p.TryEnqueue(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize: %v", err)
	}
	ms := []Message{*msg(1, "ok"), {Payload: make([]byte, 100)}, *msg(3, "never")}
	n, err := p.TryEnqueueBatch(ms)
	if n != 1 || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("batch: n %d err %v", n, err)
	}
	if l.Len() != 1 {
		t.Fatalf("len %d, want only the message before the oversize one", l.Len())
	}
}

func TestSidesClaimedOnce(t *testing.T) {
	l, _, _ := mustQueue(t, 4, 8)
	if _, err := l.Producer(); !errors.Is(err, ErrClaimed) {
		t.Errorf("second producer: %v", err)
	}
	if _, err := l.Consumer(); !errors.Is(err, ErrClaimed) {
		t.Errorf("second consumer: %v", err)
	}
}

func TestBatchMisuse(t *testing.T) {
	_, p, c := mustQueue(t, 4, 8)
	if err := p.Write(0, msg(1, "")); !errors.Is(err, ErrMisuse) {
		t.Error("write without reserve", err)
	}
	if n, err := p.Reserve(2); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	if err := p.Write(2, msg(1, "")); err == nil {
		t.Error("write past reservation")
	}
	if err := p.Write(1, msg(1, "")); !errors.Is(err, ErrMisuse) {
		t.Error("write out of order", err)
	}
	if err := p.Write(0, msg(1, "")); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(2); !errors.Is(err, ErrMisuse) {
		t.Error("commit of an unwritten slot", err)
	}
	if n, err := p.Reserve(0); n != 0 || err != nil {
		t.Error("reserve 0", n, err)
	}
	if _, _, err := c.Read(0); err == nil {
		t.Error("read without peek")
	}
	if err := c.Release(1); err == nil {
		t.Error("release without peek")
	}
	if n, err := c.Peek(0); n != 0 || err != nil {
		t.Error("peek 0", n, err)
	}
}

func TestReservedButUncommittedIsInvisible(t *testing.T) {
	l, p, c := mustQueue(t, 4, 8)
	n, _ := p.Reserve(3)
	for i := range n {
		if err := p.Write(i, msg(uint64(i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	var m Message
	if err := c.TryDequeue(&m); !errors.Is(err, ErrEmpty) {
		t.Fatalf("uncommitted slots visible: %v", err)
	}
	if err := p.Commit(2); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 2 {
		t.Fatalf("len %d after committing 2 of 3", l.Len())
	}
	// The peek/read/release path sees the same messages.
	k, err := c.Peek(8)
	if k != 2 || err != nil {
		t.Fatal(k, err)
	}
	for i := range k {
		h, payload, err := c.Read(i)
		if err != nil || h.ID != uint64(i) || string(payload) != "x" {
			t.Fatalf("read %d: %+v %q %v", i, h, payload, err)
		}
	}
	if err := c.Release(k); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 0 {
		t.Fatalf("len %d after release", l.Len())
	}
}

func TestSampledMessagesAreStamped(t *testing.T) {
	_, p, c := mustQueue(t, 4, 8)
	before := uint64(time.Now().UnixNano())
	if err := p.TryEnqueue(&Message{Header: Header{ID: 1, Flags: FlagSampled}}); err != nil {
		t.Fatal(err)
	}
	if err := p.TryEnqueue(&Message{Header: Header{ID: 2}}); err != nil {
		t.Fatal(err)
	}
	var m Message
	_ = c.TryDequeue(&m)
	if m.Enqueued < before {
		t.Errorf("sampled message stamped %d, before %d", m.Enqueued, before)
	}
	_ = c.TryDequeue(&m)
	if m.Enqueued != 0 {
		t.Errorf("unsampled message stamped %d", m.Enqueued)
	}
}

func TestCorruptSlotIsConsumedAndReported(t *testing.T) {
	l, p, c := mustQueue(t, 4, 8)
	for i := range 3 {
		if err := p.TryEnqueue(msg(uint64(i), "ok")); err != nil {
			t.Fatal(err)
		}
	}
	// A faulty peer writes a length past the slot into message 1.
	binary.LittleEndian.PutUint32(l.slot(1)[SlotOffLen:], 1<<31)
	var m Message
	if err := c.TryDequeue(&m); err != nil || m.ID != 0 {
		t.Fatal(err)
	}
	err := c.TryDequeue(&m)
	if !errors.Is(err, ErrCorruptSlot) || m.ID != 1 {
		t.Fatalf("corrupt slot: %v, id %d", err, m.ID)
	}
	if err := c.TryDequeue(&m); err != nil || m.ID != 2 {
		t.Fatalf("message after corrupt one: %v id %d", err, m.ID)
	}
}

func TestCorruptIndicesAreErrors(t *testing.T) {
	l, p, c := mustQueue(t, 4, 8)
	// A peer publishes a tail far past head, or far behind it: every call
	// after that is an error too, not a slice past the ring.
	out := make([]Message, 64)
	for _, bad := range []uint64{100, 1 << 63, ^uint64(0)} {
		order.StoreRelease64(l.tail, bad)
		var m Message
		for range 3 {
			if err := c.TryDequeue(&m); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("tail %d: consumer: %v", bad, err)
			}
			if n, err := c.TryDequeueBatch(out); n != 0 || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("tail %d: batch consumer: %d, %v", bad, n, err)
			}
			if n, err := c.Peek(64); n != 0 || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("tail %d: peek: %d, %v", bad, n, err)
			}
		}
	}
	order.StoreRelease64(l.tail, 0)
	order.StoreRelease64(l.head, 50)
	for i := range 4 { // room by the cached head
		if err := p.TryEnqueue(msg(uint64(i), "")); err != nil {
			t.Fatalf("producer: %v", err)
		}
	}
	for range 3 {
		if err := p.TryEnqueue(msg(9, "")); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("producer re-reading a corrupt head: %v", err)
		}
		if n, err := p.TryEnqueueBatch(out[:8]); n != 0 || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("batch producer on a corrupt head: %d, %v", n, err)
		}
	}
	if got := order.LoadAcquire64(l.tail); got != 4 {
		t.Fatalf("producer published past a corrupt head: tail %d", got)
	}
	order.StoreRelease64(l.head, 0) // the consumer's own value again
	var m Message
	for i := range 4 {
		if err := c.TryDequeue(&m); err != nil || m.ID != uint64(i) {
			t.Fatalf("after recovery: %v id %d", err, m.ID)
		}
	}
	order.StoreRelease32(l.closed, 9) // empty now: the garbage flag must be named, not read as open
	if err := c.TryDequeue(&m); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage closed flag: %v", err)
	}
}

// A message built in place through Slot and WriteHeader reads back like one
// written with Write; headers must still be written in order.
func TestWriteInPlace(t *testing.T) {
	_, p, c := mustQueue(t, 8, 32)
	if _, err := p.Slot(0); !errors.Is(err, ErrMisuse) {
		t.Fatalf("Slot before Reserve: %v", err)
	}
	if n, err := p.Reserve(2); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	for i := range 2 {
		buf, err := p.Slot(i)
		if err != nil || len(buf) != 32 {
			t.Fatalf("slot %d: %d bytes, %v", i, len(buf), err)
		}
		copy(buf, fmt.Sprintf("payload-%d", i))
	}
	if err := p.WriteHeader(1, &Header{ID: 1}, 9); !errors.Is(err, ErrMisuse) {
		t.Fatalf("out-of-order header: %v", err)
	}
	if err := p.WriteHeader(0, &Header{ID: 10, Origin: 3}, 33); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize in-place payload: %v", err)
	}
	for i := range 2 {
		if err := p.WriteHeader(i, &Header{ID: uint64(10 + i), Origin: 3}, 9); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Commit(2); err != nil {
		t.Fatal(err)
	}
	var m Message
	for i := range 2 {
		if err := c.TryDequeue(&m); err != nil {
			t.Fatal(err)
		}
		if m.ID != uint64(10+i) || m.Origin != 3 || string(m.Payload) != fmt.Sprintf("payload-%d", i) {
			t.Fatalf("message %d: %+v %q", i, m.Header, m.Payload)
		}
	}
	if st := p.Link().Stats(); st.BytesIn != 18 {
		t.Fatalf("bytes in %d, want 18", st.BytesIn)
	}
}

// ParkAll wakes on a publish to any of the links, on Ring, and at its
// bound; it refuses links that ring another doorbell.
func TestParkAll(t *testing.T) {
	bell := NewDoorbell()
	_, pa, ca := mustQueue(t, 4, 8, bell)
	_, pb, cb := mustQueue(t, 4, 8, bell)
	_, _, other := mustQueue(t, 4, 8)
	ctx := context.Background()
	if err := ParkAll(ctx, bell, time.Hour, ca, other); !errors.Is(err, ErrMisuse) {
		t.Fatalf("park on a link without the doorbell: %v", err)
	}
	start := time.Now()
	if err := ParkAll(ctx, bell, 20*time.Millisecond, ca, cb); err != nil || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("idle park returned after %v: %v", time.Since(start), err)
	}
	for _, p := range []*Producer{pb, pa} {
		done := make(chan error, 1)
		go func() { done <- ParkAll(ctx, bell, time.Hour, ca, cb) }()
		for !ca.l.Stats().ConsumerParked || !cb.l.Stats().ConsumerParked {
			time.Sleep(time.Millisecond)
		}
		if err := p.TryEnqueue(&Message{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var m Message
		if err := p.Link().consumerFor(ca, cb).TryDequeue(&m); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- ParkAll(ctx, bell, time.Hour) }()
	bell.Ring()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ca.l.Stats().ConsumerParked {
		t.Fatal("parked flag left set")
	}
	// A doorbell set after both sides were claimed is used at once.
	l, p, c := mustQueue(t, 4, 8)
	late := NewDoorbell()
	l.SetDoorbell(late)
	go func() { done <- ParkAll(ctx, late, time.Hour, c) }()
	for !l.Stats().ConsumerParked {
		time.Sleep(time.Millisecond)
	}
	if err := p.TryEnqueue(&Message{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || late.Rings() != 1 {
		t.Fatalf("late doorbell: %v, %d rings", err, late.Rings())
	}
}

// consumerFor picks, of cs, the consumer of l.
func (l *Link) consumerFor(cs ...*Consumer) *Consumer {
	for _, c := range cs {
		if c.l == l {
			return c
		}
	}
	return nil
}

// Detach gives a claim back.
func TestDetach(t *testing.T) {
	l, p, c := mustQueue(t, 4, 8)
	if _, err := l.Producer(); !errors.Is(err, ErrClaimed) {
		t.Fatal(err)
	}
	p.Detach()
	c.Detach()
	if _, err := l.Producer(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Consumer(); err != nil {
		t.Fatal(err)
	}
}

func TestPeekWait(t *testing.T) {
	l, err := NewHostQueue(ConfigFor(8, 16))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := l.Producer()
	c, _ := l.Consumer()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.PeekWait(ctx, 4); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("empty link: %v", err)
	}
	go func() {
		time.Sleep(5 * time.Millisecond)
		p.Enqueue(context.Background(), &Message{Header: Header{ID: 7}, Payload: []byte("abcd")})
		p.Close()
	}()
	n, err := c.PeekWait(context.Background(), 4)
	if err != nil || n != 1 {
		t.Fatalf("PeekWait = %d, %v", n, err)
	}
	if h, payload, err := c.Read(0); err != nil || h.ID != 7 || string(payload) != "abcd" {
		t.Fatalf("Read = %+v %q %v", h, payload, err)
	}
	if err := c.Release(1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PeekWait(context.Background(), 4); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed and drained: %v", err)
	}
}

func TestQueuedObservesWithoutConsuming(t *testing.T) {
	l, err := NewHostQueue(ConfigFor(8, 16))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := l.Producer()
	c, _ := l.Consumer()
	for id := uint64(1); id <= 5; id++ {
		if err := p.TryEnqueue(&Message{Header: Header{ID: id}, Payload: []byte{1}}); err != nil {
			t.Fatal(err)
		}
	}
	var m Message
	if err := c.TryDequeue(&m); err != nil || m.ID != 1 {
		t.Fatal(m.ID, err)
	}
	hs, err := l.Queued()
	if err != nil || len(hs) != 4 || hs[0].ID != 2 || hs[3].ID != 5 {
		t.Fatalf("Queued = %+v, %v", hs, err)
	}
	if l.Len() != 4 {
		t.Fatalf("Queued consumed: len %d", l.Len())
	}
}
