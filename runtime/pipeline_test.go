package runtime_test

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
)

// Every test must stop what it starts.
func TestMain(m *testing.M) { rttest.Main(m) }

type env = rttest.Env

// newEnv is a runtime on 4 simulated devices with topology topo, for the
// cases written for simulated GPUs: under another backend they skip
// (rttest.SimDevices), since the sim pass runs them.
func newEnv(t *testing.T, topo string) *env {
	t.Helper()
	rttest.Need(t, rttest.SimDevices)
	under.Store(nil) // sim's devices, whatever the backend under test
	return newEnvOn(t, ra.DeviceOptions{Backend: "sim", SimDevices: 4, SimP2P: topo, Log: io.Discard})
}

func onCUDA() bool { return rttest.Backend() == rttest.CUDA }

// under is the runtime deviceEnv last made, for testDevice.
var under atomic.Pointer[env]

// deviceEnv is a runtime on the backend under test (rttest.Backend:
// RINGACTOR_TEST_BACKEND): newEnv's simulated devices (any topology), the
// CPU device, or the GPUs of the CUDA backend, where it skips without one
// (fails under RINGACTOR_REQUIRE_GPU=1). Its tests name devices through
// testDevice and check placement only where rttest.Has(rttest.SimTopology).
func deviceEnv(t *testing.T) *env {
	t.Helper()
	e := rttest.Devices(t, ra.DeviceOptions{SimDevices: 4})
	under.Store(e)
	return e
}

// testDevice maps a test's device id onto the devices under test
// (rttest.Env.Device) of the runtime deviceEnv made last.
func testDevice(d int) int {
	if e := under.Load(); e != nil {
		return e.Device(d)
	}
	return d
}

func newEnvOn(t *testing.T, opts ra.DeviceOptions) *env {
	t.Helper()
	return rttest.New(t, opts)
}

func ctxT(t *testing.T) context.Context { return rttest.Ctx(t) }

