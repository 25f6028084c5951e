package group_test

import (
	"context"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ringactor/ringactor/internal/rttest"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/sim"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/group"
)

func TestMain(m *testing.M) { rttest.Main(m) }

func ctxT(t *testing.T) context.Context { return rttest.Ctx(t) }

// under is the runtime groupEnv made last, for devices.
var under *rttest.Env

// groupEnv is a runtime on the devices under test (rttest.Devices: 4
// simulated GPUs on sim); cost gives some of them a service time per
// message, memory some of them less memory, which only simulated GPUs
// have: the case skips elsewhere, saying why (rttest.Lacks).
func groupEnv(t *testing.T, cost map[int]time.Duration, memory map[int]uint64) *ra.Runtime {
	t.Helper()
	if cost != nil {
		rttest.Need(t, rttest.SimCost)
	}
	if memory != nil {
		rttest.Need(t, rttest.SimMemory)
	}
	under = rttest.Devices(t, ra.DeviceOptions{SimDevices: 4, SimCost: cost, SimMemoryOf: memory})
	return under.RT
}

// devices is n distinct devices under test for a group's instances.
func devices(t *testing.T, n int) []int {
	t.Helper()
	return under.DeviceSet(t, n)
}

// collector counts each result once and checks its value.
type collector struct {
	mu   sync.Mutex
	seen map[uint64]int
	bad  []string
	dead []ra.DeadLetter
}

func (c *collector) result(r ra.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(r.Floats) != 1 || r.Floats[0] != float32(r.ID)*3 {
		c.bad = append(c.bad, "wrong result")
	}
	c.seen[r.ID]++
}

func (c *collector) deadLetter(d ra.DeadLetter) {
	c.mu.Lock()
	c.dead = append(c.dead, d)
	c.mu.Unlock()
}

// runGroup sends n messages (x = id) through a x*3 group and checks every
// one comes back exactly once with the right value and the account
// balances; it returns the final stats.
func runGroup(t *testing.T, rt *ra.Runtime, spec group.Spec, n int) group.Stats {
	t.Helper()
	c := &collector{seen: map[uint64]int{}}
	spec.Stage = ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}, Capacity: 256}
	spec.Deliver = ra.Sink{Func: c.result}
	spec.OnDeadLetter = c.deadLetter
	g, err := group.New(ctxT(t), rt, spec)
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]ra.Data, n)
	for i := range ds {
		ds[i] = ra.Data{ID: uint64(i + 1), Floats: []float32{float32(i + 1)}}
	}
	for i := 0; i < n; i += 500 {
		if _, err := g.SendBatch(ctxT(t), ds[i:min(n, i+500)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	st := g.Stats()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bad) > 0 || len(c.dead) > 0 {
		t.Fatalf("%d wrong results, dead letters %v", len(c.bad), c.dead)
	}
	for i := 1; i <= n; i++ {
		if c.seen[uint64(i)] != 1 {
			t.Fatalf("%s: message %d delivered %d times", spec.Policy, i, c.seen[uint64(i)])
		}
	}
	if st.Sent != uint64(n) || st.Delivered != uint64(n) || st.DeadLettered != 0 || st.InFlight != 0 {
		t.Fatalf("%s: account %+v", spec.Policy, st)
	}
	var processed, assigned uint64
	for _, in := range st.Instances {
		processed += in.Processed
		assigned += in.Assigned
	}
	if processed != uint64(n) || assigned != uint64(n) {
		t.Fatalf("%s: instances processed %d and were assigned %d of %d", spec.Policy, processed, assigned, n)
	}
	return st
}

func TestGroupStaticSplitsEqually(t *testing.T) {
	st := runGroup(t, groupEnv(t, nil, nil), group.Spec{Name: "static", Devices: devices(t, 4), Policy: group.Static}, 4000)
	for _, in := range st.Instances {
		if in.Assigned != 1000 || in.Stolen != 0 {
			t.Fatalf("static: %+v, want 1000 each and no steals", st.Instances)
		}
	}
	if st.Imbalance != 1 || st.ImbalancePercent != 0 {
		t.Fatalf("static: imbalance %g (%g%%), want 1 (0%%)", st.Imbalance, st.ImbalancePercent)
	}
}

func TestImbalance(t *testing.T) {
	for _, c := range []struct {
		work       []uint64
		ratio, pct float64
	}{
		{[]uint64{30, 10, 20}, 1.5, 50}, {[]uint64{10, 10}, 1, 0}, {[]uint64{0, 40}, 2, 100}, {[]uint64{0, 0}, 1, 0}, {nil, 1, 0},
	} {
		if r, p := group.Imbalance(c.work); math.Abs(r-c.ratio) > 1e-12 || math.Abs(p-c.pct) > 1e-9 {
			t.Errorf("Imbalance(%v) = %g, %g%%; want %g, %g%%", c.work, r, p, c.ratio, c.pct)
		}
	}
}

func TestGroupMemoryAwareFollowsFreeMemory(t *testing.T) {
	mem := map[int]uint64{0: 1 << 30, 1: 3 << 30}
	st := runGroup(t, groupEnv(t, nil, mem), group.Spec{Name: "mem", Devices: []int{0, 1}, Policy: group.MemoryAware}, 4000)
	if a, b := st.Instances[0].Assigned, st.Instances[1].Assigned; a != 1000 || b != 3000 {
		t.Fatalf("memory-aware with 1 GiB and 3 GiB free: assigned %d and %d, want 1000 and 3000", a, b)
	}
	// A known skew: 3000 of 4000 on one of two instances is 1.5x the mean.
	if st.Imbalance != 1.5 || st.ImbalancePercent != 50 {
		t.Fatalf("memory-aware 1000/3000: imbalance %g (%g%%), want 1.5 (50%%)", st.Imbalance, st.ImbalancePercent)
	}
	// A device whose memory cannot hold an instance's queue is refused.
	rt := groupEnv(t, nil, map[int]uint64{2: 1024})
	_, err := group.New(ctxT(t), rt, group.Spec{Name: "tiny", Devices: []int{2, 3}, Policy: group.MemoryAware,
		Stage: ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}}})
	if !errors.Is(err, group.ErrBadSpec) {
		t.Fatalf("device with 1 KiB free: %v", err)
	}
}

