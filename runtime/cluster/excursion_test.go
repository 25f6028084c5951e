package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster/internal/wire"
	"github.com/ringactor/ringactor/runtime/internal/ext"
)

// The excursion's accounting, without a network: the run's first segment
// is a local actor that records the batches it is sent.

const excursionWait = 10 * time.Second

// deadLetters records a pipeline's dead letters.
type deadLetters struct {
	mu sync.Mutex
	ds []ra.DeadLetter
}

func (r *deadLetters) add(d ra.DeadLetter) {
	r.mu.Lock()
	r.ds = append(r.ds, d)
	r.mu.Unlock()
}

// take returns the dead letters recorded since the last take.
func (r *deadLetters) take() []ra.DeadLetter {
	r.mu.Lock()
	defer r.mu.Unlock()
	ds := r.ds
	r.ds = nil
	return ds
}

// expectDead checks that the dead letters since the last take are exactly
// ids (each once, in any order), all for reason, with an error wrapping
// want, at the run's first stage.
func expectDead(t *testing.T, r *deadLetters, reason ra.Reason, want error, ids ...uint64) {
	t.Helper()
	ds := r.take()
	var got []uint64
	for _, d := range ds {
		got = append(got, d.ID)
		if d.Reason != reason {
			t.Errorf("dead letter %d: reason %q, want %q", d.ID, d.Reason, reason)
		}
		if !errors.Is(d.Err, want) {
			t.Errorf("dead letter %d: err %v, want one wrapping %v", d.ID, d.Err, want)
		}
		if d.Stage != "far" || d.Device != 1 {
			t.Errorf("dead letter %d: stage %q device %d, want \"far\" on device 1", d.ID, d.Stage, d.Device)
		}
	}
	slices.Sort(got)
	ids = slices.Clone(ids)
	slices.Sort(ids)
	if !slices.Equal(got, ids) {
		t.Fatalf("dead-lettered %v, want %v", got, ids)
	}
}

// newTestExcursion is a run of one remote segment (stage "far" on device 1)
// of a pipeline that exists only for its accounting, on a runtime closed
// when the test ends.
func newTestExcursion(t *testing.T, window int) (*Pipeline, *excursion, *deadLetters) {
	t.Helper()
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 1, Log: io.Discard}})
	if err != nil {
		t.Fatalf("runtime: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	dead := &deadLetters{}
	cp := &Pipeline{rt: rt, host: ext.Of(rt), spec: ra.PipelineSpec{Name: "exc", OnDeadLetter: dead.add}}
	cp.segs = []*segment{{idx: 0, node: "other", stages: []ra.StageSpec{{Name: "far", Device: 1}}}}
	e := newExcursion(cp, 0, 0, window)
	cp.segs[0].exc = e
	cp.excs = []*excursion{e}
	return cp, e, dead
}

// farSegment stands in for the run's first segment: a local actor that
// hands on every BytesValue it receives.
type farSegment struct {
	t       *testing.T
	rt      *ra.Runtime
	pid     *actor.PID
	batches chan []byte
}

// upExcursion gives cp a node on its runtime, spawns the stand-in segment
// and marks the run up through it. The segment is stopped when the test
// ends, before the runtime closes.
func upExcursion(t *testing.T, cp *Pipeline, e *excursion) *farSegment {
	t.Helper()
	rt := cp.rt
	cp.node = &Node{rt: rt}
	f := &farSegment{t: t, rt: rt, batches: make(chan []byte, 256)}
	f.pid = rt.System().Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*wrapperspb.BytesValue); ok {
			f.batches <- bytes.Clone(m.Value)
		}
	}))
	t.Cleanup(func() {
		if err := rt.System().Root.StopFuture(f.pid).Wait(); err != nil {
			t.Errorf("stop the segment actor: %v", err)
		}
	})
	e.up(f.pid)
	return f
}

