package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	ra "github.com/ringactor/ringactor/runtime"
)

// runtime.CPU places a stage on the CPU whatever the number of GPUs: Build
// resolves it, and what the pipeline reports carries the CPU's real id.
func TestCPUConstantResolves(t *testing.T) {
	for _, gpus := range []int{1, 3} {
		e := newEnvOn(t, ra.DeviceOptions{Backend: "sim", SimDevices: gpus, Log: io.Discard})
		cpu := e.RT.Registry().CPUDevice().ID
		if d, err := e.RT.Registry().Device(ra.CPU); err != nil || d.ID != cpu || d.Kind != ra.KindCPU {
			t.Fatalf("Registry.Device(CPU) with %d GPUs: %+v, %v", gpus, d, err)
		}
		p := buildStarted(t, e.RT, ra.PipelineSpec{Name: "on-cpu", Stages: []ra.StageSpec{
			{Name: "x2", Op: "scale", Params: []float32{2}, Device: 0},
			{Name: "plus1", Op: "offset", Params: []float32{1}, Device: ra.CPU},
		}})
		if st, err := p.StageStatus("plus1"); err != nil || st.Device != cpu {
			t.Fatalf("%d GPUs: stage on CPU reports device %d (%v), want %d", gpus, st.Device, err, cpu)
		}
		if d := p.Describe(); !strings.Contains(d, "(cpu)") {
			t.Fatalf("%d GPUs: Describe does not name the CPU:\n%s", gpus, d)
		}
		r, err := p.Request(ctxT(t), ra.Data{Floats: []float32{3}})
		if err != nil || len(r.Floats) != 1 || r.Floats[0] != 7 {
			t.Fatalf("%d GPUs: %v, %v; want [7]", gpus, r.Floats, err)
		}
		if err := p.Close(ctxT(t), true); err != nil {
			t.Fatal(err)
		}
	}
}

// A Go stage left on device 0 is refused, and the fix names runtime.CPU.
func TestGoStageOnGPUNamesCPU(t *testing.T) {
	registerTestTypes(t)
	e := newEnv(t, "")
	_, err := e.RT.Build(ctxT(t), ra.PipelineSpec{Name: "price-on-gpu", Stages: []ra.StageSpec{{Name: "price", Op: "test_price"}}})
	if !errors.Is(err, ra.ErrBadPipeline) || !strings.Contains(err.Error(), "place it on the CPU: Device: runtime.CPU (device 4 here") {
		t.Fatalf("Build: %v; want the fix Device: runtime.CPU", err)
	}
}

// copyGraph copies every order to two exits of different types: an
// invoice from price, the order itself from echo. All on the CPU.
func copyGraph(name string, sink ra.Sink) ra.PipelineSpec {
	return ra.PipelineSpec{Name: name, Stages: []ra.StageSpec{
		{Name: "fork", Op: "pass", Route: ra.RouteAll, To: []string{"price", "echo"}, Device: ra.CPU, SlotSize: 128},
		{Name: "price", Op: "test_price", Device: ra.CPU, SlotSize: 128},
		{Name: "echo", Op: "pass", Device: ra.CPU, SlotSize: 128},
	}, Deliver: sink}
}

