package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/account"
	"github.com/ringactor/ringactor/runtime/internal/ext"
	"github.com/ringactor/ringactor/runtime/internal/naming"
	"github.com/ringactor/ringactor/runtime/internal/requests"
	"github.com/ringactor/ringactor/runtime/internal/telemetry"
	"github.com/ringactor/ringactor/runtime/metrics"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=Policy -linecomment

// Policy is how a stage group splits messages across its instances.
type Policy int

const (
	// Static splits equally: message k goes to instance k mod n.
	Static Policy = iota // static
	// Dynamic weighs instances by their measured throughput (from the
	// kernels' processed counters) and sends each chunk to the instance
	// expected to finish it first.
	Dynamic // dynamic
	// Guided sends shrinking chunks (half the backlog per instance, at least
	// one batch) to whichever instance has the shortest queue.
	Guided // guided
	// MemoryAware splits in proportion to each device's free memory, so no
	// device is given more than its memory allows.
	MemoryAware // memory-aware
)

// Spec defines a stage group: one stage, an instance of it on each
// device, behind one PID.
type Spec struct {
	Name string
	// Stage is the stage each instance runs; its Device is ignored.
	Stage   ra.StageSpec
	Devices []int
	// DeviceParams, when set, gives the instance on device d the params
	// DeviceParams[d] in place of Stage.Params (as many as the op takes):
	// a slower device's longer delay, a device's own constant. Each key
	// is a device in Devices; the others run Stage.Params.
	DeviceParams map[int][]float32
	Policy       Policy
	// Steal runs the work-stealing coordinator: every StealEvery (default
	// 1 ms) it reads the instances' queue depths and sends runtime.Steal{n, to} to
	// the busiest, whose kernel forwards up to n queued messages over a
	// dedicated link to the idlest.
	Steal      bool
	StealEvery time.Duration
	// Deliver and OnDeadLetter are as for a pipeline. Order is not kept
	// across instances.
	Deliver      ra.Sink
	OnDeadLetter func(ra.DeadLetter)
}

// ErrBadSpec: a group spec that cannot be built.
var ErrBadSpec = errors.New("ringactor: bad stage group")

// Group is a running stage group. Its methods are safe for concurrent use.
type Group struct {
	rt    *ra.Runtime
	host  ext.Host // rt's hooks: steal links, delivery
	spec  Spec
	insts []*instance
	steal []*p2pqueue.Link // the steal links it made, freed at Close
	pid   *actor.PID

	acct account.Account // the group's message account over all instances
	reqs requests.Table[outcome]

	mu      sync.Mutex // dispatch state
	rr      int
	credit  []float64 // memory-aware: smooth weighted round robin
	weights []float64

	metrics   metric.Registration
	stop      context.CancelFunc
	coordDone chan struct{}
	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
}

type instance struct {
	idx      int
	device   int
	p        *ra.Pipeline
	stage    string // the stage's name in p
	assigned atomic.Uint64
	stolen   atomic.Uint64 // by the coordinator, from this one
	pid      *actor.PID

	rateMu    sync.Mutex
	rate      float64 // messages per second, smoothed
	lastCount uint64
	lastAt    time.Time
}

// InstanceStats is one instance's share of the work.
type InstanceStats struct {
	Device int
	// Assigned: messages the policy sent to it. Processed: messages its
	// kernel handled (its own and stolen ones). Stolen: messages taken
	// from its queue by others. Queued: waiting in its in-links.
	Assigned, Processed, Stolen, Queued uint64
	Rate                                float64 // messages per second, smoothed
}

// Stats is a group's account: Sent = Delivered + DeadLettered +
// InFlight, over the whole group (an instance's own account does not
// balance when work is stolen from or by it).
type Stats struct {
	Policy                                  string
	Sent, Delivered, DeadLettered, InFlight uint64
	Steals                                  uint64
	Instances                               []InstanceStats
	// Imbalance is the most work (messages processed) any instance did
	// over the mean: 1 is even. ImbalancePercent is how far above even,
	// (Imbalance-1)*100.
	Imbalance, ImbalancePercent float64
}

// Imbalance is the load imbalance of work spread over instances: the
// most any did over the mean (1 when even, or when there is no work), and
// that as a percentage above even: metrics.Imbalance, which the runtime's
// snapshot also uses for a pipeline's stages across devices.
func Imbalance(work []uint64) (ratio, percent float64) { return metrics.Imbalance(work) }

