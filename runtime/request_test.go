package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringactor/ringactor/internal/demo"
	ra "github.com/ringactor/ringactor/runtime"
)

// Requests from many goroutines each get their own message's result, by
// id; none reaches the Deliver sink, and every one is in the account.
func TestRequestGetsItsResult(t *testing.T) {
	e := deviceEnv(t)
	var sunk atomic.Int64
	spec := guide("requests")
	spec.Deliver.Func = func(ra.Result) { sunk.Add(1) }
	p := buildStarted(t, e.RT, spec)
	const callers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, callers*each)
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				x := float32(c*each + i)
				r, err := p.Request(ctxT(t), ra.Data{Floats: []float32{x}})
				if err != nil {
					errs <- err
					return
				}
				if len(r.Floats) != 1 || r.Floats[0] != want(x) {
					errs <- errors.New("wrong result")
					return
				}
			}
		})
	}
	// Plain sends mix with them and still reach the sink.
	for i := range 50 {
		if err := p.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if sunk.Load() != 50 || st.Sent != callers*each+50 || st.Delivered != st.Sent || st.InFlight != 0 || st.Abandoned != 0 {
		t.Fatalf("sink got %d, account %+v", sunk.Load(), st)
	}
}

// A request whose message is dead-lettered returns a *RequestError with
// the stage and reason; the dead-letter subscribers still see it, and the
// account counts it once.
func TestRequestDeadLettered(t *testing.T) {
	e := deviceEnv(t)
	var seen atomic.Int64
	spec := guide("badrequest")
	spec.OnDeadLetter = func(ra.DeadLetter) { seen.Add(1) }
	p := buildStarted(t, e.RT, spec)
	_, err := p.Request(ctxT(t), ra.Data{Floats: []float32{-4}}) // x*2 < 0: sqrt refuses it
	var re *ra.RequestError
	if !errors.As(err, &re) || !errors.Is(err, ra.ErrDeadLettered) || re.Dead.Stage != "root" || re.Dead.Reason != ra.ReasonStageError {
		t.Fatalf("dead-lettered request: %v", err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); seen.Load() != 1 || st.Sent != 1 || st.DeadLettered != 1 || st.InFlight != 0 {
		t.Fatalf("subscriber saw %d, account %+v", seen.Load(), st)
	}
}

// A request whose caller gives up returns ctx's error at once; its message
// still ends (counted as Abandoned, not handed to the sink), and a second
// request with the same id is refused while the first is in flight.
func TestRequestCancelled(t *testing.T) {
	e := deviceEnv(t)
	var sunk atomic.Int64
	spec := guide("cancelled")
	spec.Deliver.Func = func(ra.Result) { sunk.Add(1) }
	p := buildStarted(t, e.RT, spec)
	root := e.RT.System().Root
	pid, err := p.PID("root")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := p.Request(ctx, ra.Data{ID: 77, Floats: []float32{8}})
		done <- err
	}()
	// It is in flight (held at the deactivated stage) once it is queued there.
	stageStatsUntil(t, root, pid, func(st ra.StageStats) bool { return st.Queued() == 1 })
	if _, err := p.Request(ctxT(t), ra.Data{ID: 77, Floats: []float32{1}}); err == nil {
		t.Fatal("a second request with id 77 in flight was accepted")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	if _, err := root.RequestFuture(pid, ra.Activate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); sunk.Load() != 0 || st.Abandoned != 1 || st.Delivered != 1 || st.Sent != 1 {
		t.Fatalf("sink got %d, account %+v", sunk.Load(), st)
	}
}

// RequestFuture on a stage's PID answers with the message's Result, or a
// *RequestError when it was dead-lettered.
func TestRequestFutureOnAStagePID(t *testing.T) {
	e := deviceEnv(t)
	p := buildStarted(t, e.RT, guide("future"))
	pid, err := p.PID("double")
	if err != nil {
		t.Fatal(err)
	}
	root := e.RT.System().Root
	res, err := root.RequestFuture(pid, ra.Data{Floats: []float32{8}}, 10*time.Second).Result()
	if r, ok := res.(ra.Result); err != nil || !ok || len(r.Floats) != 1 || r.Floats[0] != want(8) {
		t.Fatalf("RequestFuture answered %#v, %v", res, err)
	}
	res, err = root.RequestFuture(pid, ra.Data{Floats: []float32{-1}}, 10*time.Second).Result()
	if re, ok := res.(*ra.RequestError); err != nil || !ok || re.Dead.Reason != ra.ReasonStageError {
		t.Fatalf("a dead-lettered RequestFuture answered %#v, %v", res, err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Sent != 2 || st.Delivered != 1 || st.DeadLettered != 1 {
		t.Fatalf("account %+v", st)
	}
}

// A request returns its own message's result: here the guide's pipeline,
// x*2 -> sqrt -> +1, on simulated devices.
func ExamplePipeline_Request() {
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 3, Log: io.Discard}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := rt.Build(ctx, demo.Guide("ask", [3]int{0, 1, 2}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close(ctx, true)
	if err := p.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	r, err := p.Request(ctx, ra.Data{Floats: []float32{8, 24.5}})
	fmt.Println(r.Floats, err)
	_, err = p.Request(ctx, ra.Data{Floats: []float32{-1}})
	fmt.Println(errors.Is(err, ra.ErrDeadLettered))
	// Output:
	// [5 8] <nil>
	// true
}