// With device 3 four times slower, the dynamic and guided policies give it
// less work than the others get on average.
func TestGroupDynamicAndGuidedFavourFastDevices(t *testing.T) {
	if !rttest.Has(rttest.SimCost) {
		// No unequal devices here: every policy still delivers every
		// message once (runGroup checks), which is what runs here.
		for _, p := range []group.Policy{group.Dynamic, group.Guided, group.MemoryAware} {
			runGroup(t, groupEnv(t, nil, nil), group.Spec{Name: "even-" + p.String(), Devices: devices(t, 4), Policy: p}, 4000)
		}
		t.Logf("the skew is not checked on %s: %s", rttest.Backend(), rttest.Why(rttest.SimCost))
		return
	}
	cost := map[int]time.Duration{0: 20 * time.Microsecond, 1: 20 * time.Microsecond, 2: 20 * time.Microsecond, 3: 80 * time.Microsecond}
	for _, p := range []group.Policy{group.Dynamic, group.Guided} {
		st := runGroup(t, groupEnv(t, cost, nil), group.Spec{Name: "skew-" + p.String(), Devices: devices(t, 4), Policy: p}, 6000)
		fast := (st.Instances[0].Assigned + st.Instances[1].Assigned + st.Instances[2].Assigned) / 3
		if slow := st.Instances[3].Assigned; slow >= fast {
			t.Errorf("%s: the slow device was assigned %d, the fast ones %d on average: %+v", p, slow, fast, st.Instances)
		}
	}
}

// Stealing under skew: the slow device's queue is taken by the others;
// nothing is lost or duplicated (runGroup checks every message).
func TestGroupStealsFromTheSlowDevice(t *testing.T) {
	rttest.Need(t, rttest.Steal)
	cost := map[int]time.Duration{3: 200 * time.Microsecond}
	st := runGroup(t, groupEnv(t, cost, nil), group.Spec{Name: "steal", Devices: devices(t, 4), Policy: group.Static, Steal: true}, 4000)
	if st.Instances[3].Stolen == 0 || st.Steals == 0 {
		t.Fatalf("no work stolen from the slow device: %+v", st.Instances)
	}
	if st.Instances[3].Processed >= st.Instances[3].Assigned {
		t.Fatalf("the slow device processed all it was assigned: %+v", st.Instances[3])
	}
	t.Logf("slow device: assigned %d, processed %d, stolen %d", st.Instances[3].Assigned, st.Instances[3].Processed, st.Instances[3].Stolen)
}

