package runtime_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
)

// hang is a stage function that never returns on a message whose first
// float is negative, until the test lets it (so the abandoned goroutine
// ends before the leak check). Each test registers its own.
type hang struct {
	op      string
	entered chan struct{}
	release chan struct{}
	free    func() // lets every hung call return (once)
}

func newHang(t *testing.T, op string) *hang {
	op = fmt.Sprintf("%s_%d", op, hangRuns.Add(1)) // ops stay registered: a fresh name per run (-count=N)
	h := &hang{op: op, entered: make(chan struct{}, 64), release: make(chan struct{})}
	if err := kernels.Register(kernels.Op{Name: op, Go: func(_, _, in, out []float32) (int, error) {
		if len(in) > 0 && in[0] < 0 {
			h.entered <- struct{}{}
			<-h.release
		}
		return copy(out, in), nil
	}}); err != nil {
		t.Fatal(err)
	}
	h.free = sync.OnceFunc(func() { close(h.release) })
	t.Cleanup(h.free)
	return h
}

var hangRuns atomic.Int64

// account collects results and dead letters by id.
type account struct {
	mu        sync.Mutex
	delivered map[uint64]int
	dead      map[uint64]ra.DeadLetter
	dups      []uint64
	strays    []ra.Reason // reasons not in ra.Reasons
}

func newAccount() *account {
	return &account{delivered: map[uint64]int{}, dead: map[uint64]ra.DeadLetter{}}
}

func (a *account) result(r ra.Result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.dead[r.ID]; ok || a.delivered[r.ID] > 0 {
		a.dups = append(a.dups, r.ID)
	}
	a.delivered[r.ID]++
}

func (a *account) deadLetter(d ra.DeadLetter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(ra.Reasons, d.Reason) {
		a.dups = append(a.dups, d.ID) // fails check: a reason outside the one list
		a.strays = append(a.strays, d.Reason)
	}
	if _, ok := a.dead[d.ID]; ok || a.delivered[d.ID] > 0 {
		a.dups = append(a.dups, d.ID)
	}
	a.dead[d.ID] = d
}

// check: every id in 1..n ended exactly once, and Stats agrees.
func (a *account) check(t *testing.T, n uint64, st ra.PipelineStats) (reasons map[string]int) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.strays) > 0 {
		t.Fatalf("dead letters with reasons not in ra.Reasons: %q", a.strays)
	}
	if len(a.dups) > 0 {
		t.Fatalf("%d messages ended twice, e.g. %v", len(a.dups), a.dups[:min(5, len(a.dups))])
	}
	reasons = map[string]int{}
	for id := uint64(1); id <= n; id++ {
		_, ok := a.dead[id]
		if ok == (a.delivered[id] > 0) {
			t.Fatalf("message %d: delivered %d times, dead-lettered %v", id, a.delivered[id], ok)
		}
	}
	for _, d := range a.dead {
		reasons[d.Reason.String()]++
	}
	if st.Sent != n || st.Delivered != uint64(len(a.delivered)) || st.DeadLettered != uint64(len(a.dead)) || st.InFlight != 0 {
		t.Fatalf("stats %+v; callbacks saw %d delivered, %d dead of %d", st, len(a.delivered), len(a.dead), n)
	}
	return reasons
}

