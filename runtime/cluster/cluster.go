package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster/internal/wire"
	"github.com/ringactor/ringactor/runtime/internal/account"
	"github.com/ringactor/ringactor/runtime/internal/ext"
	"github.com/ringactor/ringactor/runtime/internal/naming"
	"github.com/ringactor/ringactor/runtime/internal/requests"
)

// Options tune a cluster pipeline.
type Options struct {
	// Window is the most messages out on other nodes at once per run of
	// remote segments (default DefaultRemoteWindow): the local side waits
	// for room, so a slow node slows the pipeline instead of filling its
	// mailbox.
	Window int
	// Timeout bounds each remote request: placing and building a segment,
	// closing one (default 10 s).
	Timeout time.Duration
}

// Pipeline is a pipeline whose stages run on several nodes. Stages
// next to each other on one node form a segment, built there as a local
// runtime.Pipeline; segments on different nodes are joined by batched links over
// protoactor remote. The node that builds it (the origin) owns its count:
// every message sent ends there, delivered or dead-lettered, exactly once,
// including those on a node that died ("remote unreachable").
type Pipeline struct {
	node    *Node
	rt      *ra.Runtime // node.rt
	host    ext.Host    // rt's hooks: delivery and dead letters at the origin
	spec    ra.PipelineSpec
	opts    Options
	segs    []*segment
	excs    []*excursion
	byStage map[string]*segment
	origin  *actor.PID

	acct        account.Account // the origin's account: only the origin counts
	reqs        requests.Table[outcome]
	late        atomic.Uint64
	sampleEvery uint64
	roots       *roots

	closed    atomic.Bool
	ctx       context.Context // ends when Close has finished
	cancel    context.CancelFunc
	closeOnce sync.Once
	closeErr  error
	rejoinMu  sync.Mutex
}

// segment is a run of stages on one node.
type segment struct {
	idx    int
	node   string // "" for this node
	stages []ra.StageSpec
	local  *ra.Pipeline // a segment on this node
	exc    *excursion   // a remote segment's run

	mu       sync.Mutex
	pid      *actor.PID // a remote segment's grain
	identity string
	member   string             // the cluster member id of its node when placed
	report   []wire.ReportStage // a remote segment's latest report, its stages marked with its node
}