// sendN sends messages 1 to n, one at a time, message i carrying the float i.
func sendN(t *testing.T, p *ra.Pipeline, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if err := p.Send(ctxT(t), ra.Data{ID: uint64(i), Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// guide is the multi-GPU guide's pipeline: x*2 → sqrt → +1 on devices 0,
// 1, 2 (as testDevice maps them).
func guide(name string) ra.PipelineSpec {
	return ra.PipelineSpec{Name: name, Stages: []ra.StageSpec{
		{Name: "double", Op: "scale", Params: []float32{2}, Device: testDevice(0)},
		{Name: "root", Op: "sqrt", Device: testDevice(1)},
		{Name: "inc", Op: "offset", Params: []float32{1}, Device: testDevice(2)},
	}}
}

func want(x float32) float32 { return float32(math.Sqrt(float64(x*2))) + 1 }

// The guide's pipeline over three simulated devices: every result equals
// the reference, every message is accounted for, and the links are placed
// per the topology.
func TestGuidePipeline(t *testing.T) {
	var e *env
	if rttest.Has(rttest.SimTopology) {
		e = newEnv(t, "0-1")
	} else {
		e = deviceEnv(t)
	}
	spec := guide("guide")
	var mu sync.Mutex
	got := map[uint64][]float32{}
	spec.Deliver.Func = func(r ra.Result) { mu.Lock(); got[r.ID] = r.Floats; mu.Unlock() }
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Describe()
	for _, w := range []string{"ingress (mapped-pinned memory on device 0)", "from double: peer (device memory on device 1)",
		"from root: staged (portable-pinned memory on device 2)", "egress (mapped-pinned memory on device 2)"} {
		if !strings.Contains(d, w) && rttest.Has(rttest.SimTopology) { // the placement follows the simulated topology
			t.Fatalf("describe lacks %q:\n%s", w, d)
		}
	}
	if rttest.Has(rttest.SimTopology) && (!strings.Contains(d, "peer") || !strings.Contains(d, "staged")) {
		t.Fatalf("describe does not show the placements:\n%s", d)
	}
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	const msgs = 20000
	batch := make([]ra.Data, 0, 100)
	for i := range msgs {
		batch = append(batch, ra.Data{ID: uint64(i + 1), Floats: []float32{float32(i), float32(i % 7), 0.5}})
		if len(batch) == cap(batch) {
			if n, err := p.SendBatch(ctxT(t), batch); err != nil || n != len(batch) {
				t.Fatal(n, err)
			}
			batch = batch[:0]
		}
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if len(got) != msgs {
		t.Fatalf("%d results for %d messages", len(got), msgs)
	}
	for id, v := range got {
		i := float32(id - 1)
		in := []float32{i, float32(int(id-1) % 7), 0.5}
		for j := range in {
			if d := math.Abs(float64(v[j] - want(in[j]))); d > 1e-5*float64(want(in[j])) {
				t.Fatalf("message %d element %d: %g, want %g", id, j, v[j], want(in[j]))
			}
		}
	}
	st := p.Stats()
	if st.Sent != msgs || st.Delivered != msgs || st.DeadLettered != 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
	for _, s := range st.Stages {
		if s.Processed != msgs || s.State.String() != "terminated" {
			t.Fatalf("stage %s: %+v", s.Stage, s.Status)
		}
	}
}

// Sampled messages get one trace each: a root span, parented on the
// sender's span, and one span per stage with the stage's device, queue wait
// and service time; stage metrics are recorded.
func TestTracing(t *testing.T) {
	e := deviceEnv(t)
	spec := guide("traced")
	spec.SampleRatio = 1
	p := buildStarted(t, e.RT, spec)
	_, parent := e.TP.Tracer("test").Start(context.Background(), "caller")
	legacyCtx, legacy := e.TP.Tracer("test").Start(context.Background(), "caller") // the deprecated Data.Context, still honoured
	for i := range 10 {
		d := ra.Data{Floats: []float32{float32(i)}}
		switch i {
		case 0:
			d.Parent = parent.SpanContext()
		case 1:
			d.Context = legacyCtx
		}
		if err := p.Send(ctxT(t), d); err != nil {
			t.Fatal(err)
		}
	}
	parent.End()
	legacy.End()
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	traces := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range e.Spans.Ended() {
		if s.Name() == "caller" {
			continue
		}
		traces[s.SpanContext().TraceID().String()] = append(traces[s.SpanContext().TraceID().String()], s)
	}
	if len(traces) != 10 {
		t.Fatalf("%d traces for 10 sampled messages", len(traces))
	}
	for id, spans := range traces {
		if len(spans) != 4 {
			t.Fatalf("trace %s: %d spans, want a root and 3 stages", id, len(spans))
		}
		var root sdktrace.ReadOnlySpan
		for _, s := range spans {
			if s.Name() == "send traced" {
				root = s
			}
		}
		if root == nil {
			t.Fatalf("trace %s has no root", id)
		}
		stages := map[string]bool{}
		for _, s := range spans {
			if s == root {
				continue
			}
			if s.Parent().SpanID() != root.SpanContext().SpanID() {
				t.Fatalf("stage span %s is not a child of the message's root", s.Name())
			}
			attrs := map[attribute.Key]attribute.Value{}
			for _, a := range s.Attributes() {
				attrs[a.Key] = a.Value
			}
			stages[attrs["ringactor.stage"].AsString()] = true
			if _, ok := attrs["ringactor.queue_wait_ns"]; !ok {
				t.Fatalf("stage span without queue wait: %v", attrs)
			}
			if attrs["ringactor.service_ns"].AsInt64() < 0 || s.EndTime().Before(s.StartTime()) {
				t.Fatalf("stage span times out of order: %s from %v to %v, attributes %v", s.Name(), s.StartTime().UnixNano(), s.EndTime().UnixNano(), attrs)
			}
		}
		if len(stages) != 3 {
			t.Fatalf("trace %s covers stages %v", id, stages)
		}
		// In time: the root spans its stages, and each stage starts when
		// the one before it finished (its result's enqueue time).
		byStage := map[string]sdktrace.ReadOnlySpan{}
		for _, s := range spans {
			byStage[s.Name()] = s
		}
		prev := root.StartTime()
		for _, name := range []string{"process traced/double", "process traced/root", "process traced/inc"} {
			s := byStage[name]
			if s == nil {
				t.Fatalf("trace %s lacks %s", id, name)
			}
			if s.StartTime().Before(prev) || s.EndTime().Before(s.StartTime()) {
				t.Fatalf("trace %s: %s runs %v..%v, before the previous step ended at %v", id, name, s.StartTime(), s.EndTime(), prev)
			}
			prev = s.EndTime()
		}
		if root.EndTime().Before(prev) {
			t.Fatalf("trace %s: root ends before its last stage", id)
		}
		if p := root.Parent(); p.IsValid() && p.SpanID() != parent.SpanContext().SpanID() && p.SpanID() != legacy.SpanContext().SpanID() {
			t.Fatal("root parented on a stranger")
		}
	}
	for _, sender := range []string{parent.SpanContext().TraceID().String(), legacy.SpanContext().TraceID().String()} {
		if _, ok := traces[sender]; !ok {
			t.Fatalf("no message trace continues the sender's trace %s (Data.Parent, then Data.Context)", sender)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := e.Metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = true
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				var n uint64
				for _, dp := range h.DataPoints {
					n += dp.Count
				}
				if n != 30 {
					t.Fatalf("%s: %d samples, want 30", m.Name, n)
				}
			}
		}
	}
	for _, name := range []string{"ringactor.stage.queue_wait", "ringactor.stage.service_time"} {
		if !found[name] {
			t.Fatalf("metric %s missing; have %v", name, found)
		}
	}
	lat := p.Latency()
	if len(lat) != 3 || lat[1].Samples != 10 || lat[1].Service.P99 <= 0 {
		t.Fatalf("latency %+v", lat)
	}
}

// Stage actors: data sent to a PID goes into the device mailbox; control
// messages are answered; RequestFuture(pid, Stats{}) works.
func TestStageActors(t *testing.T) {
	e := deviceEnv(t)
	results := make(chan ra.Result, 100)
	spec := guide("actors")
	spec.Deliver.Chan = results
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background(), false)
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	root := e.RT.System().Root
	pid, err := p.PID("double")
	if err != nil {
		t.Fatal(err)
	}
	root.Send(pid, ra.Data{ID: 7, Floats: []float32{8}})
	if r := <-results; r.ID != 7 || r.Floats[0] != want(8) {
		t.Fatalf("result %+v", r)
	}
	// Into the middle of the pipeline: the stage's own ingress.
	mid, _ := p.PID("root")
	root.Send(mid, &ra.Data{ID: 8, Floats: []float32{16}})
	if r := <-results; r.ID != 8 || r.Floats[0] != 5 {
		t.Fatalf("result sent to the middle stage %+v", r)
	}
	// A kernel publishes its counters after its results (the result can
	// be out before the count is): wait for the count, don't assume it.
	st := stageStatsUntil(t, root, pid, func(st ra.StageStats) bool { return st.Processed == 1 })
	if st.Stage != "double" || st.Processed != 1 {
		t.Fatalf("stats answer %#v", st)
	}
	if _, err := root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	root.Send(pid, ra.Data{ID: 9, Floats: []float32{2}})
	if st := stageStatsUntil(t, root, pid, func(st ra.StageStats) bool { return st.Queued() == 1 }); st.State.String() != "idle" {
		t.Fatalf("after deactivate: %+v", st.Status)
	}
	res, _ := root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result()
	if err, ok := res.(error); !ok || !strings.Contains(err.Error(), "cannot deactivate") {
		t.Fatalf("an invalid command answered %v", res)
	}
	root.RequestFuture(pid, ra.Activate{}, 5*time.Second).Result()
	if r := <-results; r.ID != 9 {
		t.Fatalf("after reactivation: %+v", r)
	}
	if _, err := p.PID("nope"); err == nil || !strings.Contains(err.Error(), "double, root, inc") {
		t.Fatalf("unknown stage: %v", err)
	}
}

// stageStatsUntil asks pid for its Stats until cond holds, failing t if it
// does not within 10 s; it returns the last answer.
func stageStatsUntil(t *testing.T, root *actor.RootContext, pid *actor.PID, cond func(ra.StageStats) bool) ra.StageStats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := root.RequestFuture(pid, ra.Stats{}, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		st, ok := res.(ra.StageStats)
		if !ok {
			t.Fatalf("stats answer %#v", res)
		}
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats never met the condition: %+v", st.Status)
		}
		time.Sleep(time.Millisecond)
	}
}