// A stage whose function hangs is declared faulted by the watchdog: its
// Status says so, its actor stops (a watcher gets Terminated), OnFault
// hears of it, the pipeline is torn down, and every message ends exactly
// once, those it held as "stage faulted".
func TestWatchdogFaultsAHungStage(t *testing.T) {
	h := newHang(t, "rt_test_hang")
	e := newEnv(t, "")
	acc := newAccount()
	faults := make(chan ra.StageFaulted, 4)
	spec := guide("hung")
	spec.Stages[1].Op, spec.Stages[1].Stateful = h.op, true
	spec.Stages[1].Device = e.RT.Registry().CPUDevice().ID // a Go-only op runs on the CPU
	spec.Deliver.Func, spec.OnDeadLetter = acc.result, acc.deadLetter
	spec.HangAfter = 300 * time.Millisecond // a healthy stage starved that long while another runs is rare even on a loaded host
	spec.OnFault = func(f ra.StageFaulted) { faults <- f }
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := p.PID("root")
	terminated := make(chan struct{})
	watcher, _ := e.RT.System().Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.Started:
			c.Watch(pid)
		case *actor.Terminated:
			if m.Who.Equal(pid) {
				close(terminated)
			}
		}
	}), "hung-watcher")
	defer e.RT.System().Root.Stop(watcher)
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var sendErr error
	for id := uint64(1); id <= n; id++ {
		v := float32(id)
		if id == 700 {
			v = -1 // x*2 keeps it negative: the middle stage hangs on it
		}
		if err := p.Send(ctxT(t), ra.Data{ID: id, Floats: []float32{v}}); err != nil && sendErr == nil {
			sendErr = err
		}
	}
	var f ra.StageFaulted
	select {
	case f = <-faults:
	case <-time.After(20 * time.Second):
		t.Fatal("the watchdog did not fault the hung stage")
	}
	if f.Stage != "root" || !strings.Contains(f.Cause, "no heartbeat") {
		t.Fatalf("fault %+v", f)
	}
	if st := p.Stats().Stages[1]; st.State != rk.Faulted || st.LastError == nil || st.LastError.Code != rk.CodeHung {
		t.Fatalf("faulted stage's status: %s, %v", st.State, st.LastError)
	}
	select {
	case <-terminated:
	case <-time.After(10 * time.Second):
		t.Fatal("the faulted stage's watcher got no Terminated")
	}
	if err := p.Close(ctxT(t), true); !errors.Is(err, rk.ErrFaulted) {
		t.Fatalf("Close after a fault: %v", err)
	}
	if err := p.Send(ctxT(t), ra.Data{ID: n + 1, Floats: []float32{1}}); !errors.Is(err, ra.ErrStageFaulted) {
		t.Fatalf("send after the fault: %v", err)
	}
	reasons := acc.check(t, n+1, p.Stats())
	if reasons["stage faulted"] == 0 || acc.dead[700].Reason != ra.ReasonStageFaulted {
		t.Fatalf("dead-letter reasons %v; message 700: %+v", reasons, acc.dead[700])
	}
	t.Logf("hung at 700 of %d: %d delivered, dead letters by reason %v, first send error %v", n, len(acc.delivered), reasons, sendErr)
}