func (s *segment) remotePID() *actor.PID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// Build builds a pipeline whose stages may name other nodes of the
// cluster (StageSpec.Node), places each remote segment on its node through
// protoactor cluster, starts it, and returns it started. A spec whose
// stages are all on this node builds like Runtime.Build. One whose stages
// span nodes is a chain of its stages in order, runs the default data
// path, and keeps lanes and buffers to the stages on this node: Build
// refuses a graph (To, Route, KeyOffset), a DataPath, and lanes or
// buffers on another node's stage with ErrBadPipeline, naming the fix.
func (n *Node) Build(ctx context.Context, spec ra.PipelineSpec, opts Options) (*Pipeline, error) {
	if err := ctxcheck.Live(ctx, "Node.Build"); err != nil {
		return nil, err
	}
	if opts.Window == 0 {
		opts.Window = DefaultRemoteWindow
	}
	if opts.Window < 1 {
		return nil, fmt.Errorf("%w %q: window %d: want at least 1", ra.ErrBadPipeline, spec.Name, opts.Window)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if err := naming.Check("pipeline", spec.Name, "@#"); err != nil {
		return nil, fmt.Errorf("%w: %w", ra.ErrBadPipeline, err)
	}
	if len(spec.Stages) == 0 {
		return nil, fmt.Errorf("%w %q: no stages", ra.ErrBadPipeline, spec.Name)
	}
	if spec.SampleRatio < 0 || spec.SampleRatio > 1 || math.IsNaN(spec.SampleRatio) {
		return nil, fmt.Errorf("%w %q: sample ratio %g; want 0 to 1", ra.ErrBadPipeline, spec.Name, spec.SampleRatio)
	}
	host := ext.Of(n.rt)
	if err := host.CheckResults(spec.Deliver); err != nil { // the origin delivers with DeliverTo
		return nil, fmt.Errorf("%w %q: %w", ra.ErrBadPipeline, spec.Name, err)
	}
	cp := &Pipeline{node: n, rt: n.rt, host: host, spec: spec, opts: opts, byStage: map[string]*segment{},
		roots: newRoots(n.rt.TracerProvider(), spec.Name, n.cfg.Name)}
	cp.ctx, cp.cancel = context.WithCancel(context.Background())
	if spec.SampleRatio > 0 {
		cp.sampleEvery = uint64(math.Max(1, math.Round(1/spec.SampleRatio)))
	}
	seen := map[string]bool{}
	for i, s := range spec.Stages {
		if seen[s.Name] {
			return nil, fmt.Errorf("%w %q: two stages are named %q; stage names are unique", ra.ErrBadPipeline, spec.Name, s.Name)
		}
		seen[s.Name] = true
		node := s.Node
		if node == n.cfg.Name {
			node = ""
		}
		if node != "" && !validNodeName(node) {
			return nil, fmt.Errorf("%w %q: stage %q: node %q: use a node's name (letters, digits, '-', '_', '.')", ra.ErrBadPipeline, spec.Name, s.Name, s.Node)
		}
		s.Node = ""
		if i == 0 || cp.segs[len(cp.segs)-1].node != node {
			cp.segs = append(cp.segs, &segment{idx: len(cp.segs), node: node})
		}
		seg := cp.segs[len(cp.segs)-1]
		seg.stages = append(seg.stages, s)
		cp.byStage[s.Name] = seg
	}
	if err := cp.checkCarried(); err != nil {
		return nil, err
	}
	for i := 0; i < len(cp.segs); i++ {
		if cp.segs[i].node == "" {
			continue
		}
		j := i
		for j+1 < len(cp.segs) && cp.segs[j+1].node != "" {
			j++
		}
		e := newExcursion(cp, i, j, opts.Window)
		for k := i; k <= j; k++ {
			cp.segs[k].exc = e
		}
		cp.excs = append(cp.excs, e)
		i = j
	}
	if err := cp.build(ctx); err != nil {
		cp.abandon()
		return nil, err
	}
	return cp, nil
}

func (cp *Pipeline) build(ctx context.Context) error {
	rt := cp.node.rt
	var err error
	props := actor.PropsFromProducer(func() actor.Actor { return &originActor{cp: cp} })
	if cp.origin, err = rt.System().Root.SpawnNamed(props, cp.spec.Name+"/origin"); err != nil {
		return fmt.Errorf("ringactor: cluster pipeline %q: %w", cp.spec.Name, err)
	}
	// Local segments first (a remote segment's Build names the PIDs it
	// sends to, all of them the origin's), then the remote runs.
	for k, s := range cp.segs {
		if s.node != "" {
			continue
		}
		// Sampling is the cluster pipeline's (SendBatch): a segment traces
		// the messages marked sampled, under their root.
		spec := ra.PipelineSpec{Name: fmt.Sprintf("%s.%d", cp.spec.Name, k), Stages: s.stages,
			OnDeadLetter: cp.deadLetter, HangAfter: cp.spec.HangAfter, OnFault: cp.spec.OnFault, DataPath: cp.spec.DataPath}
		if k+1 < len(cp.segs) {
			e := cp.segs[k+1].exc
			spec.Deliver = cp.host.WithSlots(ra.Sink{}, func(ctx context.Context, hs []p2pqueue.Header, ps [][]byte) {
				e.send(ctx, len(hs), func(i int) (uint64, p2pqueue.Flags, []byte, string) {
					tp := ""
					if hs[i].Flags&p2pqueue.FlagSampled != 0 {
						tp = cp.roots.traceparent(hs[i].ID)
					}
					return hs[i].ID, hs[i].Flags, ps[i], tp
				})
			})
		} else {
			spec.Deliver = ra.Sink{Func: cp.deliver}
		}
		if s.local, err = rt.Build(ctx, spec); err != nil {
			return err
		}
	}
	for _, e := range cp.excs {
		if err := cp.place(ctx, e, 0); err != nil {
			return err
		}
	}
	for _, s := range cp.segs {
		if s.local != nil {
			if err := s.local.Start(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// place builds a remote run's segments on their nodes, last first (each
// names the next), watches them, and marks the run up.
func (cp *Pipeline) place(ctx context.Context, e *excursion, gen int) error {
	rt := cp.node.rt
	next := cp.origin
	var first *actor.PID
	for k := e.last; k >= e.first; k-- {
		s := cp.segs[k]
		member, ok := cp.node.has(s.node)
		if !ok {
			return fmt.Errorf("%w: stage %q is placed on node %q, which is not in cluster %q (members: %s): start it, or wait for it with Node.WaitFor",
				ErrNode, s.stages[0].Name, s.node, cp.node.cfg.Cluster, strings.Join(cp.node.Members(), ", "))
		}
		identity := fmt.Sprintf("%s@%s#%d.%d", cp.spec.Name, cp.node.Address(), k, gen)
		b, err := wire.EncodeBuild(wire.BuildMsg{Pipeline: cp.spec.Name, To: k, Next: wire.PIDRef{Address: next.Address, ID: next.Id},
			Origin: wire.PIDRef{Address: cp.origin.Address, ID: cp.origin.Id}, Stages: s.stages})
		if err != nil {
			return err
		}
		pid, err := cp.grain(ctx, identity, s.node)
		if err != nil {
			return err
		}
		res, err := cp.request(ctx, pid, wrap(b))
		if err == nil {
			var text string
			if text, err = wire.DecodeText(res, wire.KindBuilt, "Built"); err == nil {
				err = wire.RemoteError(text)
			}
		}
		if err != nil {
			return fmt.Errorf("ringactor: build stage %q on node %q: %w", s.stages[0].Name, s.node, err)
		}
		if _, err := rt.System().Root.RequestFuture(cp.origin, watch{pid}, cp.opts.Timeout).Result(); err != nil {
			return fmt.Errorf("ringactor: watch node %q: %w", s.node, err)
		}
		s.mu.Lock()
		s.pid, s.identity, s.member = pid, identity, member
		s.mu.Unlock()
		next, first = pid, pid
	}
	e.up(first)
	return nil
}

// grain activates the segment grain of identity on the named node.
func (cp *Pipeline) grain(ctx context.Context, identity, node string) (*actor.PID, error) {
	done := make(chan *actor.PID, 1)
	go func() { done <- cp.node.cluster.Get(identity, nodeKind(node)) }()
	select {
	case pid := <-done:
		if pid == nil {
			return nil, fmt.Errorf("%w: node %q did not activate a segment (is it up, and in cluster %q?)", ErrRemoteUnreachable, node, cp.node.cfg.Cluster)
		}
		return pid, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: placing a segment on node %q: %w", ErrRemoteUnreachable, node, ctx.Err())
	}
}

// request asks a remote actor and returns the bytes it answered with.
func (cp *Pipeline) request(ctx context.Context, pid *actor.PID, m *wrapperspb.BytesValue) ([]byte, error) {
	timeout := cp.opts.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, ctx.Err()
	}
	res, err := cp.node.rt.System().Root.RequestFuture(pid, m, timeout).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRemoteUnreachable, pid, err)
	}
	bv, ok := res.(*wrapperspb.BytesValue)
	if !ok {
		return nil, fmt.Errorf("%w: %s answered %T", ErrRemoteUnreachable, pid, res)
	}
	return bv.Value, nil
}

// abandon tears down what a failed build made.
func (cp *Pipeline) abandon() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cp.closed.Store(true)
	for _, s := range cp.segs {
		if s.local != nil {
			s.local.Close(ctx, false)
		}
		if pid := s.remotePID(); pid != nil {
			cp.request(ctx, pid, wrap(wire.EncodeClose(wire.CloseMsg{Drain: false, Timeout: uint64(time.Second)})))
		}
	}
	if cp.origin != nil {
		cp.node.rt.System().Root.StopFuture(cp.origin).Wait()
	}
	cp.roots.close()
	cp.cancel()
}

func (cp *Pipeline) sample(id uint64) bool {
	return cp.sampleEvery != 0 && id%cp.sampleEvery == 0
}

// Send puts one message into the first stage, wherever it runs.
func (cp *Pipeline) Send(ctx context.Context, d ra.Data) error {
	if err := ctxcheck.LiveSend(ctx, "cluster.Pipeline.Send"); err != nil {
		return err
	}
	_, err := cp.SendBatch(ctx, []ra.Data{d})
	return err
}

// SendBatch puts messages into the first stage and returns how many it
// took; the rest have been dead-lettered (the error says why). Message
// ids must be unique among the messages in flight; 0 takes the next one.
//
// A sampled message (Data.Sampled, or picked by the sample ratio) gets
// one trace across every node: a root span here, from the send to its end
// here, and under it each segment's spans, on whichever node runs it.
func (cp *Pipeline) SendBatch(ctx context.Context, ds []ra.Data) (int, error) {
	if err := ctxcheck.LiveSend(ctx, "cluster.Pipeline.SendBatch"); err != nil {
		return 0, err
	}
	traced := false
	for i := range ds {
		if ds[i].ID == 0 {
			ds[i].ID = cp.acct.ID(0)
		}
		traced = traced || ds[i].Sampled || cp.sample(ds[i].ID)
	}
	if traced && !cp.closed.Load() {
		ds = slices.Clone(ds) // the roots' contexts are ours, not the caller's
		for i := range ds {
			if ds[i].Sampled || cp.sample(ds[i].ID) {
				ds[i].Sampled, ds[i].Parent, ds[i].Context = true, cp.roots.begin(ds[i], ds[i].ID), nil
			}
		}
	}
	cp.acct.Enter(len(ds))
	first := cp.segs[0]
	if first.local != nil {
		return first.local.SendBatch(ctx, ds)
	}
	if cp.closed.Load() {
		s := first.stages[0]
		for _, d := range ds {
			cp.deadLetter(ra.DeadLetter{ID: d.ID, Stage: s.Name, Device: s.Device, Reason: ra.ReasonPipelineClosed, Err: ra.ErrClosed})
		}
		return 0, fmt.Errorf("%w: %d messages dead-lettered", ra.ErrClosed, len(ds))
	}
	return first.exc.sendData(ctx, ds)
}

// deadLetter ends a message as dead: counted, its trace ended, its
// request answered, and the spec's dead-letter subscribers told.
func (cp *Pipeline) deadLetter(d ra.DeadLetter) {
	cp.acct.DeadLetter()
	cp.roots.end(d.ID, &d)
	if cp.reqs.Pending() {
		dd := d
		cp.answer(d.ID, outcome{Dead: &dd})
	}
	cp.host.TellDeadLetter(&cp.spec, d)
}

// deliver ends a message as delivered: a request's result goes to its
// requester, any other to the sink.
func (cp *Pipeline) deliver(r ra.Result) {
	cp.acct.Deliver(1)
	cp.roots.end(r.ID, nil)
	if cp.reqs.Pending() && cp.answer(r.ID, outcome{R: r}) {
		return
	}
	cp.host.DeliverTo(cp.ctx, cp.spec.Deliver, r)
}

// Stats is the pipeline's account (Sent = Delivered + DeadLettered +
// InFlight, where in flight includes messages on other nodes) and the
// status of every stage in order, those on other nodes (StageStats.Node)
// as their segments report them: asked now while the pipeline is open, as
// they closed once it is, and as last heard from a node that does not
// answer.
func (cp *Pipeline) Stats() ra.PipelineStats {
	var st ra.PipelineStats
	for _, s := range cp.segs {
		if s.local != nil {
			st.Stages = append(st.Stages, s.local.Stats().Stages...)
			continue
		}
		for _, r := range cp.remoteReport(s) {
			st.Stages = append(st.Stages, r.Stats)
		}
	}
	t := cp.acct.Read(nil)
	st.Sent, st.Delivered, st.DeadLettered, st.InFlight, st.Abandoned = t.Sent, t.Delivered, t.DeadLettered, t.InFlight, t.Abandoned
	return st
}

// Latency summarises the sampled queue waits and service times of every
// stage, in the order Stats lists them: those on other nodes
// (StageLatency.Node) from their segments' reports, as Stats gets them.
func (cp *Pipeline) Latency() []ra.StageLatency {
	var out []ra.StageLatency
	for _, s := range cp.segs {
		if s.local != nil {
			out = append(out, s.local.Latency()...)
			continue
		}
		for _, r := range cp.remoteReport(s) {
			out = append(out, r.Lat)
		}
	}
	return out
}

// reportTimeout bounds asking a remote segment for its report.
const reportTimeout = 2 * time.Second

// remoteReport asks remote segment s for its report while the pipeline is
// open and its node up, and returns the latest it has: the one its Close
// answered once closed, the last heard (or none) from a node that does
// not answer.
func (cp *Pipeline) remoteReport(s *segment) []wire.ReportStage {
	if pid := s.remotePID(); pid != nil && !cp.closed.Load() && s.exc.isDown() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), min(cp.opts.Timeout, reportTimeout))
		res, err := cp.request(ctx, pid, wrap(wire.EncodeReportReq()))
		cancel()
		if err == nil {
			if rep, err := wire.DecodeReport(res); err == nil {
				cp.keepReport(s, rep)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.report) == 0 { // never heard from: the stages, without counts
		rep := make([]wire.ReportStage, len(s.stages))
		for i, st := range s.stages {
			rep[i].Stats = ra.StageStats{Stage: st.Name, Device: st.Device, Node: s.node}
			rep[i].Lat = ra.StageLatency{Stage: st.Name, Device: st.Device, Node: s.node}
		}
		return rep
	}
	return s.report
}