// Metric names a group exports through its runtime's MeterProvider, with
// attribute ringactor.group (docs/METRICS.md).
const (
	MetricImbalance        = "ringactor.group.imbalance"
	MetricImbalancePercent = "ringactor.group.imbalance_percent"
)

// New builds a stage group's instances on rt and starts them.
func New(ctx context.Context, rt *ra.Runtime, spec Spec) (*Group, error) {
	if err := ctxcheck.Live(ctx, "group.New"); err != nil {
		return nil, err
	}
	if err := check(rt, &spec); err != nil {
		return nil, err
	}
	g := &Group{rt: rt, host: ext.Of(rt), spec: spec, coordDone: make(chan struct{})}
	n := len(spec.Devices)
	owner := g.host.NewLinkOwner()
	// steal[i][j]: victim i's dedicated link to thief j.
	steal := make([][]*p2pqueue.Link, n)
	if spec.Steal && n > 1 {
		for i := range n {
			steal[i] = make([]*p2pqueue.Link, n)
			for j := range n {
				if i == j {
					continue
				}
				l, _, err := g.host.NewLink(spec.Devices[i], spec.Devices[j], spec.Stage.Capacity, spec.Stage.SlotSize, ra.NewLinkID(owner, ra.LinkSteal, i, j))
				if err != nil {
					g.freeSteal()
					return nil, fmt.Errorf("ringactor: group %q: steal link %d → %d: %w", spec.Name, i, j, err)
				}
				steal[i][j] = l
				g.steal = append(g.steal, l)
			}
		}
	}
	fail := func(err error) (*Group, error) {
		g.closeInstances(context.Background(), false)
		g.freeSteal()
		return nil, err
	}
	for i, dev := range spec.Devices {
		st := spec.Stage
		st.Device = dev
		if p, ok := spec.DeviceParams[dev]; ok {
			st.Params = p
		}
		ps := ra.PipelineSpec{Name: fmt.Sprintf("%s-%d", spec.Name, i), Stages: []ra.StageSpec{st},
			Deliver:      ra.Sink{Func: g.deliver},
			OnDeadLetter: g.deadLetter}
		var stealIn, stealTo []*p2pqueue.Link
		for j := range n {
			if steal[j] != nil && steal[j][i] != nil {
				stealIn = append(stealIn, steal[j][i])
			}
			if steal[i] != nil && steal[i][j] != nil {
				stealTo = append(stealTo, steal[i][j])
			}
		}
		ps = g.host.WithSteal(ps, stealIn, stealTo)
		p, err := rt.Build(ctx, ps)
		if err != nil {
			return fail(fmt.Errorf("ringactor: group %q instance %d on device %d: %w", spec.Name, i, dev, err))
		}
		in := &instance{idx: i, device: dev, p: p, stage: st.Name, lastAt: time.Now()}
		if in.pid, err = p.PID(st.Name); err != nil {
			return fail(err)
		}
		g.insts = append(g.insts, in)
	}
	if spec.Policy == MemoryAware {
		g.credit = make([]float64, n)
		for _, dev := range spec.Devices {
			d, _ := rt.Registry().Device(dev)
			g.weights = append(g.weights, float64(d.FreeBytes))
		}
	}
	for _, in := range g.insts {
		if err := in.p.Start(ctx); err != nil {
			return fail(err)
		}
	}
	if err := g.registerMetrics(); err != nil {
		return fail(fmt.Errorf("ringactor: group %q metrics: %w", spec.Name, err))
	}
	props := actor.PropsFromProducer(func() actor.Actor { return &groupActor{g: g} })
	var err error
	if g.pid, err = rt.System().Root.SpawnNamed(props, "group/"+spec.Name); err != nil {
		return fail(fmt.Errorf("ringactor: group %q actor: %w", spec.Name, err))
	}
	cctx, stop := context.WithCancel(context.Background())
	g.stop = stop
	go g.coordinate(cctx)
	return g, nil
}

