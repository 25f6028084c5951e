package runtime_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
)

// A stall of the whole process (modelled by ra.Freeze: every loop, pump
// and watchdog held for 1.5x HangAfter, and the watchdogs let go first,
// to look at heartbeats the stall made old) is not a hang: a healthy
// pipeline streaming through it faults nothing and loses nothing. A real
// hang beside it is still faulted, and the batch the hung loop had taken
// is dead-lettered with everything else it held, exactly once, also after
// its stage function returns and the loop wakes up.
func TestAProcessStallFaultsNothingAndAHangBesideItIsFaulted(t *testing.T) {
	h := newHang(t, "rt_test_stall_hang")
	e := newEnv(t, "")
	ctx := ctxT(t)
	const hangAfter = 300 * time.Millisecond

	healthy := newAccount()
	hs := guide("stall-healthy")
	hs.HangAfter = hangAfter
	hs.Deliver.Func, hs.OnDeadLetter = healthy.result, healthy.deadLetter
	var healthyFaults atomic.Int32
	hs.OnFault = func(ra.StageFaulted) { healthyFaults.Add(1) }

	hung := newAccount()
	gs := guide("stall-hung")
	gs.Stages[1].Op, gs.Stages[1].Stateful = h.op, true
	gs.Stages[1].Device = e.RT.Registry().CPUDevice().ID // a Go-only op runs on the CPU
	gs.HangAfter = hangAfter
	gs.Deliver.Func, gs.OnDeadLetter = hung.result, hung.deadLetter
	faults := make(chan ra.StageFaulted, 1)
	gs.OnFault = func(f ra.StageFaulted) { faults <- f }

	hp, err := e.RT.Build(ctx, hs)
	if err != nil {
		t.Fatal(err)
	}
	gp, err := e.RT.Build(ctx, gs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*ra.Pipeline{hp, gp} {
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// The healthy pipeline streams the whole time, the stall included.
	var sent atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		batch := make([]ra.Data, 64)
		for id := uint64(1); ; id += uint64(len(batch)) {
			select {
			case <-stop:
				return
			default:
			}
			for i := range batch {
				batch[i] = ra.Data{ID: id + uint64(i), Floats: []float32{float32(id + uint64(i))}}
			}
			if _, err := hp.SendBatch(ctx, batch); err != nil {
				t.Errorf("healthy send: %v", err)
				return
			}
			sent.Store(id + uint64(len(batch)) - 1)
		}
	})

	const n = 300
	for id := uint64(1); id <= n; id++ {
		v := float32(id)
		if id == 150 {
			v = -1 // x*2 keeps it negative: the middle stage hangs on it
		}
		if err := gp.Send(ctx, ra.Data{ID: id, Floats: []float32{v}}); err != nil {
			t.Fatal(err)
		}
	}
	<-h.entered
	for sent.Load() < 1000 {
		waitFor(ctx, t, time.Millisecond)
	}

	thaw := ra.Freeze(e.RT)
	time.Sleep(hangAfter * 3 / 2) // the stall itself: what is under test
	thaw()

	var f ra.StageFaulted
	select {
	case f = <-faults:
	case <-ctx.Done():
		t.Fatal("the hung stage was never faulted")
	}
	if f.Pipeline != "stall-hung" || f.Stage != "root" {
		t.Fatalf("fault %+v", f)
	}
	close(stop)
	wg.Wait()
	if err := hp.Close(ctx, true); err != nil {
		t.Fatalf("the healthy pipeline's Close: %v", err)
	}
	if k := healthyFaults.Load(); k != 0 {
		t.Fatalf("the stall faulted the healthy pipeline %d times", k)
	}
	total := sent.Load()
	if reasons := healthy.check(t, total, hp.Stats()); len(reasons) != 0 {
		t.Fatalf("the healthy pipeline dead-lettered %v of %d", reasons, total)
	}

	if err := gp.Close(ctx, true); !errors.Is(err, rk.ErrFaulted) {
		t.Fatalf("the hung pipeline's Close: %v", err)
	}
	before := gp.Stats()
	reasons := hung.check(t, n, before)
	if d := hung.dead[150]; d.Reason != ra.ReasonStageFaulted || !errors.Is(d.Err, ra.ErrStageFaulted) {
		t.Fatalf("message 150: %+v", d)
	}
	// The hung loop's late output is refused: let its function return.
	h.free()
	select {
	case <-ra.LoopEnded(gp, "root"):
	case <-ctx.Done():
		t.Fatal("the abandoned loop did not end once its function returned")
	}
	after := gp.Stats()
	hung.check(t, n, after)
	if after.Delivered != before.Delivered || after.DeadLettered != before.DeadLettered {
		t.Fatalf("the abandoned loop's late output was counted: %+v, then %+v", before, after)
	}
	t.Logf("healthy: %d messages through a %v stall, 0 faulted, 0 lost; hung: %d delivered, dead %v",
		total, hangAfter*3/2, len(hung.delivered), reasons)
}