func (cp *Pipeline) keepReport(s *segment, rep []wire.ReportStage) {
	s.mu.Lock()
	s.report = onNode(rep, s.node)
	s.mu.Unlock()
}

// Remote is how many messages are out on other nodes now.
func (cp *Pipeline) Remote() int {
	n := 0
	for _, e := range cp.excs {
		n += e.outstanding()
	}
	return n
}

// Late is how many results or dead letters came back from a node after
// their messages had been dead-lettered as unreachable (and were dropped).
func (cp *Pipeline) Late() uint64 { return cp.late.Load() }

// Unreachable lists the nodes whose segments are down now; Rejoin places
// them again.
func (cp *Pipeline) Unreachable() []string {
	var out []string
	for _, e := range cp.excs {
		if e.isDown() != nil {
			for k := e.first; k <= e.last; k++ {
				out = append(out, cp.segs[k].node)
			}
		}
	}
	return out
}

// unreachable marks the run holding pid down: what is out on it is
// dead-lettered "remote unreachable", and what is sent to it from now on.
func (cp *Pipeline) unreachable(pid *actor.PID, why string) {
	for _, s := range cp.segs {
		if p := s.remotePID(); p != nil && p.Equal(pid) {
			s.exc.fail(ra.ReasonRemoteUnreachable, fmt.Errorf("%w: node %q (%s): %s; restart it, then call Rejoin", ErrRemoteUnreachable, s.node, pid.Address, why))
			return
		}
	}
}