func check(rt *ra.Runtime, spec *Spec) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w %q: %s", ErrBadSpec, spec.Name, fmt.Sprintf(format, a...))
	}
	if err := naming.Check("group", spec.Name, ""); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	if len(spec.Devices) == 0 {
		return bad("no devices; list the device ids to run an instance on")
	}
	seen := map[int]bool{}
	spec.Devices = slices.Clone(spec.Devices) // runtime.CPU resolved, the caller's slice kept
	for i, d := range spec.Devices {
		d = rt.Registry().Resolve(d)
		spec.Devices[i] = d
		if _, err := rt.Registry().Device(d); err != nil {
			return bad("%v", err)
		}
		if seen[d] {
			return bad("device %d listed twice; one instance per device", d)
		}
		seen[d] = true
	}
	if len(spec.DeviceParams) > 0 {
		params := make(map[int][]float32, len(spec.DeviceParams)) // keys resolved, the caller's map kept
		for d, p := range spec.DeviceParams {
			r := rt.Registry().Resolve(d)
			if !seen[r] {
				return bad("DeviceParams for device %d, which is not in Devices %v; give params only for the devices the group runs on", d, spec.Devices)
			}
			if _, twice := params[r]; twice {
				return bad("DeviceParams gives device %d params twice (runtime.CPU is device %d)", r, r)
			}
			params[r] = slices.Clone(p)
		}
		spec.DeviceParams = params
	}
	if spec.Policy < Static || spec.Policy > MemoryAware {
		return bad("unknown policy %d; use Static, Dynamic, Guided or MemoryAware", int(spec.Policy))
	}
	if spec.Steal && len(spec.Devices) > rk.MaxDeviceInLinks {
		return bad("stealing among %d instances: each kernel reads its ingress and a steal link from every other instance, at most %d in-links; use %d devices or fewer",
			len(spec.Devices), rk.MaxDeviceInLinks, rk.MaxDeviceInLinks)
	}
	if spec.StealEvery <= 0 {
		spec.StealEvery = time.Millisecond
	}
	spec.Stage = spec.Stage.WithDefaults()
	if spec.Policy == MemoryAware {
		need := uint64(spec.Stage.Capacity) * uint64(spec.Stage.SlotSize)
		for _, dev := range spec.Devices {
			d, _ := rt.Registry().Device(dev)
			if d.FreeBytes < need {
				return bad("device %d has %d bytes free; one instance's queue needs %d", dev, d.FreeBytes, need)
			}
		}
	}
	if err := ext.Of(rt).CheckResults(spec.Deliver); err != nil {
		return bad("%v", err)
	}
	return nil
}

// PID is the group's actor: runtime.Data sent to it is split by the policy, and
// its Stats is answered to a runtime.Stats request.
func (g *Group) PID() *actor.PID { return g.pid }

// InstancePID is instance i's stage actor; it takes runtime.Steal messages.
func (g *Group) InstancePID(i int) (*actor.PID, error) {
	if i < 0 || i >= len(g.insts) {
		return nil, fmt.Errorf("ringactor: group %q has instances 0..%d, no %d", g.spec.Name, len(g.insts)-1, i)
	}
	return g.insts[i].pid, nil
}

// Send puts one message into the group.
func (g *Group) Send(ctx context.Context, d ra.Data) error {
	_, err := g.SendBatch(ctx, []ra.Data{d})
	return err
}

// SendBatch splits messages across the instances by the group's policy and
// returns how many the instances took into their mailboxes; what they did
// not take has been dead-lettered (and counted). A nil ctx, or one that has
// ended, is refused before anything is done.
func (g *Group) SendBatch(ctx context.Context, ds []ra.Data) (int, error) {
	if err := ctxcheck.LiveSend(ctx, "Group.SendBatch"); err != nil {
		return 0, err
	}
	ds = append([]ra.Data(nil), ds...) // ids are assigned here, not in the caller's slice
	for i := range ds {
		if ds[i].ID == 0 {
			ds[i].ID = g.acct.ID(0)
		}
	}
	done, taken := 0, 0 // messages handled, and of those taken
	for done < len(ds) {
		in, k := g.pick(len(ds) - done)
		chunk := ds[done : done+k]
		sent, err := in.p.SendBatch(ctx, chunk)
		if errors.Is(err, ctxcheck.ErrEnded) { // ctx ended between chunks: the instance did nothing
			g.rejectRest(ds[done:], err)
			return taken, err
		}
		g.acct.Enter(len(chunk))
		in.assigned.Add(uint64(len(chunk)))
		taken += sent
		done += len(chunk) // what the instance did not take it dead-lettered
		if err != nil {
			g.rejectRest(ds[done:], err)
			return taken, err
		}
	}
	return taken, nil
}