// next returns the next batch the segment received: its target and ids.
func (f *farSegment) next() (int, []uint64) {
	f.t.Helper()
	select {
	case b := <-f.batches:
		var br wire.BatchReader
		to, es, err := br.Decode(b)
		if err != nil {
			f.t.Fatalf("the segment got a batch it cannot decode: %v (%x)", err, b)
		}
		ids := make([]uint64, len(es))
		for i, en := range es {
			ids[i] = en.ID
			want := payloadOf(en.ID)
			if !bytes.Equal(en.Payload, want) || en.Flags != flagsOf(en.ID) {
				f.t.Fatalf("message %d arrived with flags %#x payload %x, want %#x %x", en.ID, en.Flags, en.Payload, flagsOf(en.ID), want)
			}
		}
		return to, ids
	case <-time.After(excursionWait):
		f.t.Fatalf("no batch reached the segment in %v", excursionWait)
		return 0, nil
	}
}

// quiet checks that the segment received no batch: every message sent to
// it before a sentinel is in its mailbox ahead of the sentinel.
func (f *farSegment) quiet() {
	f.t.Helper()
	sentinel := []byte("sentinel")
	f.rt.System().Root.Send(f.pid, wrapperspb.Bytes(sentinel))
	select {
	case b := <-f.batches:
		if !bytes.Equal(b, sentinel) {
			f.t.Fatalf("the segment got a batch (%x) where none was due", b)
		}
	case <-time.After(excursionWait):
		f.t.Fatalf("the sentinel did not reach the segment in %v", excursionWait)
	}
}

// Each message's flags and payload (two floats' bytes, so that the batch's
// entries are never shorter than its decoder accepts) follow from its id.
func flagsOf(id uint64) p2pqueue.Flags {
	if id%2 == 1 {
		return p2pqueue.FlagSampled
	}
	return 0
}

func payloadOf(id uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(id) + byte(i)
	}
	return b
}

func entriesOf(ids ...uint64) wire.EntryAt {
	return func(i int) (uint64, p2pqueue.Flags, []byte, string) {
		return ids[i], flagsOf(ids[i]), payloadOf(ids[i]), ""
	}
}

func span(from, to uint64) []uint64 {
	var ids []uint64
	for id := from; id <= to; id++ {
		ids = append(ids, id)
	}
	return ids
}

func sendIDs(ctx context.Context, e *excursion, ids ...uint64) error {
	_, err := e.send(ctx, len(ids), entriesOf(ids...))
	return err
}

func TestExcursionDownDeadLettersAtOnce(t *testing.T) {
	cp, e, dead := newTestExcursion(t, DefaultRemoteWindow)
	if err := e.isDown(); !errors.Is(err, ErrRemoteUnreachable) {
		t.Fatalf("a new run: isDown = %v, want ErrRemoteUnreachable", err)
	}
	ctx := context.Background()
	if _, err := e.send(ctx, 0, entriesOf()); err != nil {
		t.Fatalf("send of nothing: %v", err)
	}
	err := sendIDs(ctx, e, 1, 2, 3)
	if !errors.Is(err, ErrRemoteUnreachable) {
		t.Fatalf("send to a run that is down: %v, want ErrRemoteUnreachable", err)
	}
	expectDead(t, dead, ra.ReasonRemoteUnreachable, ErrRemoteUnreachable, 1, 2, 3)
	if n := cp.acct.Read(nil).DeadLettered; n != 3 {
		t.Fatalf("dropped = %d, want 3", n)
	}
	if n := e.outstanding(); n != 0 {
		t.Fatalf("outstanding = %d, want 0", n)
	}
	if e.arrive(2) {
		t.Fatalf("arrive of a dead-lettered id: true")
	}
	e.fail(ra.ReasonRemoteUnreachable, fmt.Errorf("%w: again", ErrRemoteUnreachable)) // already down: nothing to do
	expectDead(t, dead, 0, nil)
	if n := cp.acct.Read(nil).DeadLettered; n != 3 {
		t.Fatalf("dropped = %d after a fail of a run that was down, want 3", n)
	}
}