// Results can go to any PID.
func TestDeliverToPID(t *testing.T) {
	e := deviceEnv(t)
	got := make(chan ra.Result, 10)
	sink := e.RT.System().Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if r, ok := c.Message().(ra.Result); ok {
			got <- r
		}
	}))
	defer func() { e.RT.System().Root.StopFuture(sink).Wait() }()
	spec := guide("topid")
	spec.Deliver.PID = sink

	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	p.Start(ctxT(t))
	p.Send(ctxT(t), ra.Data{Floats: []float32{2}})
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Floats[0] != want(2) {
		t.Fatalf("result %+v", r)
	}
}

// Closing without drain dead-letters what the stages hold, and the account
// still balances: sent = delivered + dead-lettered.
func TestCloseWithoutDrain(t *testing.T) {
	e := deviceEnv(t)
	var mu sync.Mutex
	reasons := map[string]int{}
	spec := guide("nodrain")
	spec.OnDeadLetter = func(d ra.DeadLetter) { mu.Lock(); reasons[d.Reason.String()]++; mu.Unlock() }
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	pid, _ := p.PID("root")
	e.RT.System().Root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Wait()
	for i := range 500 {
		x := float32(i)
		if i%50 == 0 {
			x = -x - 1 // sqrt dead-letters these, if it gets to them
		}
		if err := p.Send(ctxT(t), ra.Data{Floats: []float32{x}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctxT(t), false); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Sent != 500 || st.Delivered+st.DeadLettered != 500 || st.InFlight != 0 || reasons["shutdown without drain"] == 0 {
		t.Fatalf("stats %+v reasons %v", st, reasons)
	}
	if err := p.Send(ctxT(t), ra.Data{Floats: []float32{1}}); !errors.Is(err, ra.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
	if st := p.Stats(); st.Sent != 501 || st.DeadLettered != st.Sent-st.Delivered {
		t.Fatalf("a refused send is not accounted: %+v", st)
	}
}

// Specs that cannot be built are refused with errors that name the fix.
func TestBuildRefusesBadSpecs(t *testing.T) {
	e := deviceEnv(t)
	mod := func(f func(*ra.PipelineSpec)) ra.PipelineSpec { s := guide("bad"); f(&s); return s }
	cases := []struct {
		spec ra.PipelineSpec
		want string
	}{
		{mod(func(s *ra.PipelineSpec) { s.Stages[1].Name = "double" }), "unique"},
		{mod(func(s *ra.PipelineSpec) { s.Stages[1].Device = 9 }), "no such device 9"},
		{mod(func(s *ra.PipelineSpec) { s.Stages[1].Op = "cube" }), "unknown op"},
		{mod(func(s *ra.PipelineSpec) { s.Stages[1].Op = "" }), "no op; set Op to a registered one: [branch delay identity keyed_count"},
		{mod(func(s *ra.PipelineSpec) { s.Stages[1].Capacity = 1000 }), "power of two"},
		{mod(func(s *ra.PipelineSpec) { s.Stages[1].SlotSize = 100 }), "64"},
		{mod(func(s *ra.PipelineSpec) { s.Stages = nil }), "no stages"},
		{mod(func(s *ra.PipelineSpec) { s.Name = "" }), "give the pipeline a name"},
		{mod(func(s *ra.PipelineSpec) { s.SampleRatio = 2 }), "sample ratio"},
		{mod(func(s *ra.PipelineSpec) { s.Deliver.Chan = make(chan ra.Result); s.Deliver.Func = func(ra.Result) {} }), "set one of"},
	}
	for _, c := range cases {
		if _, err := e.RT.Build(ctxT(t), c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want an error saying %q", err, c.want)
		}
	}
	p, err := e.RT.Build(ctxT(t), guide("twice"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.RT.Build(ctxT(t), guide("twice")); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("duplicate pipeline name: %v", err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	// A too-large message is dead-lettered with the fix named.
	p, _ = e.RT.Build(ctxT(t), guide("big"))
	p.Start(ctxT(t))
	if err := p.Send(ctxT(t), ra.Data{Floats: make([]float32, 100)}); err == nil || !strings.Contains(err.Error(), "raise its SlotSize") {
		t.Fatalf("oversize send: %v", err)
	}
	p.Close(ctxT(t), true)
	if st := p.Stats(); st.DeadLettered != 1 || st.Sent != 1 {
		t.Fatalf("oversize not accounted: %+v", st)
	}
}

// Every message sent through the first stage's PID comes out.
func TestSendThroughPID(t *testing.T) {
	e := deviceEnv(t)
	results := make(chan ra.Result, 64)
	spec := guide("viapid")
	spec.Deliver.Chan = results
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	pid, _ := p.PID("double")
	const msgs = 3000
	go func() {
		for i := 1; i <= msgs; i++ {
			e.RT.System().Root.Send(pid, ra.Data{ID: uint64(i), Floats: []float32{float32(i)}})
		}
	}()
	seen := make([]bool, msgs+1)
	for range msgs {
		r := <-results
		if r.ID == 0 || r.ID > msgs || seen[r.ID] || r.Floats[0] != want(float32(r.ID)) {
			t.Fatalf("result %+v: duplicate, unknown or wrong", r)
		}
		seen[r.ID] = true
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Sent != msgs || st.Delivered != msgs {
		t.Fatalf("stats %+v", st)
	}
}
