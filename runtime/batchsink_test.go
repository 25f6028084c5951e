package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	ra "github.com/ringactor/ringactor/runtime"
)

// batchRecorder is a Sink.Batch that keeps what the contract lets it
// keep: copies made during the call.
type batchRecorder struct {
	mu    sync.Mutex
	ids   []uint64    // in the order the calls gave them
	vals  [][]float32 // each result's Floats, copied during its call
	calls int
	bad   []string // contract breaches seen during a call
}

func (b *batchRecorder) batch(rs []ra.Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if len(rs) == 0 || len(rs) > 64 {
		b.bad = append(b.bad, fmt.Sprintf("a call with %d results", len(rs)))
	}
	for _, r := range rs {
		if r.Stage != "inc" || len(r.Floats) != 1 || r.Bytes != nil {
			b.bad = append(b.bad, fmt.Sprintf("result %+v", r))
			continue
		}
		b.ids = append(b.ids, r.ID)
		b.vals = append(b.vals, append([]float32(nil), r.Floats...))
	}
}

// A Sink.Batch gets every result of the guide's pipeline, a batch at a
// time, in the order they left its exit, each right during its call;
// what it copied during the calls is still right after Close; a Request
// meanwhile gets its result (its own memory) and the batches do not; the
// account conserves.
func TestSinkBatchDeliversEveryResultInOrder(t *testing.T) {
	e := newEnv(t, "")
	spec := guide("batch-sink")
	rec := &batchRecorder{}
	a := newAccount()
	spec.Deliver.Batch = rec.batch
	spec.OnDeadLetter = a.deadLetter
	p := buildStarted(t, e.RT, spec)
	const n = 3000
	ds := make([]ra.Data, 0, n)
	for i := 1; i <= n; i++ {
		ds = append(ds, ra.Data{ID: uint64(i), Floats: []float32{float32(i)}})
	}
	for lo := 0; lo < n; lo += 500 {
		if k, err := p.SendBatch(ctxT(t), ds[lo:lo+500]); k != 500 || err != nil {
			t.Fatalf("SendBatch: %d, %v", k, err)
		}
	}
	r, err := p.Request(ctxT(t), ra.Data{ID: n + 1, Floats: []float32{8}})
	if err != nil || r.ID != n+1 || len(r.Floats) != 1 || r.Floats[0] != want(8) {
		t.Fatalf("request: %+v, %v", r, err)
	}
	closeUnbounded(t, p, "with a Sink.Batch")
	if r.Floats[0] != want(8) {
		t.Fatalf("the request's result changed after Close: %v", r.Floats)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bad) > 0 {
		t.Fatalf("%d breaches, e.g. %s", len(rec.bad), rec.bad[0])
	}
	if len(rec.ids) != n || len(a.dead) != 0 {
		t.Fatalf("the batches took %d results of %d, %d dead letters", len(rec.ids), n, len(a.dead))
	}
	for i, id := range rec.ids {
		if id != uint64(i+1) || rec.vals[i][0] != want(float32(id)) {
			t.Fatalf("result %d: id %d, value %v; want id %d, %v", i, id, rec.vals[i], i+1, want(float32(i+1)))
		}
	}
	if rec.calls >= n {
		t.Fatalf("%d calls for %d results: not batched", rec.calls, n)
	}
	if st := p.Stats(); st.Sent != n+1 || st.Delivered != n+1 || st.DeadLettered != 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A Sink.Batch that panics: every result of that call is dead-lettered
// "stage panic" at the egress (which it took is not known), the pump goes
// on with the next batch, and every message ends exactly once.
func TestSinkBatchPanicDeadLettersTheBatch(t *testing.T) {
	e := newEnv(t, "")
	a := newAccount()
	spec := guide("batch-panic")
	var mu sync.Mutex
	var panicked [][]uint64
	spec.Deliver.Batch = func(rs []ra.Result) {
		for _, r := range rs {
			if r.ID%7 == 0 {
				ids := make([]uint64, len(rs))
				for i := range rs {
					ids[i] = rs[i].ID
				}
				mu.Lock()
				panicked = append(panicked, ids)
				mu.Unlock()
				panic(fmt.Sprintf("batch refuses %d", r.ID))
			}
		}
		for _, r := range rs {
			a.result(r)
		}
	}
	spec.OnDeadLetter = a.deadLetter
	p := buildStarted(t, e.RT, spec)
	const n = 300
	sendN(t, p, n)
	closeUnbounded(t, p, "with a panicking Sink.Batch")
	reasons := a.check(t, n, p.Stats())
	mu.Lock()
	defer mu.Unlock()
	lost := 0
	for _, ids := range panicked {
		lost += len(ids)
		for _, id := range ids {
			d, ok := a.dead[id]
			if !ok || d.Reason != ra.ReasonStagePanic || d.Stage != "egress" || !errors.Is(d.Err, ra.ErrStagePanic) ||
				!strings.Contains(d.Err.Error(), "batch refuses") || !strings.Contains(d.Err.Error(), "goroutine ") {
				t.Fatalf("message %d of a panicked batch: dead letter %v (%v)", id, d, ok)
			}
		}
	}
	if len(panicked) == 0 || reasons["stage panic"] != lost || len(reasons) != 1 {
		t.Fatalf("dead letters %v; want the %d results of %d panicked batches as stage panics", reasons, lost, len(panicked))
	}
}

// A Send whose ctx ends while a Sink.Batch holds the pipeline up (the
// links fill behind it): the send returns ctx's error, what it had not
// written is dead-lettered "send cancelled", and once the sink lets go
// every message it wrote is delivered: each ends exactly once.
func TestSinkBatchHeldUpSendCancelled(t *testing.T) {
	e := newEnv(t, "")
	a := newAccount()
	spec := guide("batch-held")
	for i := range spec.Stages {
		spec.Stages[i].Capacity = 64
	}
	entered, hold := make(chan struct{}), make(chan struct{})
	var once sync.Once
	spec.Deliver.Batch = func(rs []ra.Result) {
		once.Do(func() { close(entered) })
		<-hold
		for _, r := range rs {
			a.result(r)
		}
	}
	spec.OnDeadLetter = a.deadLetter
	p := buildStarted(t, e.RT, spec)
	const n = 20000 // far more than the links hold
	ds := make([]ra.Data, n)
	for i := range ds {
		ds[i] = ra.Data{ID: uint64(i + 1), Floats: []float32{1}}
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	go func() {
		<-entered // the sink holds the first batch: the pipeline backs up
		cancel()
	}()
	taken, err := p.SendBatch(ctx, ds)
	if taken >= n || !errors.Is(err, context.Canceled) {
		t.Fatalf("SendBatch took %d of %d: %v; want it cut short by its ctx", taken, n, err)
	}
	close(hold)
	closeUnbounded(t, p, "after a cancelled send")
	reasons := a.check(t, n, p.Stats())
	if reasons["send cancelled"] != n-taken || len(a.delivered) != taken {
		t.Fatalf("took %d of %d; dead letters %v, %d delivered", taken, n, reasons, len(a.delivered))
	}
}
