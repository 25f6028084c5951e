package collective_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/collective"
)

// barrierEnv is a runtime over one device under test (rttest.Devices)
// with an in-memory span recorder.
func barrierEnv(t *testing.T) (*ra.Runtime, *tracetest.SpanRecorder) {
	t.Helper()
	e := rttest.Devices(t, ra.DeviceOptions{SimDevices: 1})
	return e.RT, e.Spans
}

func newBarrier(t *testing.T, rt *ra.Runtime, spec collective.BarrierSpec) *collective.Barrier {
	t.Helper()
	b, err := collective.NewBarrier(rt, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close) // before the runtime's Close (cleanups run last first)
	return b
}

func barrierCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// 4 participants x 1,000 phases through the barrier actor, skewed by
// random yields and sleeps. Each counts itself into arrivals[phase] before
// Await and checks after it that all four had: one released early would
// see fewer (the barrier package's TestPhasesCheckCatchesNoWait shows the
// same check failing for a barrier without its wait; here, a Release sent
// on arrival instead of on the last arrival would trip it likewise).
func TestBarrierPhases(t *testing.T) {
	rt, spans := barrierEnv(t)
	names := []string{"gpu0", "gpu1", "gpu2", "host"}
	b := newBarrier(t, rt, collective.BarrierSpec{Name: "lockstep", Participants: names, Timeout: 20 * time.Second})
	const phases = 1000
	arrivals := make([]atomic.Int32, phases)
	ctx := barrierCtx(t)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for i, name := range names {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		wg.Go(func() {
			for ph := range phases {
				switch {
				case rng.IntN(50) == 0:
					time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				case rng.IntN(5) == 0:
					goruntime.Gosched()
				}
				arrivals[ph].Add(1)
				if err := b.Await(ctx, name, uint64(ph)); err != nil {
					errs <- fmt.Errorf("%s phase %d: %w", name, ph, err)
					return
				}
				if got := arrivals[ph].Load(); got != int32(len(names)) {
					errs <- fmt.Errorf("%s passed phase %d with %d of %d arrived", name, ph, got, len(names))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d phases x %d in %v", phases, len(names), time.Since(start))
	var waits, phaseSpans int
	for _, s := range spans.Ended() {
		switch s.Name() {
		case "arrive barrier/lockstep":
			waits++
		case "process barrier/lockstep":
			phaseSpans++
		}
	}
	if waits != phases*len(names) || phaseSpans != phases {
		t.Errorf("%d wait spans and %d phase spans, want %d and %d", waits, phaseSpans, phases*len(names), phases)
	}
}

// A phase not complete within the timeout releases its waiters with a
// *BarrierTimeoutError naming exactly who is missing; the phase is over,
// and the next one works.
func TestBarrierTimeoutNamesMissing(t *testing.T) {
	rt, spans := barrierEnv(t)
	names := []string{"a", "b", "c", "d"}
	b := newBarrier(t, rt, collective.BarrierSpec{Name: "slow", Participants: names, Timeout: 100 * time.Millisecond})
	ctx := barrierCtx(t)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, name := range []string{"a", "c"} {
		wg.Go(func() { errs[i] = b.Await(ctx, name, 0) })
	}
	wg.Wait()
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("released after %v, before the 100ms timeout", d)
	}
	for i, err := range errs[:2] {
		var te *collective.BarrierTimeoutError
		if !errors.As(err, &te) || !errors.Is(err, collective.ErrBarrierTimeout) {
			t.Fatalf("waiter %d: got %v, want a *BarrierTimeoutError", i, err)
		}
		if fmt.Sprint(te.Missing) != "[b d]" || te.Phase != 0 || te.Barrier != "slow" {
			t.Errorf("waiter %d: %+v, want b and d missing at phase 0", i, te)
		}
		if !strings.Contains(err.Error(), "waiting for b, d") {
			t.Errorf("message does not name the missing: %v", err)
		}
	}
	// Too late for phase 0.
	if err := b.Await(ctx, "b", 0); !errors.Is(err, collective.ErrBadArrival) || !strings.Contains(err.Error(), "phase 0, which is over") {
		t.Errorf("late arrival: %v", err)
	}
	var ph sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "process barrier/slow" {
			ph = s
		}
	}
	if ph == nil || ph.Status().Code != codes.Error || fmt.Sprint(spanAttrs(ph)["ringactor.barrier.missing"].AsStringSlice()) != "[b d]" {
		t.Fatalf("phase span %v does not record the timeout", ph)
	}
	// The barrier goes on.
	for _, name := range names {
		wg.Go(func() {
			if err := b.Await(ctx, name, 1); err != nil {
				t.Errorf("%s phase 1: %v", name, err)
			}
		})
	}
	wg.Wait()
}

// Bad specs and bad arrivals are errors naming the problem; a Close ends
// the waits in progress and refuses later ones.
func TestBarrierBadInput(t *testing.T) {
	rt, spans := barrierEnv(t)
	for _, spec := range []collective.BarrierSpec{
		{Participants: []string{"a"}},
		{Name: "none"},
		{Name: "dup", Participants: []string{"a", "b", "a"}},
		{Name: "empty", Participants: []string{"a", ""}},
		{Name: "neg", Participants: []string{"a"}, Timeout: -time.Second},
	} {
		if _, err := collective.NewBarrier(rt, spec); !errors.Is(err, collective.ErrBadBarrier) {
			t.Errorf("%+v: %v", spec, err)
		}
	}
	b := newBarrier(t, rt, collective.BarrierSpec{Name: "bad", Participants: []string{"a", "b"}})
	if _, err := collective.NewBarrier(rt, collective.BarrierSpec{Name: "bad", Participants: []string{"x"}}); !errors.Is(err, collective.ErrBadBarrier) {
		t.Errorf("second barrier of the same name: %v", err)
	}
	ctx := barrierCtx(t)
	root := rt.System().Root
	if err := b.Await(ctx, "z", 0); !errors.Is(err, collective.ErrBadArrival) || !strings.Contains(err.Error(), `no participant "z"`) {
		t.Errorf("unknown participant: %v", err)
	}
	// a waits at phase 5 (a raw request, as an actor would send it).
	pending := root.RequestFuture(b.PID(), collective.Arrive{Participant: "a", Phase: 5}, 10*time.Second)
	if err := b.Await(ctx, "a", 5); !errors.Is(err, collective.ErrBadArrival) || !strings.Contains(err.Error(), "arrived twice at phase 5") {
		t.Errorf("duplicate arrival: %v", err)
	}
	if err := b.Await(ctx, "a", 6); !errors.Is(err, collective.ErrBadArrival) || !strings.Contains(err.Error(), "still waiting at phase 5") {
		t.Errorf("arrival in a second phase: %v", err)
	}
	res, err := root.RequestFuture(b.PID(), (*collective.Arrive)(nil), 10*time.Second).Result()
	if r, ok := res.(collective.Release); err != nil || !ok || !errors.Is(r.Err, collective.ErrBadArrival) {
		t.Errorf("nil *Arrive: %v, %v", res, err)
	}
	if err := b.Await(ctx, "b", 5); err != nil {
		t.Fatal(err)
	}
	if res, err := pending.Result(); err != nil || res.(collective.Release) != (collective.Release{Phase: 5}) {
		t.Fatalf("a's raw arrival: %v, %v", res, err)
	}
	if err := b.Await(ctx, "a", 4); !errors.Is(err, collective.ErrBadArrival) || !strings.Contains(err.Error(), "over") {
		t.Errorf("old phase: %v", err)
	}
	// Close with a waiter.
	done := make(chan error, 1)
	go func() { done <- b.Await(ctx, "a", 9) }()
	// a is in once its arrival opened phase 9 (and its span).
	for !phaseStarted(spans, "process barrier/bad", 9) {
		time.Sleep(time.Millisecond)
	}
	b.Close()
	if err := <-done; !errors.Is(err, collective.ErrBarrierClosed) {
		t.Errorf("waiter at close: %v", err)
	}
	if err := b.Await(ctx, "a", 10); !errors.Is(err, collective.ErrBarrierClosed) {
		t.Errorf("after close: %v", err)
	}
	b.Close() // twice is fine
}

func phaseStarted(spans *tracetest.SpanRecorder, name string, phase int64) bool {
	for _, s := range spans.Started() {
		if s.Name() == name && spanAttrs(s)["ringactor.barrier.phase"].AsInt64() == phase {
			return true
		}
	}
	return false
}

// An Await whose context ends withdraws its arrival: the participant may
// arrive at that phase again, and the others are not released by it.
func TestBarrierAwaitContext(t *testing.T) {
	rt, _ := barrierEnv(t)
	b := newBarrier(t, rt, collective.BarrierSpec{Name: "ctx", Participants: []string{"a", "b"}})
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := b.Await(short, "a", 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	// a's withdrawn arrival does not release b.
	short2, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	if err := b.Await(short2, "b", 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("b alone: got %v, want DeadlineExceeded", err)
	}
	ctx := barrierCtx(t)
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Go(func() {
			if err := b.Await(ctx, name, 0); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	wg.Wait()
}

// Actors take part by Request: the Release comes back to them.
func TestBarrierActorParticipants(t *testing.T) {
	rt, _ := barrierEnv(t)
	b := newBarrier(t, rt, collective.BarrierSpec{Name: "actors", Participants: []string{"x", "y", "go"}})
	got := make(chan collective.Release, 2)
	props := actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case collective.Arrive:
			c.Request(b.PID(), m)
		case collective.Release:
			got <- m
		}
	})
	root := rt.System().Root
	for _, name := range []string{"x", "y"} {
		pid := root.Spawn(props)
		t.Cleanup(func() { root.StopFuture(pid).Wait() })
		root.Send(pid, collective.Arrive{Participant: name, Phase: 3})
	}
	if err := b.Await(barrierCtx(t), "go", 3); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case r := <-got:
			if r != (collective.Release{Phase: 3}) {
				t.Errorf("actor got %+v", r)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("an actor participant was not released")
		}
	}
}

// Each Await records "arrive barrier/<name>" under the caller's span with
// participant, phase and wait; the actor records "process barrier/<name>"
// from the first arrival to the release, linked to the waits.
func TestBarrierSpans(t *testing.T) {
	rt, spans := barrierEnv(t)
	b := newBarrier(t, rt, collective.BarrierSpec{Name: "traced", Participants: []string{"p", "q"}})
	ctx, parent := sdktrace.NewTracerProvider().Tracer("test").Start(barrierCtx(t), "caller")
	defer parent.End()
	var wg sync.WaitGroup
	calling := make(chan struct{})
	wg.Go(func() {
		close(calling)
		if err := b.Await(ctx, "p", 7); err != nil {
			t.Error(err)
		}
	})
	<-calling // p is on its way whatever the scheduler did; q comes 20 ms later
	time.Sleep(20 * time.Millisecond)
	if err := b.Await(ctx, "q", 7); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var waits []sdktrace.ReadOnlySpan
	var phase sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		switch s.Name() {
		case "arrive barrier/traced":
			waits = append(waits, s)
		case "process barrier/traced":
			phase = s
		}
	}
	if len(waits) != 2 || phase == nil {
		t.Fatalf("%d wait spans, phase span %v", len(waits), phase)
	}
	seen := map[string]bool{}
	for _, s := range waits {
		a := spanAttrs(s)
		who := a["ringactor.barrier.participant"].AsString()
		seen[who] = true
		if a["ringactor.barrier"].AsString() != "traced" || a["ringactor.barrier.phase"].AsInt64() != 7 {
			t.Errorf("wait span attributes %v", a)
		}
		if w := a["ringactor.barrier.wait_ns"].AsInt64(); w <= 0 || (who == "p" && w < int64(10*time.Millisecond)) {
			t.Errorf("%s waited %v", who, time.Duration(w))
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s's wait span is not a child of the caller's", who)
		}
	}
	if !seen["p"] || !seen["q"] {
		t.Errorf("participants in spans: %v", seen)
	}
	// Both follow the messaging conventions: arrive (send) and process.
	if n := rttest.MessagingSpans(t, spans.Ended()); n != 3 {
		t.Errorf("%d barrier spans checked, want 2 waits and the phase", n)
	}
	if phase.SpanKind() != trace.SpanKindConsumer || waits[0].SpanKind() != trace.SpanKindProducer ||
		spanAttrs(phase)["messaging.message.id"].AsString() != "7" || spanAttrs(phase)["messaging.batch.message_count"].AsInt64() != 2 {
		t.Errorf("phase span kind %v, attributes %v; wait span kind %v", phase.SpanKind(), spanAttrs(phase), waits[0].SpanKind())
	}
	a := spanAttrs(phase)
	if a["ringactor.barrier.phase"].AsInt64() != 7 || a["ringactor.barrier.arrived"].AsInt64() != 2 || a["ringactor.barrier.participants"].AsInt64() != 2 {
		t.Errorf("phase span attributes %v", a)
	}
	// The phase runs from p's arrival to the release: most of the 20 ms,
	// less however late the actor took p's arrival on a loaded machine.
	if d := phase.EndTime().Sub(phase.StartTime()); d < 10*time.Millisecond {
		t.Errorf("phase span lasts %v; p set out 20ms before q", d)
	}
	if len(phase.Links()) != 2 {
		t.Errorf("phase span has %d links, want one per wait", len(phase.Links()))
	}
}