// rejectRest dead-letters what a failed batch did not reach.
func (g *Group) rejectRest(ds []ra.Data, cause error) {
	for _, d := range ds {
		g.acct.Enter(1)
		g.deadLetter(ra.DeadLetter{ID: d.ID, Stage: g.spec.Stage.Name, Device: p2pqueue.Host, Reason: ra.ReasonSendCancelled, Err: cause})
	}
}

// chunk is the most messages one dispatch decision covers.
const chunk = 32

// pick chooses the instance for the next messages and how many of the
// remaining ones go there.
func (g *Group) pick(remaining int) (*instance, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.insts)
	switch g.spec.Policy {
	case Dynamic:
		best, bestT := g.insts[0], 0.0
		mean := 0.0
		for _, in := range g.insts {
			mean += in.smoothedRate()
		}
		mean /= float64(n)
		for i, in := range g.insts {
			r := in.smoothedRate()
			if r <= 0 {
				r = max(mean, 1) // not measured yet: assume the average
			}
			t := float64(in.status().Queued()+chunk) / r
			if i == 0 || t < bestT {
				best, bestT = in, t
			}
		}
		return best, min(remaining, chunk)
	case Guided:
		best := g.insts[0]
		var bestQ uint64
		for i, in := range g.insts {
			q := in.status().Queued()
			if i == 0 || q < bestQ {
				best, bestQ = in, q
			}
		}
		return best, min(remaining, max(chunk, remaining/(2*n)))
	case MemoryAware:
		// Smooth weighted round robin: each message goes to the instance
		// with the most credit, credit grows by weight and shrinks by the
		// total when spent.
		total := 0.0
		for i, w := range g.weights {
			g.credit[i] += w
			total += w
		}
		bi := 0
		for i := range g.credit {
			if g.credit[i] > g.credit[bi] {
				bi = i
			}
		}
		g.credit[bi] -= total
		return g.insts[bi], 1
	default: // Static
		in := g.insts[g.rr%n]
		g.rr++
		return in, 1
	}
}

// status is the instance kernel's status.
func (in *instance) status() rk.Status {
	st, _ := in.p.StageStatus(in.stage) // p has this stage
	return st.Status
}

func (in *instance) smoothedRate() float64 {
	in.rateMu.Lock()
	defer in.rateMu.Unlock()
	return in.rate
}

// coordinate measures throughput for Dynamic and, with Steal, moves work
// from the busiest instance to the idlest.
func (g *Group) coordinate(ctx context.Context) {
	defer close(g.coordDone)
	t := time.NewTicker(g.spec.StealEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			g.measure(now)
			if g.spec.Steal && len(g.insts) > 1 {
				g.rebalance(ctx)
			}
		}
	}
}

func (g *Group) measure(now time.Time) {
	for _, in := range g.insts {
		st := in.status()
		in.rateMu.Lock()
		if dt := now.Sub(in.lastAt).Seconds(); dt > 0 {
			r := float64(st.Processed-in.lastCount) / dt
			if in.rate == 0 {
				in.rate = r
			} else {
				in.rate = 0.8*in.rate + 0.2*r
			}
		}
		in.lastCount, in.lastAt = st.Processed, now
		in.rateMu.Unlock()
	}
}

// rebalance steals half the difference between the longest and the
// shortest queue when the shortest is nearly empty.
func (g *Group) rebalance(ctx context.Context) {
	var hi, lo *instance
	var hq, lq uint64
	for _, in := range g.insts {
		q := in.status().Queued()
		if hi == nil || q > hq {
			hi, hq = in, q
		}
		if lo == nil || q < lq {
			lo, lq = in, q
		}
	}
	if hi == lo || lq > chunk || hq < lq+2*chunk {
		return
	}
	to := lo.idx
	if to > hi.idx {
		to-- // the victim's steal links skip itself
	}
	n := int(hq-lq) / 2
	if n == 0 {
		return
	}
	// An actor message to the victim's stage actor, as any client would.
	res, err := g.rt.System().Root.RequestFuture(hi.pid, ra.Steal{N: n, To: to}, 100*time.Millisecond).Result()
	if s, ok := res.(ra.Stolen); ok && err == nil && s.Err == nil {
		hi.stolen.Add(uint64(s.Moved))
	}
}