func TestExcursionArriveFailExactlyOnce(t *testing.T) {
	cp, e, dead := newTestExcursion(t, DefaultRemoteWindow)
	far := upExcursion(t, cp, e)
	ctx := context.Background()
	if err := e.isDown(); err != nil {
		t.Fatalf("isDown after up: %v", err)
	}

	ids := span(1, 10)
	if err := sendIDs(ctx, e, ids...); err != nil {
		t.Fatalf("send: %v", err)
	}
	to, got := far.next()
	if to != 0 || !slices.Equal(got, ids) {
		t.Fatalf("the segment got a batch for %d with %v, want for 0 with %v", to, got, ids)
	}
	if n := e.outstanding(); n != 10 {
		t.Fatalf("outstanding = %d, want 10", n)
	}

	back := span(1, 4)
	keep := make([]bool, len(back))
	e.arriveBatch(func(i int) uint64 { return back[i] }, keep)
	for i, k := range keep {
		if !k {
			t.Fatalf("arriveBatch: message %d not kept", back[i])
		}
	}
	if n := e.outstanding(); n != 6 {
		t.Fatalf("outstanding = %d after 4 arrived, want 6", n)
	}
	if e.arrive(4) {
		t.Fatalf("arrive(4) a second time: true, want false (it ended)")
	}
	if n := e.outstanding(); n != 6 {
		t.Fatalf("outstanding = %d after a repeated arrival, want 6", n)
	}

	why := fmt.Errorf("%w: node %q died", ErrRemoteUnreachable, "other")
	e.fail(ra.ReasonRemoteUnreachable, why)
	expectDead(t, dead, ra.ReasonRemoteUnreachable, why, span(5, 10)...)
	if n := cp.acct.Read(nil).DeadLettered; n != 6 {
		t.Fatalf("dropped = %d, want 6", n)
	}
	if err := e.isDown(); err != why {
		t.Fatalf("isDown = %v, want %v", err, why)
	}
	e.fail(ra.ReasonRemoteUnreachable, errors.New("a second failure")) // a run already down stays as it is
	expectDead(t, dead, ra.ReasonRemoteUnreachable, why)
	if err := e.isDown(); err != why {
		t.Fatalf("isDown after a second fail = %v, want %v", err, why)
	}

	if e.arrive(6) {
		t.Fatalf("arrive(6) after it was dead-lettered: true, want false")
	}
	keep = make([]bool, 2)
	e.arriveBatch(func(i int) uint64 { return []uint64{7, 1}[i] }, keep)
	if keep[0] || keep[1] {
		t.Fatalf("arriveBatch of ended messages kept %v", keep)
	}
	if n := e.outstanding(); n != 0 {
		t.Fatalf("outstanding = %d, want 0", n)
	}

	err := sendIDs(ctx, e, 11, 12)
	if err != why {
		t.Fatalf("send after fail: %v, want %v", err, why)
	}
	expectDead(t, dead, ra.ReasonRemoteUnreachable, why, 11, 12)
	if n := cp.acct.Read(nil).DeadLettered; n != 8 {
		t.Fatalf("dropped = %d, want 8", n)
	}
	far.quiet()
}