// A stage stuck in its function when Close begins (the watchdog off; on
// the CPU, beside GPU stages of the backend under test) is
// cut off once Close's ctx ends: Close returns within its ctx (and the
// short grace a stage gets to stop), every message it held is
// dead-lettered, InFlight is 0 and stays 0 after the function returns.
func TestCloseCutsOffAStuckStage(t *testing.T) {
	h := newHang(t, "rt_test_stuck_close")
	e := deviceEnv(t) // the stuck stage on the CPU, the others on the GPUs under test
	acc := newAccount()
	spec := guide("stuck")
	spec.Stages[1].Op, spec.Stages[1].Stateful = h.op, true
	spec.Stages[1].Device = e.RT.Registry().CPUDevice().ID
	spec.Stages[1].Capacity = 256
	spec.HangAfter = -1 // no watchdog: only Close can end it
	spec.Deliver.Func, spec.OnDeadLetter = acc.result, acc.deadLetter
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	const n = 600
	for id := uint64(1); id <= n; id++ {
		v := float32(id)
		if id == 300 {
			v = -1
		}
		sendTimed(t, p, ra.Data{ID: id, Floats: []float32{v}}) // once it fills up, sends time out: dead letters
	}
	<-h.entered
	const wait = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	err = p.Close(ctx, true)
	took := time.Since(start)
	if !errors.Is(err, rk.ErrHung) {
		t.Fatalf("Close with a stuck stage: %v", err)
	}
	// Within its ctx, the stuck stage's grace to stop, and the host's
	// count of what it held; not the 2 s a hung GPU loop is given.
	if took > wait+time.Second {
		t.Fatalf("Close took %v with a %v ctx", took, wait)
	}
	before := p.Stats()
	reasons := acc.check(t, n, before)
	if d := acc.dead[300]; d.Reason != ra.ReasonShutdown {
		t.Fatalf("the message the stage was stuck on: %+v", d)
	}
	if st := before.Stages[1]; st.State != rk.Faulted || st.LastError == nil || st.LastError.Code != rk.CodeHung {
		t.Fatalf("the stuck stage's status: %s, %v", st.State, st.LastError)
	}
	h.free()
	select {
	case <-ra.LoopEnded(p, "root"):
	case <-ctxT(t).Done():
		t.Fatal("the cut-off loop did not end once its function returned")
	}
	after := p.Stats()
	acc.check(t, n, after)
	if after.Delivered != before.Delivered || after.DeadLettered != before.DeadLettered || after.InFlight != 0 {
		t.Fatalf("account moved after the stuck function returned: %+v, then %+v", before, after)
	}
	t.Logf("Close(%v) returned in %v; %d delivered, dead %v", wait, took.Round(time.Millisecond), len(acc.delivered), reasons)
}

// waitFor waits d, or until ctx ends.
func waitFor(ctx context.Context, t *testing.T, d time.Duration) {
	t.Helper()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
}

// A stage function that takes longer than HangAfter but does return (a
// late stage, not a dead one) is faulted, and the loop, cut off, writes
// nothing when it comes back: the batch it was running and everything
// queued behind it end once each, as "stage faulted", even though the
// loop wakes up (here: before the host counts) and would otherwise
// publish that batch and consume the rest.
func TestALateStageIsCutOffExactly(t *testing.T) {
	h := newHang(t, "rt_test_late_stage")
	e := deviceEnv(t)
	acc := newAccount()
	spec := guide("late")
	spec.Stages[1].Op = h.op
	spec.Stages[1].Device = e.RT.Registry().CPUDevice().ID
	spec.HangAfter = 200 * time.Millisecond
	spec.Deliver.Func, spec.OnDeadLetter = acc.result, acc.deadLetter
	var p *ra.Pipeline
	woke := make(chan struct{})
	spec.OnFault = func(ra.StageFaulted) {
		// Before the teardown counts what the stage held: let the
		// function return, and wait for its loop to see the cut.
		h.free()
		<-ra.LoopEnded(p, "root")
		close(woke)
	}
	var err error
	if p, err = e.RT.Build(ctxT(t), spec); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for id := uint64(1); id <= n; id++ {
		v := float32(id)
		if id == 500 {
			v = -1
		}
		sendTimed(t, p, ra.Data{ID: id, Floats: []float32{v}})
	}
	select {
	case <-woke:
	case <-ctxT(t).Done():
		t.Fatal("the late stage was never faulted")
	}
	if err := p.Close(ctxT(t), true); !errors.Is(err, rk.ErrFaulted) {
		t.Fatalf("Close after the fault: %v", err)
	}
	reasons := acc.check(t, n, p.Stats())
	if d := acc.dead[500]; d.Reason != ra.ReasonStageFaulted {
		t.Fatalf("message 500: %+v", d)
	}
	t.Logf("%d delivered, dead %v", len(acc.delivered), reasons)
}

// sendTimed sends d with a short ctx, so that a pipeline that has filled up
// dead-letters it (the send times out) instead of waiting. A ctx that
// ended before the send began (a loaded host can hold a goroutine that
// long) sent nothing and counted nothing (ErrNotSent): it sends again, so
// every id ends in the account.
func sendTimed(t *testing.T, p *ra.Pipeline, d ra.Data) {
	t.Helper()
	for {
		sctx, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
		err := p.Send(sctx, d)
		cancel()
		if !errors.Is(err, ra.ErrNotSent) {
			return
		}
	}
}