func (g *Group) deliver(r ra.Result) {
	g.acct.Deliver(1)
	if g.reqs.Pending() && g.answer(r.ID, outcome{R: r}) {
		return // a request's result goes to its caller
	}
	// A full Chan holds the instance's egress pump up (backpressure), as
	// it always has: no done context ends the wait.
	g.host.DeliverTo(context.Background(), g.spec.Deliver, r)
}

func (g *Group) deadLetter(d ra.DeadLetter) {
	g.acct.DeadLetter()
	if g.reqs.Pending() {
		dd := d
		g.answer(d.ID, outcome{Dead: &dd})
	}
	if g.spec.OnDeadLetter != nil {
		g.spec.OnDeadLetter(d)
	}
}

// Stats reads the group's account and each instance's share.
func (g *Group) Stats() Stats {
	st := Stats{Policy: g.spec.Policy.String()}
	for _, in := range g.insts {
		ks := in.status()
		st.Instances = append(st.Instances, InstanceStats{Device: in.device, Assigned: in.assigned.Load(),
			Processed: ks.Processed, Stolen: ks.Stolen, Queued: ks.Queued(), Rate: in.smoothedRate()})
		st.Steals += ks.Stolen
	}
	t := g.acct.Read(nil)
	st.Sent, st.Delivered, st.DeadLettered, st.InFlight = t.Sent, t.Delivered, t.DeadLettered, t.InFlight
	work := make([]uint64, len(st.Instances))
	for i, in := range st.Instances {
		work[i] = in.Processed
	}
	st.Imbalance, st.ImbalancePercent = Imbalance(work)
	return st
}

// registerMetrics exports the group's imbalance.
func (g *Group) registerMetrics() error {
	m := telemetry.Meter(g.rt.MeterProvider(), "github.com/ringactor/ringactor/runtime/group")
	ratio, err := m.Float64ObservableGauge(MetricImbalance, metric.WithUnit("1"),
		metric.WithDescription("most work any instance of the group did over the mean (1 is even)"))
	if err != nil {
		return err
	}
	pct, err := m.Float64ObservableGauge(MetricImbalancePercent, metric.WithUnit("%"),
		metric.WithDescription("how far the busiest instance's work is above the mean"))
	if err != nil {
		return err
	}
	attrs := metric.WithAttributes(attribute.String("ringactor.group", g.spec.Name))
	g.metrics, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := g.Stats()
		o.ObserveFloat64(ratio, st.Imbalance, attrs)
		o.ObserveFloat64(pct, st.ImbalancePercent, attrs)
		return nil
	}, ratio, pct)
	return err
}

// Close stops the coordinator, then every instance at once (with drain,
// each finishes what it holds; an instance drains only once every victim
// that may send it stolen work has stopped, so they stop together).
func (g *Group) Close(ctx context.Context, drain bool) error {
	if err := ctxcheck.NotNil(ctx, "Group.Close"); err != nil {
		return err
	}
	g.closeOnce.Do(func() {
		g.closed.Store(true)
		if g.stop != nil {
			g.stop()
			<-g.coordDone
		}
		if g.pid != nil {
			g.rt.System().Root.StopFuture(g.pid).Wait()
		}
		g.closeErr = g.closeInstances(ctx, drain)
		g.freeSteal()
	})
	return g.closeErr
}

// freeSteal gives the steal links back once the instances have closed
// (FreeLink waits for any loop still using one).
func (g *Group) freeSteal() {
	for _, l := range g.steal {
		g.host.FreeLink(l)
	}
	g.steal = nil
}

func (g *Group) closeInstances(ctx context.Context, drain bool) error {
	if g.metrics != nil {
		g.metrics.Unregister()
		g.metrics = nil
	}
	errs := make([]error, len(g.insts))
	var wg sync.WaitGroup
	for i, in := range g.insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = in.p.Close(ctx, drain)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// groupActor takes Data for the group and answers Stats.
type groupActor struct{ g *Group }

func (a *groupActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case ra.Data:
		a.g.Send(context.Background(), m)
	case *ra.Data:
		if m != nil {
			a.g.Send(context.Background(), *m)
		}
	case ra.Stats, *ra.Stats:
		c.Respond(a.g.Stats())
	}
}