// Rejoin places the segments of every unreachable node again (on the node
// of that name now in the cluster: a restarted one, or one that stalled
// and answers again), and resumes sending to them. Messages lost with the
// old node stay dead-lettered. Each new placement is watched for a settle
// period (five health checks, at least 2 s) and placed again if the link
// to the node drops meanwhile, so Rejoin takes at least that long when it
// has anything to place; it is bounded by ctx.
func (cp *Pipeline) Rejoin(ctx context.Context) error {
	if err := ctxcheck.Live(ctx, "cluster.Pipeline.Rejoin"); err != nil {
		return err
	}
	cp.rejoinMu.Lock()
	defer cp.rejoinMu.Unlock()
	if cp.closed.Load() {
		return ra.ErrClosed
	}
	var errs []error
	for _, e := range cp.excs {
		if e.isDown() == nil {
			continue
		}
		var werr error
		for k := e.first; k <= e.last && werr == nil; k++ { // a node that died comes back as a new member
			s := cp.segs[k]
			s.mu.Lock()
			old := s.member
			s.mu.Unlock()
			werr = cp.node.waitForNew(ctx, s.node, old)
		}
		if werr != nil {
			errs = append(errs, werr)
			continue
		}
		cp.closeRun(e) // the old grains, if their node lives on
		if err := cp.replace(ctx, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// replace places a run again under a new identity, trying until ctx ends:
// right after a node comes back, protoactor remote may drop the first
// requests to it (a link it ended while the node was away, closing late,
// ends the new link too), so a placement that finds the node unreachable
// is tried again, a health-check round later, under another identity.
//
// A placement that succeeds is watched for a settle period (five health
// checks, at least two seconds) before Rejoin returns: the late close of a
// link from before the stall can still end the new one then, and the run
// is placed again if it does.
func (cp *Pipeline) replace(ctx context.Context, e *excursion) error {
	settle := max(5*cp.node.cfg.RefreshTTL, 2*time.Second)
	for {
		err := cp.place(ctx, e, int(time.Now().UnixNano()&math.MaxInt32))
		if err == nil {
			select {
			case <-ctx.Done():
				return nil // placed; not watched to the end of the settle period
			case <-time.After(settle):
			}
			down := e.isDown()
			if down == nil {
				return nil
			}
			err = fmt.Errorf("%w: the new placement went down within %v: %w", ErrRemoteUnreachable, settle, down)
		}
		if !errors.Is(err, ErrRemoteUnreachable) {
			return err
		}
		cp.closeRun(e) // whatever the attempt placed
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (and %w)", err, ctx.Err())
		case <-time.After(cp.node.cfg.RefreshTTL):
		}
	}
}

// closeRun tells a run's grains to close without drain, not waiting.
func (cp *Pipeline) closeRun(e *excursion) {
	for k := e.first; k <= e.last; k++ {
		if pid := cp.segs[k].remotePID(); pid != nil {
			cp.node.rt.System().Root.Send(pid, wrap(wire.EncodeClose(wire.CloseMsg{Drain: false, Timeout: uint64(time.Second)})))
		}
	}
}

// Close stops the pipeline segment by segment, in order: with drain each
// finishes what it holds (and what arrives from the segment before it)
// before the next is closed; without, each dead-letters what it holds.
// Whatever is still out on other nodes at the end is dead-lettered ("remote
// unreachable" for a node that is down or did not answer). Close is bounded
// by ctx and idempotent.
func (cp *Pipeline) Close(ctx context.Context, drain bool) error {
	if err := ctxcheck.NotNil(ctx, "cluster.Pipeline.Close"); err != nil {
		return err
	}
	cp.closeOnce.Do(func() {
		cp.rejoinMu.Lock()
		defer cp.rejoinMu.Unlock()
		cp.closed.Store(true)
		rt := cp.node.rt
		var errs []error
		flush := func() { // arrivals queued at the origin are handed on
			if _, err := rt.System().Root.RequestFuture(cp.origin, flushReq{}, max(time.Until(deadline(ctx)), time.Millisecond)).Result(); err != nil {
				errs = append(errs, fmt.Errorf("ringactor: origin of %q: %w", cp.spec.Name, err))
			}
		}
		for k, s := range cp.segs {
			if s.local != nil {
				if k > 0 {
					flush()
				}
				if err := s.local.Close(ctx, drain); err != nil {
					errs = append(errs, err)
				}
				continue
			}
			pid := s.remotePID()
			if pid == nil || s.exc.isDown() != nil {
				continue
			}
			res, err := cp.request(ctx, pid, wrap(wire.EncodeClose(wire.CloseMsg{Drain: drain, Timeout: uint64(max(time.Until(deadline(ctx)), time.Millisecond))})))
			if err == nil {
				var text string
				var rep []wire.ReportStage
				if text, rep, err = wire.DecodeClosed(res); err == nil {
					cp.keepReport(s, rep)
					err = wire.RemoteError(text)
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("ringactor: close stage %q on node %q: %w", s.stages[0].Name, s.node, err))
				if errors.Is(err, ErrRemoteUnreachable) {
					cp.unreachable(pid, "did not answer Close")
				}
			}
		}
		flush()
		for _, e := range cp.excs {
			reason, why := ra.ReasonShutdown, fmt.Errorf("%w: still out on another node when the pipeline closed", ra.ErrClosed)
			if err := e.isDown(); err != nil {
				reason, why = ra.ReasonRemoteUnreachable, err
			}
			e.drain(reason, why)
		}
		rt.System().Root.StopFuture(cp.origin).Wait()
		cp.roots.close()
		cp.cancel()
		cp.closeErr = errors.Join(errs...)
	})
	return cp.closeErr
}

// deadline is ctx's deadline, or a minute from now.
func deadline(ctx context.Context) time.Time {
	if dl, ok := ctx.Deadline(); ok {
		return dl
	}
	return time.Now().Add(time.Minute)
}

// Describe shows the segments: which node runs which stages.
func (cp *Pipeline) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster pipeline %q from node %q (%s), %d segments\n", cp.spec.Name, cp.node.Name(), cp.node.Address(), len(cp.segs))
	for k, s := range cp.segs {
		var names []string
		for _, st := range s.stages {
			names = append(names, fmt.Sprintf("%s (%s on device %d)", st.Name, st.Op, st.Device))
		}
		where := "this node"
		if s.node != "" {
			where = fmt.Sprintf("node %q via protoactor remote", s.node)
			if pid := s.remotePID(); pid != nil {
				where += " at " + pid.Address
			}
			if s.exc.isDown() != nil {
				where += " (unreachable)"
			}
		}
		fmt.Fprintf(&b, "  segment %d on %s: %s\n", k, where, strings.Join(names, " -> "))
		if k+1 < len(cp.segs) && (s.node != "" || cp.segs[k+1].node != "") {
			fmt.Fprintf(&b, "     -> batched link (msgpack in protobuf BytesValue), window %d messages\n", cp.opts.Window)
		}
	}
	return b.String()
}

// Control messages of the origin actor (local only).
type (
	watch    struct{ pid *actor.PID }
	flushReq struct{}
	gone     struct {
		who *actor.PID
		why actor.TerminatedReason
	}
)

// originActor receives, for its cluster pipeline, the batches remote
// segments send to a segment on this node or to the sink, the dead letters
// they report, and the Terminated of a watched remote segment.
type originActor struct {
	cp   *Pipeline
	br   wire.BatchReader
	keep []bool
	ds   []ra.Data
	slab []float32
}

func (o *originActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *wrapperspb.BytesValue:
		kind, err := wire.KindOf(m.Value)
		if err != nil {
			return
		}
		switch kind {
		case wire.KindBatch:
			o.arrive(m.Value)
		case wire.KindDeadLetter:
			o.reported(m.Value)
		}
	case watch:
		ctx.Watch(m.pid)
		ctx.Respond(true)
	case flushReq:
		ctx.Respond(true)
	case *actor.Terminated:
		// A system message, so it overtakes batches already queued from
		// that node: requeue it behind them, so that they are counted as
		// arrived rather than lost.
		ctx.Send(ctx.Self(), gone{m.Who, m.Why})
	case gone:
		if m.why == actor.TerminatedReason_Stopped && o.cp.closed.Load() {
			return // our own Close stopped it
		}
		o.cp.unreachable(m.who, fmt.Sprintf("its segment ended (%s)", m.why))
	}
}