// Back-pressure: Reject dead-letters what does not fit and says so at
// once; Block waits until the sender's ctx ends.
func TestBackpressure(t *testing.T) {
	e := newEnv(t, "")
	for _, bp := range []ra.Backpressure{ra.Reject, ra.Block} {
		acc := newAccount()
		p, err := e.RT.Build(ctxT(t), ra.PipelineSpec{Name: "bp", Stages: []ra.StageSpec{
			{Name: "s", Op: "identity", Capacity: 16, Backpressure: bp},
		}, Deliver: ra.Sink{Func: acc.result}, OnDeadLetter: acc.deadLetter})
		if err != nil {
			t.Fatal(err)
		}
		// Built but not started: nothing drains the mailbox.
		ds := make([]ra.Data, 20)
		for i := range ds {
			ds[i] = ra.Data{ID: uint64(i + 1), Floats: []float32{1}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		k, err := p.SendBatch(ctx, ds)
		cancel()
		switch bp {
		case ra.Reject:
			if k != 16 || !errors.Is(err, ra.ErrMailboxFull) || !strings.Contains(err.Error(), "raise its Capacity") {
				t.Fatalf("reject: %d sent, %v", k, err)
			}
			if d := time.Since(start); d > 40*time.Millisecond {
				t.Errorf("reject waited %v", d)
			}
		case ra.Block:
			if k != 16 || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("block: %d sent, %v", k, err)
			}
		}
		p.Start(ctxT(t))
		if err := p.Close(ctxT(t), true); err != nil {
			t.Fatal(err)
		}
		reasons := acc.check(t, 20, p.Stats())
		want := map[ra.Backpressure]string{ra.Reject: "mailbox full", ra.Block: "send cancelled"}[bp]
		if reasons[want] != 4 || len(acc.delivered) != 16 {
			t.Fatalf("%s: reasons %v, %d delivered", want, reasons, len(acc.delivered))
		}
	}
	if _, err := e.RT.Build(ctxT(t), ra.PipelineSpec{Name: "bad", Stages: []ra.StageSpec{{Name: "s", Op: "identity", Backpressure: 7}}}); err == nil || !strings.Contains(err.Error(), "Block or Reject") {
		t.Fatalf("bad backpressure: %v", err)
	}
}

// Dead letters reach a channel and a PID as well as the callback, and the
// account is exported as metrics.
func TestDeadLetterSubscriptionsAndMetrics(t *testing.T) {
	e := newEnv(t, "")
	ch := make(chan ra.DeadLetter, 16)
	got := make(chan ra.DeadLetter, 16)
	sub, _ := e.RT.System().Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if d, ok := c.Message().(ra.DeadLetter); ok {
			got <- d
		}
	}), "dl-sub")
	defer e.RT.System().Root.Stop(sub)
	spec := guide("dl")
	spec.DeadLetterChan, spec.DeadLetterPID = ch, sub
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	p.Start(ctxT(t))
	// -4 doubles to -8: sqrt of a negative number is a stage error.
	for id, v := range []float32{1, -4, 2} {
		p.Send(ctxT(t), ra.Data{ID: uint64(id + 1), Floats: []float32{v}})
	}
	for deadline := time.Now().Add(10 * time.Second); p.Stats().InFlight != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still in flight: %+v", p.Stats())
		}
	}
	vals := collectAccount(t, e, "dl") // while the pipeline runs: Close unregisters its metrics
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if vals["ringactor.pipeline.sent"] != 3 || vals["ringactor.pipeline.delivered"] != 2 || vals["ringactor.pipeline.dead_lettered"] != 1 || vals["ringactor.pipeline.in_flight"] != 0 {
		t.Fatalf("account metrics %v", vals)
	}
	for name, c := range map[string]chan ra.DeadLetter{"channel": ch, "PID": got} {
		select {
		case d := <-c:
			if d.ID != 2 || d.Stage != "root" || d.Reason != ra.ReasonStageError || d.Err == nil {
				t.Errorf("%s got %+v", name, d)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("no dead letter on the %s", name)
		}
	}
}

// collectAccount reads the pipeline account metrics of one pipeline.
func collectAccount(t *testing.T, e *env, pipeline string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := e.Metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	vals := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					if v, _ := dp.Attributes.Value("ringactor.pipeline"); v.AsString() == pipeline {
						vals[m.Name] += dp.Value
					}
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					if v, _ := dp.Attributes.Value("ringactor.pipeline"); v.AsString() == pipeline {
						vals[m.Name] += dp.Value
					}
				}
			}
		}
	}
	return vals
}

var stress = flag.Bool("stress", false, "run the stress test at full size (1e6 messages)")