func TestExcursionWindowWaits(t *testing.T) {
	cp, e, dead := newTestExcursion(t, 4)
	far := upExcursion(t, cp, e)
	ctx := context.Background()

	if err := sendIDs(ctx, e, 1, 2, 3, 4); err != nil {
		t.Fatalf("send of a full window: %v", err)
	}
	if _, got := far.next(); !slices.Equal(got, span(1, 4)) {
		t.Fatalf("batch %v, want 1..4", got)
	}

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err := sendIDs(short, e, 5, 6)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("send past the window with a short ctx: %v, want DeadlineExceeded", err)
	}
	expectDead(t, dead, ra.ReasonShutdown, context.DeadlineExceeded, 5, 6)
	if n := e.outstanding(); n != 4 {
		t.Fatalf("outstanding = %d, want 4", n)
	}

	// A send waits for room until messages come back.
	done := make(chan error, 1)
	go func() { done <- sendIDs(ctx, e, 7, 8) }()
	select {
	case err := <-done:
		t.Fatalf("a send into a full window returned (%v) before any room was made", err)
	case <-time.After(100 * time.Millisecond):
	}
	back := []uint64{1, 2}
	keep := make([]bool, 2)
	e.arriveBatch(func(i int) uint64 { return back[i] }, keep)
	if !keep[0] || !keep[1] {
		t.Fatalf("arriveBatch kept %v", keep)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the waiting send: %v", err)
		}
	case <-time.After(excursionWait):
		t.Fatalf("the waiting send did not return in %v after room was made", excursionWait)
	}
	if _, got := far.next(); !slices.Equal(got, []uint64{7, 8}) {
		t.Fatalf("batch %v, want [7 8]", got)
	}
	if n := e.outstanding(); n != 4 {
		t.Fatalf("outstanding = %d, want 4", n)
	}

	// A single arrival makes room for a message too.
	go func() { done <- sendIDs(ctx, e, 9) }()
	select {
	case err := <-done:
		t.Fatalf("a send into a full window returned (%v) before any room was made", err)
	case <-time.After(100 * time.Millisecond):
	}
	if !e.arrive(3) {
		t.Fatalf("arrive(3): false")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the waiting send: %v", err)
		}
	case <-time.After(excursionWait):
		t.Fatalf("the waiting send did not return in %v after arrive", excursionWait)
	}
	if _, got := far.next(); !slices.Equal(got, []uint64{9}) {
		t.Fatalf("batch %v, want [9]", got)
	}

	// A send waiting for room when the run fails dead-letters its messages.
	go func() { done <- sendIDs(ctx, e, 10, 11) }()
	select {
	case err := <-done:
		t.Fatalf("a send into a full window returned (%v) before any room was made", err)
	case <-time.After(100 * time.Millisecond):
	}
	why := fmt.Errorf("%w: node died", ErrRemoteUnreachable)
	e.fail(ra.ReasonRemoteUnreachable, why)
	select {
	case err := <-done:
		if err != why {
			t.Fatalf("the waiting send: %v, want %v", err, why)
		}
	case <-time.After(excursionWait):
		t.Fatalf("the waiting send did not return in %v after the run failed", excursionWait)
	}
	expectDead(t, dead, ra.ReasonRemoteUnreachable, ErrRemoteUnreachable, 4, 7, 8, 9, 10, 11)
	if n := cp.acct.Read(nil).DeadLettered; n != 8 {
		t.Fatalf("dropped = %d, want 8 (5, 6, 4, 7..11)", n)
	}
	if n := e.outstanding(); n != 0 {
		t.Fatalf("outstanding = %d, want 0", n)
	}

	// Up again: a batch larger than the window goes when nothing is out.
	e.up(far.pid)
	if err := sendIDs(ctx, e, span(20, 25)...); err != nil {
		t.Fatalf("send of 6 into an empty window of 4: %v", err)
	}
	if _, got := far.next(); !slices.Equal(got, span(20, 25)) {
		t.Fatalf("batch %v, want 20..25", got)
	}
	back = span(20, 25)
	keep = make([]bool, len(back))
	e.arriveBatch(func(i int) uint64 { return back[i] }, keep)
	if !slices.Equal(keep, []bool{true, true, true, true, true, true}) {
		t.Fatalf("arriveBatch kept %v", keep)
	}
	if n := e.outstanding(); n != 0 {
		t.Fatalf("outstanding = %d, want 0", n)
	}
	expectDead(t, dead, 0, nil)
	far.quiet()
}

