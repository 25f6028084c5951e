package runtime_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
)

var (
	panickyOnce sync.Once
	errPanicky  = errors.New("panicky: an error value thrown")
)

// registerPanicky registers test_panicky, a Go stage that panics on a
// Keyed whose key is a multiple of 5 (with an error value when the key
// is also a multiple of 10, a string otherwise) and passes the rest on.
func registerPanicky(t *testing.T) {
	t.Helper()
	var err error
	panickyOnce.Do(func() {
		err = ra.GoStage("test_panicky", func(k kernels.Keyed) (kernels.Keyed, error) {
			switch {
			case k.Key%10 == 0:
				panic(fmt.Errorf("key %d: %w", k.Key, errPanicky))
			case k.Key%5 == 0:
				panic(fmt.Sprintf("panicky on key %d", k.Key))
			}
			k.Values[0]++
			return k, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A Go stage that panics on some messages: each of those is dead-lettered
// "stage panic" with an error that wraps ErrStagePanic (and the panic's
// error value) and holds the value and the stack; every other message is
// delivered; the stage goes on, counts the panics as stage errors, and
// the account conserves after Close. With one goroutine and with a
// worker pool.
func TestStagePanicIsADeadLetter(t *testing.T) {
	registerPanicky(t)
	e := newEnv(t, "")
	for _, workers := range []int{1, 4} {
		a := newAccount()
		var mu sync.Mutex
		vals := map[uint64]float32{}
		p := buildStarted(t, e.RT, ra.PipelineSpec{Name: fmt.Sprintf("panicky-%d", workers), Stages: []ra.StageSpec{
			{Name: "panicky", Op: "test_panicky", Device: e.RT.Registry().CPUDevice().ID, Workers: workers},
		}, Deliver: ra.Sink{Func: func(r ra.Result) {
			a.result(r)
			k, err := ra.As[kernels.Keyed](r)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				vals[r.ID] = -1
				return
			}
			vals[r.ID] = k.Values[0]
		}}, OnDeadLetter: a.deadLetter})
		const n = 500
		for i := 1; i <= n; i++ {
			if err := p.Send(ctxT(t), ra.Data{ID: uint64(i), Value: kernels.Keyed{Key: uint32(i), Count: 1, Values: [8]float32{float32(i)}}}); err != nil {
				t.Fatal(err)
			}
		}
		closeUnbounded(t, p, "behind a panicking stage")
		reasons := a.check(t, n, p.Stats())
		if reasons["stage panic"] != n/5 || len(reasons) != 1 {
			t.Fatalf("workers %d: dead letters %v; want %d stage panics and nothing else", workers, reasons, n/5)
		}
		for id, d := range a.dead {
			if id%5 != 0 || d.Reason != ra.ReasonStagePanic || d.Stage != "panicky" || !errors.Is(d.Err, ra.ErrStagePanic) {
				t.Fatalf("workers %d: dead letter %v", workers, d)
			}
			msg := d.Err.Error()
			want := fmt.Sprintf("panicky on key %d", id)
			if id%10 == 0 {
				want = fmt.Sprintf("key %d: %s", id, errPanicky)
				if !errors.Is(d.Err, errPanicky) {
					t.Fatalf("workers %d: message %d's error does not wrap the panic's error value: %v", workers, id, d.Err)
				}
			}
			if !strings.Contains(msg, want) || !strings.Contains(msg, "goroutine ") || !strings.Contains(msg, "panic_test.go") {
				t.Fatalf("workers %d: message %d's error lacks the panic value %q or the stack:\n%s", workers, id, want, msg)
			}
		}
		for id, v := range vals {
			if v != float32(id)+1 {
				t.Fatalf("workers %d: message %d delivered %v, want %v", workers, id, v, float32(id)+1)
			}
		}
		st, err := p.StageStatus("panicky")
		if err != nil {
			t.Fatal(err)
		}
		if st.Processed != n-n/5 || st.Dropped != n/5 || st.Errors != n/5 || st.In() != n {
			t.Fatalf("workers %d: stage counters %+v; want %d processed, %d dropped and errors of %d", workers, st.Status, n-n/5, n/5, n)
		}
	}
}

// A Sink.Func that panics on some results: each of those is dead-lettered
// "stage panic" at the egress, not delivered (nothing is lost), the egress
// pump goes on with the rest, and the account conserves.
func TestSinkFuncPanicIsADeadLetter(t *testing.T) {
	e := newEnv(t, "")
	a := newAccount()
	spec := guide("sink-panic")
	spec.Deliver.Func = func(r ra.Result) {
		if r.ID%7 == 0 {
			panic(fmt.Sprintf("sink refuses %d", r.ID))
		}
		a.result(r)
	}
	spec.OnDeadLetter = a.deadLetter
	p := buildStarted(t, e.RT, spec)
	const n = 300
	sendN(t, p, n)
	closeUnbounded(t, p, "with a panicking Sink.Func")
	reasons := a.check(t, n, p.Stats())
	if reasons["stage panic"] != n/7 || len(reasons) != 1 {
		t.Fatalf("dead letters %v; want %d stage panics and nothing else", reasons, n/7)
	}
	for id, d := range a.dead {
		if id%7 != 0 || d.Stage != "egress" || !errors.Is(d.Err, ra.ErrStagePanic) ||
			!strings.Contains(d.Err.Error(), fmt.Sprintf("sink refuses %d", id)) || !strings.Contains(d.Err.Error(), "goroutine ") {
			t.Fatalf("dead letter %v", d)
		}
	}
}

// An OnDeadLetter that panics: the runtime's goroutine that called it
// goes on, every dead letter is still counted and still reaches
// DeadLetterChan, and each panic is published as a CallbackPanicked.
func TestOnDeadLetterPanicIsRecovered(t *testing.T) {
	registerPanicky(t)
	e := newEnv(t, "")
	var mu sync.Mutex
	var panics []ra.CallbackPanicked
	sub := e.RT.System().EventStream.Subscribe(func(evt any) {
		if c, ok := evt.(ra.CallbackPanicked); ok {
			mu.Lock()
			panics = append(panics, c)
			mu.Unlock()
		}
	})
	defer e.RT.System().EventStream.Unsubscribe(sub)
	a := newAccount()
	const n = 100
	dead := make(chan ra.DeadLetter, n)
	p := buildStarted(t, e.RT, ra.PipelineSpec{Name: "ondl-panic", Stages: []ra.StageSpec{
		{Name: "panicky", Op: "test_panicky", Device: e.RT.Registry().CPUDevice().ID},
	}, Deliver: ra.Sink{Func: a.result}, OnDeadLetter: func(d ra.DeadLetter) { panic("OnDeadLetter panics") }, DeadLetterChan: dead})
	for i := 1; i <= n; i++ {
		if err := p.Send(ctxT(t), ra.Data{ID: uint64(i), Value: kernels.Keyed{Key: uint32(i), Count: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	closeUnbounded(t, p, "with a panicking OnDeadLetter")
	close(dead)
	for d := range dead {
		a.deadLetter(d)
	}
	if reasons := a.check(t, n, p.Stats()); reasons["stage panic"] != n/5 {
		t.Fatalf("dead letters %v; want %d stage panics", reasons, n/5)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(panics) != n/5 {
		t.Fatalf("%d CallbackPanicked events, want %d", len(panics), n/5)
	}
	for _, c := range panics {
		if c.Pipeline != "ondl-panic" || c.Callback != "OnDeadLetter" || c.ID%5 != 0 || c.Value != "OnDeadLetter panics" || !strings.Contains(string(c.Stack), "goroutine ") {
			t.Fatalf("event %+v", c)
		}
	}
}

// An OnFault that panics: the watchdog's goroutine recovers it, the
// teardown still runs (every message ends), and the panic is published.
func TestOnFaultPanicIsRecovered(t *testing.T) {
	h := newHang(t, "rt_test_fault_panic")
	e := newEnv(t, "")
	panicked := make(chan ra.CallbackPanicked, 1)
	sub := e.RT.System().EventStream.Subscribe(func(evt any) {
		if c, ok := evt.(ra.CallbackPanicked); ok {
			select {
			case panicked <- c:
			default:
			}
		}
	})
	defer e.RT.System().EventStream.Unsubscribe(sub)
	a := newAccount()
	spec := guide("fault-panic")
	spec.Stages[1].Op, spec.Stages[1].Stateful = h.op, true
	spec.Stages[1].Device = e.RT.Registry().CPUDevice().ID
	spec.Deliver.Func, spec.OnDeadLetter = a.result, a.deadLetter
	spec.HangAfter = 100 * time.Millisecond
	spec.OnFault = func(ra.StageFaulted) { panic("OnFault panics") }
	p := buildStarted(t, e.RT, spec)
	const n = 50
	for i := 1; i <= n; i++ {
		v := float32(i)
		if i == 10 {
			v = -1 // the middle stage hangs on it
		}
		_ = p.Send(ctxT(t), ra.Data{ID: uint64(i), Floats: []float32{v}}) // once the teardown has begun: refused, dead-lettered and counted
	}
	select {
	case c := <-panicked:
		if c.Pipeline != "fault-panic" || c.Callback != "OnFault" || c.Value != "OnFault panics" {
			t.Fatalf("event %+v", c)
		}
	case <-ctxT(t).Done():
		t.Fatal("no CallbackPanicked for OnFault")
	}
	if err := p.Close(ctxT(t), true); !errors.Is(err, rk.ErrFaulted) {
		t.Fatalf("Close after a fault whose OnFault panicked: %v", err)
	}
	if reasons := a.check(t, n, p.Stats()); reasons["stage faulted"] == 0 {
		t.Fatalf("dead letters %v; want the hung stage's as stage faulted", reasons)
	}
}