// On every backend: the last device's stage sleeps 10 ms a message (the
// delay op, its DeviceParams), the others not at all, so its static share
// queues behind its sleeps (at least 625/32 × 10 ms ≈ 200 ms even with 32
// messages asleep at once) while the others finish theirs: the coordinator
// steals from it, and every message ends once, unchanged.
func TestGroupStealsFromADelayedDevice(t *testing.T) {
	rttest.Need(t, rttest.Steal)
	rt := groupEnv(t, nil, nil)
	devs := devices(t, 4)
	var got sync.Map
	var dead, count atomic.Int64
	const n = 2500
	all := make(chan struct{})
	g, err := group.New(ctxT(t), rt, group.Spec{Name: "delayed", Devices: devs, Policy: group.Static, Steal: true,
		Stage:        ra.StageSpec{Name: "work", Op: "delay", Params: []float32{0, 0}, Capacity: 1024},
		DeviceParams: map[int][]float32{devs[3]: {1e7, 0}},
		Deliver: ra.Sink{Func: func(r ra.Result) {
			if _, again := got.LoadOrStore(r.ID, r.Floats); again {
				t.Errorf("message %d delivered twice", r.ID)
			}
			if count.Add(1) == n {
				close(all)
			}
		}},
		OnDeadLetter: func(ra.DeadLetter) { dead.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]ra.Data, n)
	for i := range ds {
		ds[i] = ra.Data{ID: uint64(i + 1), Floats: []float32{float32(i + 1)}}
	}
	if _, err := g.SendBatch(ctxT(t), ds); err != nil {
		t.Fatal(err)
	}
	// The coordinator steals while the group runs (Close stops it first).
	select {
	case <-all:
	case <-ctxT(t).Done():
		t.Fatalf("%d of %d delivered: %+v", count.Load(), n, g.Stats().Instances)
	}
	if err := g.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	st := g.Stats()
	slow := st.Instances[3]
	if slow.Stolen == 0 || st.Steals == 0 || slow.Processed >= slow.Assigned {
		t.Fatalf("no work stolen from the delayed device: %+v", st.Instances)
	}
	if st.Delivered != n || st.DeadLettered != 0 || dead.Load() != 0 {
		t.Fatalf("account: %+v, %d dead letters", st, dead.Load())
	}
	for i := 1; i <= n; i++ {
		v, ok := got.Load(uint64(i))
		if f, _ := v.([]float32); !ok || len(f) != 1 || f[0] != float32(i) {
			t.Fatalf("message %d: got %v", i, v)
		}
	}
	t.Logf("delayed device: assigned %d, processed %d, stolen %d (%d steals)", slow.Assigned, slow.Processed, slow.Stolen, st.Steals)
}

// Steal is an actor message to an instance's PID, answered with Stolen.
// Instance 0 is deactivated, so its share stays queued: exactly the 20
// asked for move.
func TestGroupStealThroughThePID(t *testing.T) {
	rttest.Need(t, rttest.Steal)
	rt := groupEnv(t, nil, nil)
	g, err := group.New(ctxT(t), rt, group.Spec{Name: "pid", Devices: devices(t, 2), Policy: group.Static, Steal: true, StealEvery: time.Hour,
		Stage: ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background(), false)
	pid, err := g.InstancePID(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.System().Root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	ds := make([]ra.Data, 200)
	for i := range ds {
		ds[i].Floats = []float32{1}
	}
	if _, err := g.SendBatch(ctxT(t), ds); err != nil {
		t.Fatal(err)
	}
	res, err := rt.System().Root.RequestFuture(pid, ra.Steal{N: 20, To: 0}, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := res.(ra.Stolen); !ok || s.Err != nil || s.Moved != 20 {
		t.Fatalf("answer %#v, want 20 moved", res)
	}
	res, _ = rt.System().Root.RequestFuture(pid, ra.Steal{N: 5, To: 7}, 5*time.Second).Result()
	if s, ok := res.(ra.Stolen); !ok || s.Err == nil {
		t.Fatalf("steal to a thief that does not exist: %#v", res)
	}
	if _, err := g.InstancePID(5); err == nil {
		t.Fatal("instance 5 of 2")
	}
}

func TestGroupRefusesBadSpecs(t *testing.T) {
	rt := groupEnv(t, nil, nil)
	st := ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}}
	for _, spec := range []group.Spec{
		{Name: "", Stage: st, Devices: []int{0}},
		{Name: "a b", Stage: st, Devices: []int{0}},
		{Name: "nodev", Stage: st},
		{Name: "dup", Stage: st, Devices: []int{1, 1}},
		{Name: "nosuch", Stage: st, Devices: []int{9}},
		{Name: "policy", Stage: st, Devices: []int{0}, Policy: group.Policy(42)},
		{Name: "sinks", Stage: st, Devices: []int{0}, Deliver: ra.Sink{Func: func(ra.Result) {}, Chan: make(chan ra.Result)}},
	} {
		if _, err := group.New(ctxT(t), rt, spec); !errors.Is(err, group.ErrBadSpec) {
			t.Errorf("%q: %v, want ErrBadSpec", spec.Name, err)
		}
	}
	if _, err := group.New(ctxT(t), rt, group.Spec{Name: "badop", Stage: ra.StageSpec{Name: "s", Op: "nope"}, Devices: []int{0}}); err == nil {
		t.Fatal("unknown op accepted")
	}
}

// An oversize message in a batch is dead-lettered and the rest of the
// batch is still sent: nothing is left unaccounted for.
func TestSendBatchOversizeInTheMiddle(t *testing.T) {
	rt := groupEnv(t, nil, nil)
	var mu sync.Mutex
	var got []uint64
	var dead []ra.DeadLetter
	p, err := rt.Build(ctxT(t), ra.PipelineSpec{Name: "oversize", Stages: []ra.StageSpec{{Name: "id", Op: "identity", SlotSize: 64, Device: under.Device(0)}},
		Deliver:      ra.Sink{Func: func(r ra.Result) { mu.Lock(); got = append(got, r.ID); mu.Unlock() }},
		OnDeadLetter: func(d ra.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	ds := []ra.Data{{ID: 1, Floats: []float32{1}}, {ID: 2, Floats: make([]float32, 100)}, {ID: 3, Floats: []float32{3}}}
	if n, err := p.SendBatch(ctxT(t), ds); err == nil || n != 2 {
		t.Fatalf("SendBatch: %d, %v; want 2 taken (1 and 3) and an error about message 2", n, err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != 1 || got[1] != 3 || len(dead) != 1 || dead[0].ID != 2 || dead[0].Reason != ra.ReasonOversize {
		t.Fatalf("delivered %v, dead %v", got, dead)
	}
}

// noStealing is a sim backend that, like the CUDA backend, refuses kernels
// with steal links.
type noStealing struct{ *sim.Backend }

func (b *noStealing) Start(job *rk.Job) (rk.Loop, error) {
	if len(job.StealTo) > 0 {
		return nil, errors.New("noStealing: stage " + job.Spec.Stage.Name + " has steal links: not supported here")
	}
	return b.Backend.Start(job)
}

// A backend that cannot run stealing groups makes Group
// fail at once with its error, not hang.
func TestGroupStealingRefusalSurfaces(t *testing.T) {
	b := &noStealing{Backend: sim.New(2)}
	rt, err := ra.New(ra.Config{Backend: b, Devices: ra.DeviceOptions{Log: io.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	start := time.Now()
	_, err = group.New(ctxT(t), rt, group.Spec{Name: "steal", Devices: []int{0, 1}, Steal: true,
		Stage: ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}}})
	if err == nil || !strings.Contains(err.Error(), "steal links") {
		t.Fatalf("stealing group on a backend without stealing: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refusal took %v", d)
	}
	// Without stealing the same backend runs the group.
	g, err := group.New(ctxT(t), rt, group.Spec{Name: "nosteal", Devices: []int{0, 1},
		Stage: ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
}

// A drained close of a stage group one of whose instances was
// deactivated activates it and drains (as a pipeline's does).
func TestDrainedCloseActivatesADeactivatedGroupInstance(t *testing.T) {
	rt := groupEnv(t, nil, nil)
	var delivered atomic.Int64
	g, err := group.New(ctxT(t), rt, group.Spec{Name: "g", Devices: devices(t, 2),
		Stage:   ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}, Capacity: 256},
		Deliver: ra.Sink{Func: func(ra.Result) { delivered.Add(1) }}})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := g.InstancePID(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.System().Root.RequestFuture(pid, ra.Deactivate{}, 5*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	const n = 400 // the deactivated instance's share fits in its link
	for i := range n {
		if err := g.Send(ctxT(t), ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(ctxT(t), true); err != nil {
		t.Fatalf("drained close of a group with a deactivated instance: %v", err)
	}
	if st := g.Stats(); st.Delivered != n || delivered.Load() != n || st.InFlight != 0 {
		t.Fatalf("account %+v, %d delivered", st, delivered.Load())
	}
}

// The group's imbalance is exported through the runtime's MeterProvider
// while it runs, with the group's name.
func TestGroupImbalanceMetric(t *testing.T) {
	rttest.Need(t, rttest.SimMemory)
	e := rttest.Devices(t, ra.DeviceOptions{SimDevices: 2, SimMemoryOf: map[int]uint64{0: 1 << 30, 1: 3 << 30}})
	res := make(chan ra.Result, 400)
	g, err := group.New(ctxT(t), e.RT, group.Spec{Name: "skewed", Devices: []int{0, 1}, Policy: group.MemoryAware,
		Stage: ra.StageSpec{Name: "x3", Op: "scale", Params: []float32{3}}, Deliver: ra.Sink{Chan: res}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctxT(t), false)
	for i := 1; i <= 400; i++ {
		if err := g.Send(ctxT(t), ra.Data{ID: uint64(i), Floats: []float32{1}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 400 {
		<-res
	}
	// A kernel publishes its counters after its results: wait for them.
	for ctx := ctxT(t); ; {
		var processed uint64
		for _, in := range g.Stats().Instances {
			processed += in.Processed
		}
		if processed == 400 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("instances processed %d of 400", processed)
		case <-time.After(time.Millisecond):
		}
	}
	var rm metricdata.ResourceMetrics
	if err := e.Metrics.Collect(ctxT(t), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if gauge, ok := m.Data.(metricdata.Gauge[float64]); ok {
				for _, dp := range gauge.DataPoints {
					if v, _ := dp.Attributes.Value("ringactor.group"); v.AsString() == "skewed" {
						got[m.Name] = dp.Value
					}
				}
			}
		}
	}
	if got[group.MetricImbalance] != 1.5 || got[group.MetricImbalancePercent] != 50 {
		t.Fatalf("exported %v; want %s 1.5 and %s 50", got, group.MetricImbalance, group.MetricImbalancePercent)
	}
	// Each metric has its unit and description, its meter ringactor's version.
	if names := rttest.MetricUnits(t, e.Metrics); !slices.Contains(names, group.MetricImbalance) || !slices.Contains(names, group.MetricImbalancePercent) {
		t.Errorf("checked %v; want the group's metrics among them", names)
	}
}

// A nil ctx is refused by the group's calls, an ended one by its sends
// (nothing sent, nothing counted).
func TestGroupRefusesNilAndEndedContexts(t *testing.T) {
	rt := groupEnv(t, nil, nil)
	var none context.Context
	spec := group.Spec{Name: "ctxs", Stage: ra.StageSpec{Name: "x", Op: "identity"}, Devices: devices(t, 2)}
	if _, err := group.New(none, rt, spec); !errors.Is(err, ra.ErrNilContext) {
		t.Fatalf("New(nil ctx) = %v", err)
	}
	g, err := group.New(ctxT(t), rt, spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	if n, err := g.SendBatch(ctx, []ra.Data{{Floats: []float32{1}}}); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("SendBatch(cancelled) = %d, %v", n, err)
	}
	if err := g.Send(none, ra.Data{Floats: []float32{1}}); !errors.Is(err, ra.ErrNilContext) {
		t.Fatalf("Send(nil ctx) = %v", err)
	}
	if err := g.Close(none, true); !errors.Is(err, ra.ErrNilContext) {
		t.Fatalf("Close(nil ctx) = %v", err)
	}
	if err := g.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	if st := g.Stats(); st.Sent != 0 {
		t.Fatalf("refused sends were counted: %+v", st)
	}
}

// runtime.CPU in a group's Devices is the CPU, whatever its id: the
// instance there reports the real id, and CPU beside the CPU's own id is
// one device listed twice.
func TestGroupOnCPUConstant(t *testing.T) {
	rttest.Need(t, rttest.SimDevices)
	rt := rttest.New(t, ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: io.Discard}).RT
	cpu := rt.Registry().CPUDevice().ID
	spec := group.Spec{Name: "cpu-group", Devices: []int{0, ra.CPU}, Policy: group.Static, Steal: true}
	st := runGroup(t, rt, spec, 200)
	if len(st.Instances) != 2 || st.Instances[1].Device != cpu {
		t.Fatalf("instances %+v; want the second on device %d", st.Instances, cpu)
	}
	if spec.Devices[1] != ra.CPU {
		t.Fatal("group.New changed the caller's Devices")
	}
	_, err := group.New(ctxT(t), rt, group.Spec{Name: "twice", Devices: []int{cpu, ra.CPU}, Stage: ra.StageSpec{Name: "s", Op: "identity"}})
	if !errors.Is(err, group.ErrBadSpec) || !strings.Contains(err.Error(), "listed twice") {
		t.Fatalf("CPU and its id: %v; want listed twice", err)
	}
}