// In a graph that copies to exits of different types, RequestAs[T] is
// answered by the result of type T, every time; the other copy goes to
// the sink, and the account conserves. A type no exit gives is refused
// before anything is sent.
func TestRequestAsInCopyGraph(t *testing.T) {
	registerTestTypes(t)
	e := newEnv(t, "")
	const n = 50
	var sunk atomic.Int64
	both := make(chan struct{}) // the two copies of the keyed request reached the sink
	var kept, keptCopy []byte   // a result's Bytes are its own: kept, they never change
	p := buildStarted(t, e.RT, copyGraph("copies", ra.Sink{Func: func(r ra.Result) {
		if r.ID == 1 {
			kept, keptCopy = r.Bytes, slices.Clone(r.Bytes)
		}
		if sunk.Add(1) == n+2 {
			close(both)
		}
	}}))
	for i := range n {
		o := order{Item: "bolt", Qty: i + 1, Price: 2}
		if i%2 == 0 {
			inv, err := ra.RequestAs[invoice](ctxT(t), p, o)
			if err != nil || inv != (invoice{Item: "bolt", Total: float64(2 * (i + 1))}) {
				t.Fatalf("request %d as invoice: %+v, %v", i, inv, err)
			}
		} else {
			got, err := ra.RequestAs[order](ctxT(t), p, o)
			if err != nil || got != o {
				t.Fatalf("request %d as order: %+v, %v", i, got, err)
			}
		}
	}
	// echo gives whatever it takes, so a Keyed may come: the request waits,
	// and once its ctx ends the error names the types that came.
	ctx, cancel := context.WithCancel(ctxT(t))
	go func() { <-both; cancel() }()
	_, err := ra.RequestAs[kernels.Keyed](ctx, p, order{Item: "nut", Qty: 1})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "runtime_test.invoice (type 101)") || !strings.Contains(err.Error(), "runtime_test.order (type 100)") {
		t.Fatalf("a type no copy had: %v", err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if len(kept) == 0 || !slices.Equal(kept, keptCopy) {
		t.Fatalf("the Bytes of result 1, kept by the sink, changed: %x, were %x", kept, keptCopy)
	}
	st := p.Stats()
	if sunk.Load() != n+2 || st.Sent != n+1 || st.Copied != n+1 || st.Delivered != 2*n+2 || st.InFlight != 0 || st.Abandoned != 0 {
		t.Fatalf("sink got %d, account %+v", sunk.Load(), st)
	}
}

// RequestAs of a type no exit of the pipeline gives is refused before
// anything is sent, naming what they give.
func TestRequestAsTypeNoExitGives(t *testing.T) {
	registerTestTypes(t)
	e := newEnv(t, "")
	p := buildStarted(t, e.RT, guide("floats"))
	_, err := ra.RequestAs[invoice](ctxT(t), p, ra.Data{Floats: []float32{1}})
	if !errors.Is(err, ra.ErrNotSent) || !errors.Is(err, ra.ErrWrongType) || !strings.Contains(err.Error(), "no exit of the pipeline gives runtime_test.invoice (type 101); they give []float32 (type 0)") {
		t.Fatalf("RequestAs[invoice] of a float pipeline: %v", err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Sent != 0 {
		t.Fatalf("a refused request was counted: %+v", st)
	}
}

// Sink.Func: calls for one exit come in the order its results left it;
// calls for different exits may run at once (one held while the other's
// result comes does not hold that one up).
func TestSinkFuncPerExit(t *testing.T) {
	e := newEnv(t, "")
	var mu sync.Mutex
	var ids []uint64
	p := buildStarted(t, e.RT, ra.PipelineSpec{Name: "in-order", Stages: []ra.StageSpec{
		{Name: "a", Op: "scale", Params: []float32{1}, Stateful: true},
		{Name: "b", Op: "offset", Params: []float32{0}, Stateful: true, Device: 1},
	}, Deliver: ra.Sink{Func: func(r ra.Result) { mu.Lock(); ids = append(ids, r.ID); mu.Unlock() }}})
	const n = 300
	for i := range n {
		if err := p.Send(ctxT(t), ra.Data{ID: uint64(i + 1), Floats: []float32{1}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Fatalf("%d results, want %d", len(ids), n)
	}
	for i, id := range ids {
		if id != uint64(i+1) {
			t.Fatalf("result %d is message %d: one exit's calls out of order", i, id)
		}
	}

	// Two exits: slow's call waits for fast's result, which comes only
	// once slow's call has begun (fast is held deactivated till then).
	inSlow, fastSeen := make(chan struct{}), make(chan struct{})
	ctx := ctxT(t)
	q := buildStarted(t, e.RT, ra.PipelineSpec{Name: "two-exits", Stages: []ra.StageSpec{
		{Name: "fork", Op: "identity", Route: ra.RouteAll, To: []string{"slow", "fast"}},
		{Name: "slow", Op: "identity", Device: 1},
		{Name: "fast", Op: "identity", Device: 2},
	}, Deliver: ra.Sink{Func: func(r ra.Result) {
		if r.Stage == "fast" {
			close(fastSeen)
			return
		}
		close(inSlow)
		select {
		case <-fastSeen:
		case <-ctx.Done():
		}
	}}})
	fast, _ := q.PID("fast")
	ask := func(m any) {
		t.Helper()
		if _, err := e.RT.System().Root.RequestFuture(fast, m, 10*time.Second).Result(); err != nil {
			t.Fatal(err)
		}
	}
	ask(ra.Deactivate{})
	if err := q.Send(ctx, ra.Data{Floats: []float32{1}}); err != nil {
		t.Fatal(err)
	}
	<-inSlow
	ask(ra.Activate{})
	select {
	case <-fastSeen:
	case <-ctx.Done():
		t.Fatal("fast's result waited for slow's call to return: the exits' calls were serialized")
	}
	if err := q.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
}

// The control messages' answers: StageStats once acknowledged, or an
// error wrapping ringkernel's ErrTransition for a command the state does
// not take.
func TestControlAnswers(t *testing.T) {
	e := newEnv(t, "")
	p := buildStarted(t, e.RT, guide("control"))
	pid, _ := p.PID("root")
	ask := func(m any) any {
		t.Helper()
		a, err := e.RT.System().Root.RequestFuture(pid, m, 10*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a, ok := ask(ra.Deactivate{}).(ra.StageStats); !ok || a.Stage != "root" || a.State.String() != "idle" {
		t.Fatalf("Deactivate answered %#v", a)
	}
	if err, ok := ask(ra.Deactivate{}).(error); !ok || !strings.Contains(err.Error(), "cannot deactivate a kernel that is idle") {
		t.Fatalf("Deactivate of an idle stage answered %v", err)
	}
	if a, ok := ask(ra.Activate{}).(ra.StageStats); !ok || a.State.String() != "active" {
		t.Fatalf("Activate answered %#v", a)
	}
	if a, ok := ask(ra.Stop{Drain: true}).(ra.StageStats); !ok || a.State.Running() {
		t.Fatalf("Stop answered %#v", a)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
}

// RouteKey reads a u32 at a fixed offset: on results that travel as
// msgpack it would route on encoded bytes, so Build refuses it, naming
// the stage, the type and the fix; on a fixed-layout type it builds.
func TestRouteKeyOnMsgpackRefused(t *testing.T) {
	registerTestTypes(t)
	e := newEnv(t, "")
	spec := ra.PipelineSpec{Name: "key-msgpack", Stages: []ra.StageSpec{
		{Name: "price", Op: "test_price", Route: ra.RouteKey, KeyOffset: 4, To: []string{"l", "r"}, Device: ra.CPU, SlotSize: 128},
		{Name: "l", Op: "pass", Device: ra.CPU, SlotSize: 128},
		{Name: "r", Op: "pass", Device: ra.CPU, SlotSize: 128},
	}}
	_, err := e.RT.Build(ctxT(t), spec)
	for _, w := range []string{`stage "price" routes by key (RouteKey)`, "runtime_test.invoice (type 101) travels as msgpack", "make the type fixed layout", "route in a Go stage"} {
		if !errors.Is(err, ra.ErrBadPipeline) || !strings.Contains(fmt.Sprint(err), w) {
			t.Fatalf("Build: %v\nwant ErrBadPipeline saying %q", err, w)
		}
	}
	spec.Stages[0] = ra.StageSpec{Name: "price", Op: "pass", Route: ra.RouteKey, To: []string{"l", "r"}}
	spec.Stages[1].Op, spec.Stages[2].Op = "keyed_scale", "keyed_scale"
	spec.Stages[1].Params, spec.Stages[2].Params = []float32{1}, []float32{1}
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatalf("RouteKey on kernels.Keyed: %v", err)
	}
	if err := p.Close(ctxT(t), false); err != nil {
		t.Fatal(err)
	}
}