func TestExcursionDuplicateIDs(t *testing.T) {
	cp, e, dead := newTestExcursion(t, DefaultRemoteWindow)
	far := upExcursion(t, cp, e)
	ctx := context.Background()

	if err := sendIDs(ctx, e, 7, 7); err != nil {
		t.Fatalf("send: %v", err)
	}
	if _, got := far.next(); !slices.Equal(got, []uint64{7, 7}) {
		t.Fatalf("batch %v, want [7 7]", got)
	}
	if n := e.outstanding(); n != 2 {
		t.Fatalf("outstanding = %d, want 2", n)
	}
	for i, want := range []bool{true, true, false} {
		if got := e.arrive(7); got != want {
			t.Fatalf("arrival %d of id 7: %v, want %v", i+1, got, want)
		}
	}
	if n := e.outstanding(); n != 0 {
		t.Fatalf("outstanding = %d, want 0", n)
	}

	// Repeats across sends and within arriveBatch.
	if err := sendIDs(ctx, e, 8, 8, 9); err != nil {
		t.Fatalf("send: %v", err)
	}
	if err := sendIDs(ctx, e, 8); err != nil {
		t.Fatalf("send: %v", err)
	}
	far.next()
	far.next()
	if n := e.outstanding(); n != 4 {
		t.Fatalf("outstanding = %d, want 4", n)
	}
	back := []uint64{8, 9, 8, 9, 10}
	keep := make([]bool, len(back))
	e.arriveBatch(func(i int) uint64 { return back[i] }, keep)
	if want := []bool{true, true, true, false, false}; !slices.Equal(keep, want) {
		t.Fatalf("arriveBatch kept %v, want %v", keep, want)
	}
	if n := e.outstanding(); n != 1 {
		t.Fatalf("outstanding = %d, want 1 (one 8)", n)
	}

	// A failure dead-letters each repeat once.
	if err := sendIDs(ctx, e, 12, 12, 12); err != nil {
		t.Fatalf("send: %v", err)
	}
	far.next()
	e.fail(ra.ReasonRemoteUnreachable, ErrRemoteUnreachable)
	expectDead(t, dead, ra.ReasonRemoteUnreachable, ErrRemoteUnreachable, 8, 12, 12, 12)
	if n := cp.acct.Read(nil).DeadLettered; n != 4 {
		t.Fatalf("dropped = %d, want 4", n)
	}
	if e.arrive(12) || e.arrive(8) {
		t.Fatalf("an arrival after the failure was counted")
	}
	far.quiet()
}

// TestExcursionSplitsAndRefusesOversize: a batch is cut into remote
// messages under the transport's bound (one message alone may be up to
// MaxFloats), in order, and a message over MaxFloats is dead-lettered
// "wire.Oversize payload" at the sender, never sent, the rest of its batch still
// sent.
func TestExcursionSplitsAndRefusesOversize(t *testing.T) {
	cp, e, dead := newTestExcursion(t, DefaultRemoteWindow)
	f := upExcursion(t, cp, e)
	sizes := map[uint64]int{1: 100 << 10, 2: 600 << 10, 3: 600 << 10, 4: wire.MaxPayload, 5: wire.MaxPayload + 4, 6: 8, 7: 300 << 10, 8: 300 << 10}
	ids := span(1, 8)
	at := func(i int) (uint64, p2pqueue.Flags, []byte, string) {
		id := ids[i]
		return id, 0, make([]byte, sizes[id]), ""
	}
	n, err := e.send(context.Background(), len(ids), at)
	if n != 7 || !errors.Is(err, ErrNotEncodable) {
		t.Fatalf("send: %d taken, %v; want 7 and an error wrapping ErrNotEncodable", n, err)
	}
	expectDead(t, dead, ra.ReasonOversize, ErrNotEncodable, 5)
	var got [][]uint64
	for range 4 { // [1 2] [3] [4] [6 7 8]
		select {
		case b := <-f.batches:
			if len(b) > wire.MaxRemoteMessage {
				t.Errorf("a remote message of %d bytes, over wire.MaxRemoteMessage (%d)", len(b), wire.MaxRemoteMessage)
			}
			var br wire.BatchReader
			_, es, err := br.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			var batch []uint64
			payload := 0
			for _, en := range es {
				batch = append(batch, en.ID)
				payload += len(en.Payload)
				if len(en.Payload) != sizes[en.ID] {
					t.Errorf("message %d: %d bytes, want %d", en.ID, len(en.Payload), sizes[en.ID])
				}
			}
			if len(es) > 1 && payload > wire.MaxBatchPayload {
				t.Errorf("a batch of %d messages carries %d bytes, over wire.MaxBatchPayload (%d)", len(es), payload, wire.MaxBatchPayload)
			}
			got = append(got, batch)
		case <-time.After(excursionWait):
			t.Fatalf("batches received: %v, want 4", got)
		}
	}
	if want := fmt.Sprint([][]uint64{{1, 2}, {3}, {4}, {6, 7, 8}}); fmt.Sprint(got) != want {
		t.Fatalf("batches %v, want %v", got, want)
	}
	f.quiet()
	if e.outstanding() != 7 || cp.acct.Read(nil).DeadLettered != 1 {
		t.Fatalf("outstanding %d, dropped %d; want 7 out and 1 dead", e.outstanding(), cp.acct.Read(nil).DeadLettered)
	}
}