// Stress: messages through the guide's pipeline while stages are
// deactivated and reactivated at random, and the middle stage hangs
// halfway through and is faulted by the watchdog. Every message ends
// exactly once, the account balances, and it all ends in bounded time.
// `make stress` (or -stress) runs 1e6 messages; make test runs 1e5.
func TestStressTogglesAndAFault(t *testing.T) {
	n := 100_000
	if *stress {
		n = 1_000_000
	}
	if testing.Short() {
		n = 20_000
	}
	h := newHang(t, "rt_test_stress_hang")
	e := newEnv(t, "")
	acc := newAccount()
	spec := guide("stress")
	spec.Stages[1].Op = h.op
	spec.Stages[1].Device = e.RT.Registry().CPUDevice().ID // a Go-only op runs on the CPU
	spec.Deliver.Func, spec.OnDeadLetter = acc.result, acc.deadLetter
	spec.HangAfter = time.Second
	faulted := make(chan ra.StageFaulted, 1)
	spec.OnFault = func(f ra.StageFaulted) { faulted <- f }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := e.RT.Build(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stop := make(chan struct{})
	var toggles atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // deactivate and reactivate stages at random
		defer wg.Done()
		r := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(r.IntN(2000)) * time.Microsecond):
			}
			pid, _ := p.PID(p.StageNames()[r.IntN(3)])
			// A stopped (faulted) stage's actor does not answer: that is fine.
			e.RT.System().Root.RequestFuture(pid, ra.Deactivate{}, time.Second).Wait()
			time.Sleep(time.Duration(r.IntN(500)) * time.Microsecond)
			e.RT.System().Root.RequestFuture(pid, ra.Activate{}, time.Second).Wait()
			toggles.Add(1)
		}
	}()
	batch := make([]ra.Data, 64)
	sendErrs := 0
	for id := 1; id <= n; id += len(batch) {
		k := min(len(batch), n+1-id)
		for i := range k {
			v := float32(id + i)
			if id+i == n/2 {
				v = -1 // the middle stage hangs here
			}
			batch[i] = ra.Data{ID: uint64(id + i), Floats: []float32{v}}
		}
		if _, err := p.SendBatch(ctx, batch[:k]); err != nil {
			if !errors.Is(err, ra.ErrStageFaulted) && !errors.Is(err, ra.ErrClosed) {
				t.Fatalf("send at %d: %v", id, err)
			}
			sendErrs++
		}
	}
	select {
	case <-faulted:
	case <-ctx.Done():
		t.Fatal("the hung stage was never faulted")
	}
	close(stop)
	wg.Wait()
	if err := p.Close(ctx, true); !errors.Is(err, rk.ErrFaulted) {
		t.Fatalf("close: %v", err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	reasons := acc.check(t, uint64(n), p.Stats())
	if reasons["stage faulted"] == 0 {
		t.Fatalf("reasons %v", reasons)
	}
	t.Logf("%d messages in %v: %d delivered, dead letters by reason %v; %d stage toggles; %d batches refused after the fault",
		n, time.Since(start).Round(time.Millisecond), len(acc.delivered), reasons, toggles.Load(), sendErrs)
}

// Shutdown is bounded by ctx either way: a graceful Close whose drain
// cannot finish in time stops without drain, dead-letters the rest, and
// returns ctx's error; nothing is left running (TestMain's leak check).
func TestGracefulCloseBoundedByContext(t *testing.T) {
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 3, Log: io.Discard,
		SimCost: map[int]time.Duration{1: 500 * time.Microsecond}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	acc := newAccount()
	spec := guide("slowdrain")
	for i := range spec.Stages {
		spec.Stages[i].Device = i // on sim, whatever backend the other tests run on
	}
	spec.Deliver.Func, spec.OnDeadLetter = acc.result, acc.deadLetter
	p, err := rt.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	p.Start(ctxT(t))
	const n = 2000 // a second of work at the slow stage
	for id := uint64(1); id <= n; id++ {
		if err := p.Send(ctxT(t), ra.Data{ID: id, Floats: []float32{float32(id)}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = p.Close(ctx, true)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a drain cut short: %v", err)
	}
	if took > 3*time.Second {
		t.Fatalf("Close took %v with a 50ms ctx", took)
	}
	reasons := acc.check(t, n, p.Stats())
	if reasons["shutdown without drain"] == 0 || len(acc.delivered) == n {
		t.Fatalf("reasons %v, %d delivered", reasons, len(acc.delivered))
	}
	t.Logf("Close(drain) with 50ms: returned in %v; %d delivered, %v", took.Round(time.Millisecond), len(acc.delivered), reasons)
}
