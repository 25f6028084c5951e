package collective_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/collective"
)

// phased is a one-stage pipeline per device (op scale by 2) whose results
// are collected by id.
type phased struct {
	p   *ra.Pipeline
	mu  sync.Mutex
	got map[uint64]float32
}

func (x *phased) results() map[uint64]float32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := make(map[uint64]float32, len(x.got))
	for k, v := range x.got {
		m[k] = v
	}
	return m
}

func buildPhased(t *testing.T, rt *ra.Runtime, name string, dev int, start bool) *phased {
	t.Helper()
	x := &phased{got: map[uint64]float32{}}
	p, err := rt.Build(ctxT(t), ra.PipelineSpec{Name: name,
		Stages:  []ra.StageSpec{{Name: "work", Op: "scale", Params: []float32{2}, Device: dev, Capacity: 64}},
		Deliver: ra.Sink{Func: func(r ra.Result) { x.mu.Lock(); x.got[r.ID] = r.Floats[0]; x.mu.Unlock() }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Close(ctx, false)
	})
	if start {
		if err := p.Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	x.p = p
	return x
}

// kernelName is a stage participant's name: "<pipeline>/work@gpu<d>", or
// "@cpu" on the CPU device.
func kernelName(rt *ra.Runtime, pipeline string, dev int) string {
	if dev == rt.Registry().CPUDevice().ID {
		return pipeline + "/work@cpu"
	}
	return fmt.Sprintf("%s/work@gpu%d", pipeline, dev)
}

func send(t *testing.T, x *phased, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := x.p.Send(ctxT(t), ra.Data{ID: uint64(i + 1), Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// One barrier of a host participant and three ring kernels on three
// devices: each kernel takes its phase-1 messages, arrives at the mark,
// and takes none of phase 2 (sent right after the mark, queued behind it)
// until the host arrives too; then all of phase 2 goes through. The
// spans: a wait per participant (kernels' from Mark), one phase.
func TestBarrierWithKernels(t *testing.T) {
	env := newEnv(t, "")
	rt, spans := env.RT, env.Spans
	devs := on(t, []int{0, 1, 2})
	const n1, n2 = 5, 7
	var xs []*phased
	var stages []collective.StageParticipant
	for i, d := range devs {
		x := buildPhased(t, rt, fmt.Sprintf("phase%d", i), d, true)
		xs = append(xs, x)
		stages = append(stages, collective.StageParticipant{Pipeline: x.p, Stage: "work"})
	}
	b := newBarrier(t, rt, collective.BarrierSpec{Name: "phases", Participants: []string{"host"}, Stages: stages, Timeout: 20 * time.Second})
	if b.PID() != nil || b.Flags() == nil || b.Flags().N() != 4 {
		t.Fatalf("a barrier with stages: PID %v, flags %v", b.PID(), b.Flags())
	}
	ctx := barrierCtx(t)
	for _, x := range xs {
		send(t, x, 0, n1)
	}
	if err := b.Mark(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, x := range xs {
		send(t, x, n1, n1+n2)
	}
	// Each kernel arrives (words 1..3) after its phase 1, then holds.
	f := b.Flags()
	for i := 1; i <= 3; i++ {
		for {
			if g, _ := f.Generation(i); g == 1 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("kernel participant %d never arrived", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i, x := range xs {
		// Three fresh heartbeats: the loop goes round, waiting, taking nothing.
		for range 3 {
			st0, _ := x.p.StageStatus("work")
			for st, _ := x.p.StageStatus("work"); st.Heartbeat.Equal(st0.Heartbeat); st, _ = x.p.StageStatus("work") {
				if ctx.Err() != nil {
					t.Fatalf("pipeline %d's kernel stopped beating at the barrier", i)
				}
				time.Sleep(time.Millisecond)
			}
		}
		st, err := x.p.StageStatus("work")
		if err != nil {
			t.Fatal(err)
		}
		if st.Processed != n1 || st.Queued() != n2 {
			t.Fatalf("pipeline %d at the barrier: processed %d, queued %d; want %d and %d", i, st.Processed, st.Queued(), n1, n2)
		}
	}
	if err := b.Await(ctx, "host", 1); err != nil {
		t.Fatal(err)
	}
	for i, x := range xs {
		if err := x.p.Close(ctx, true); err != nil {
			t.Fatal(err)
		}
		got := x.results()
		if len(got) != n1+n2 {
			t.Fatalf("pipeline %d: %d results, want %d", i, len(got), n1+n2)
		}
		for id, v := range got {
			if want := 2 * float32(id-1); v != want {
				t.Fatalf("pipeline %d message %d: %v, want %v", i, id, v, want)
			}
		}
	}
	var waits, process int
	who := map[string]bool{}
	for _, s := range spans.Ended() {
		switch s.Name() {
		case "arrive barrier/phases":
			waits++
			who[spanAttrs(s)["ringactor.barrier.participant"].AsString()] = true
			if s.SpanKind() != trace.SpanKindProducer {
				t.Errorf("wait span kind %v", s.SpanKind())
			}
		case "process barrier/phases":
			process++
			if a := spanAttrs(s); a["ringactor.barrier.arrived"].AsInt64() != 4 || a["ringactor.barrier.participants"].AsInt64() != 4 {
				t.Errorf("phase span attributes %v", a)
			}
		}
	}
	want := []string{"host", kernelName(rt, "phase0", devs[0]), kernelName(rt, "phase1", devs[1]), kernelName(rt, "phase2", devs[2])}
	for _, w := range want {
		if !who[w] {
			t.Errorf("no wait span of %s (have %v)", w, who)
		}
	}
	if waits != 4 || process != 1 {
		t.Errorf("%d wait spans, %d phase spans; want 4 and 1", waits, process)
	}
	rttest.MessagingSpans(t, spans.Ended())
}

// A kernel participant that never reaches its mark (its pipeline is not
// started, so it takes nothing) is named by the timeout; the others and
// the host are not.
func TestBarrierTimeoutNamesMissingKernel(t *testing.T) {
	env := newEnv(t, "")
	devs := on(t, []int{0, 1})
	ran := buildPhased(t, env.RT, "ran", devs[0], true)
	stuck := buildPhased(t, env.RT, "stuck", devs[1], false)
	b := newBarrier(t, env.RT, collective.BarrierSpec{Name: "late", Participants: []string{"host"}, Timeout: 300 * time.Millisecond,
		Stages: []collective.StageParticipant{{Pipeline: ran.p, Stage: "work"}, {Pipeline: stuck.p, Stage: "work"}}})
	ctx := barrierCtx(t)
	send(t, ran, 0, 3)
	send(t, stuck, 0, 3)
	if err := b.Mark(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for g := uint64(0); g != 1; g, _ = b.Flags().Generation(1) { // ran's kernel arrives (however loaded the host)
		if ctx.Err() != nil {
			t.Fatal("the started pipeline's kernel never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	err := b.Await(ctx, "host", 1)
	var te *collective.BarrierTimeoutError
	if !errors.As(err, &te) || !errors.Is(err, collective.ErrBarrierTimeout) {
		t.Fatalf("await: %v, want a BarrierTimeoutError", err)
	}
	if want := kernelName(env.RT, "stuck", devs[1]); len(te.Missing) != 1 || te.Missing[0] != want {
		t.Fatalf("missing %v, want [%s]", te.Missing, want)
	}
	// A barrier of no host participant: Wait observes.
	if err := b.Wait(ctx, 1); !errors.Is(err, collective.ErrBarrierTimeout) {
		t.Fatalf("observer wait: %v", err)
	}
}

// Bad specs and calls of a barrier with stages.
func TestBarrierWithKernelsBadInput(t *testing.T) {
	env := newEnv(t, "")
	x := buildPhased(t, env.RT, "one", on(t, []int{0})[0], true)
	if _, err := collective.NewBarrier(env.RT, collective.BarrierSpec{Name: "b", Stages: []collective.StageParticipant{{Pipeline: x.p, Stage: "nope"}}}); !errors.Is(err, collective.ErrBadBarrier) {
		t.Fatalf("unknown stage: %v", err)
	}
	if _, err := collective.NewBarrier(env.RT, collective.BarrierSpec{Name: "b", Stages: []collective.StageParticipant{{Stage: "work"}}}); !errors.Is(err, collective.ErrBadBarrier) {
		t.Fatalf("no pipeline: %v", err)
	}
	sp := collective.StageParticipant{Pipeline: x.p, Stage: "work"}
	if _, err := collective.NewBarrier(env.RT, collective.BarrierSpec{Name: "b", Stages: []collective.StageParticipant{sp, sp}}); !errors.Is(err, collective.ErrBadBarrier) {
		t.Fatalf("a stage twice: %v", err)
	}
	b := newBarrier(t, env.RT, collective.BarrierSpec{Name: "b", Participants: []string{"h"}, Stages: []collective.StageParticipant{sp}})
	ctx := barrierCtx(t)
	if err := b.Await(ctx, "nobody", 1); !errors.Is(err, collective.ErrBadArrival) {
		t.Fatalf("unknown participant: %v", err)
	}
	if err := b.Mark(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Await(ctx, "h", 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Await(ctx, "h", 1); !errors.Is(err, collective.ErrBadArrival) {
		t.Fatalf("phase 1 again: %v", err)
	}
	if err := b.Mark(ctx, 1); !errors.Is(err, collective.ErrBadArrival) {
		t.Fatalf("mark phase 1 again: %v", err)
	}
	a := newBarrier(t, env.RT, collective.BarrierSpec{Name: "actor", Participants: []string{"h"}})
	if err := a.Mark(ctx, 1); !errors.Is(err, collective.ErrBadArrival) {
		t.Fatalf("mark of an actor barrier: %v", err)
	}
}