// arrive hands on a batch that came back from a remote run: into the
// local segment it is for, or to the sink.
func (o *originActor) arrive(b []byte) {
	cp := o.cp
	to, es, err := o.br.Decode(b)
	if err != nil || to == 0 || to > len(cp.segs) {
		return // nothing attributable: its messages are counted when the pipeline closes
	}
	e := cp.segs[to-1].exc
	if e == nil {
		return
	}
	if cap(o.keep) < len(es) {
		o.keep = make([]bool, len(es))
	}
	keep := o.keep[:len(es)]
	e.arriveBatch(func(i int) uint64 { return es[i].ID }, keep)
	for i := range es {
		if !keep[i] {
			cp.late.Add(1)
		}
	}
	if to == len(cp.segs) { // results: the user keeps them, so they get fresh memory
		ds, _ := entriesToData(es, keep, nil, nil)
		for _, d := range ds {
			cp.deliver(ra.Result{ID: d.ID, Floats: d.Floats})
		}
		return
	}
	o.ds, o.slab = entriesToData(es, keep, o.ds, o.slab)
	cp.segs[to].local.SendBatch(cp.ctx, o.ds) // each ends delivered or dead-lettered there
}

// reported ends a message a remote segment dead-lettered.
func (o *originActor) reported(b []byte) {
	m, err := DecodeMessage(b)
	if err != nil {
		return
	}
	d, ok := m.(ra.DeadLetter)
	if !ok {
		return
	}
	s, ok := o.cp.byStage[d.Stage]
	if !ok || s.exc == nil {
		return
	}
	if !s.exc.arrive(d.ID) {
		o.cp.late.Add(1)
		return
	}
	o.cp.deadLetter(d)
}
