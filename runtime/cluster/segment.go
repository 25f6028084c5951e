package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster/internal/wire"
	"github.com/ringactor/ringactor/runtime/internal/ext"
)

// segmentGrain hosts one segment of another node's cluster pipeline: a
// protoactor cluster grain of this node's kind, so the origin places it
// here by name. It builds the segment as a local ra.Pipeline, writes the
// batches it receives into the segment's first stage, sends the segment's
// results on to the next segment (or the origin) in batches, and reports
// dead letters to the origin. It watches the origin and drops the segment
// if the origin goes away.
type segmentGrain struct {
	rt     *ra.Runtime
	p      *ra.Pipeline
	msg    wire.BuildMsg
	next   *actor.PID
	origin *actor.PID
	last   string // the segment's last stage, named in its egress dead letters
	// lastDevice is the last stage's device.
	lastDevice int

	w   *wire.BatchWriter // used by the segment's egress pump only
	idx []int             // the egress pump's: the messages of a batch that leave

	br   wire.BatchReader
	ds   []ra.Data
	slab []float32

	// traces holds the traceparent of each sampled message in the segment,
	// from its arrival to its forwarding or dead letter, so the next
	// segment's spans join the same trace.
	tmu    sync.Mutex
	traces map[uint64]string
	final  []wire.ReportStage // the report once the segment closed
}

func wrap(b []byte) *wrapperspb.BytesValue { return &wrapperspb.BytesValue{Value: b} }

func (g *segmentGrain) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *wrapperspb.BytesValue:
		kind, err := wire.KindOf(m.Value)
		if err != nil {
			return // not ours to answer: nothing in it can be attributed
		}
		switch kind {
		case wire.KindBuild:
			err := g.build(ctx.Self().Id, m.Value)
			text := ""
			if err != nil {
				text = err.Error()
			} else {
				ctx.Watch(g.origin)
			}
			ctx.Respond(wrap(wire.EncodeText(wire.KindBuilt, text)))
		case wire.KindBatch:
			g.ingest(m.Value)
		case wire.KindReportReq:
			ctx.Respond(wrap(wire.EncodeReport(g.report())))
		case wire.KindClose:
			text := ""
			if err := g.close(m.Value); err != nil {
				text = err.Error()
			}
			ctx.Respond(wrap(wire.EncodeClosed(text, g.report())))
			ctx.Stop(ctx.Self())
		}
	case *actor.Terminated:
		if g.origin != nil && m.Who.Equal(g.origin) {
			g.drop() // the origin counts what this segment held as unreachable
			ctx.Stop(ctx.Self())
		}
	case *actor.Stopping:
		g.drop()
	}
}

// build builds the segment as a local pipeline. Its name carries the
// grain's own id (self): after a node comes back, the grain of a new
// placement may build while the old one is still closing on the same
// node, and the two must not share a name.
func (g *segmentGrain) build(self string, b []byte) error {
	if g.p != nil {
		return fmt.Errorf("segment %d of pipeline %q is built already", g.msg.To, g.msg.Pipeline)
	}
	m, err := wire.DecodeBuild(b)
	if err != nil {
		return err
	}
	if len(m.Stages) == 0 {
		return fmt.Errorf("segment %d of pipeline %q has no stages", m.To, m.Pipeline)
	}
	g.msg = m
	g.next = actor.NewPID(m.Next.Address, m.Next.ID)
	g.origin = actor.NewPID(m.Origin.Address, m.Origin.ID)
	g.last, g.lastDevice = m.Stages[len(m.Stages)-1].Name, m.Stages[len(m.Stages)-1].Device
	g.w = wire.NewBatchWriter()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(fmt.Sprintf("%s@%s#%d~%s", m.Pipeline, m.Origin.Address, m.To, self))
	g.traces = map[uint64]string{}
	spec := ra.PipelineSpec{Name: name, Stages: m.Stages, OnDeadLetter: g.reportDead, Deliver: ext.Of(g.rt).WithSlots(ra.Sink{}, g.forward)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := g.rt.Build(ctx, spec)
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		p.Close(ctx, false)
		return err
	}
	g.p = p
	return nil
}

// forward sends one egress batch on to the next segment, cut into
// Batches under the transport's limits (split). A message grown past
// MaxFloats on this node cannot leave it: it is reported dead, "wire.Oversize
// payload".
func (g *segmentGrain) forward(_ context.Context, hs []p2pqueue.Header, ps [][]byte) {
	g.idx = g.idx[:0]
	for i := range hs {
		if len(ps[i]) > wire.MaxPayload {
			g.reportDead(ra.DeadLetter{ID: hs[i].ID, Stage: g.last, Device: g.lastDevice, Reason: ra.ReasonOversize, Err: wire.Oversize(hs[i].ID, len(ps[i]))})
			continue
		}
		g.idx = append(g.idx, i)
	}
	root := g.rt.System().Root
	g.w.Split(g.msg.To+1, g.idx, func(i int) (uint64, p2pqueue.Flags, []byte, string) {
		tp := ""
		if hs[i].Flags&p2pqueue.FlagSampled != 0 {
			tp = g.trace(hs[i].ID)
		}
		return hs[i].ID, hs[i].Flags, ps[i], tp
	}, func(b []byte) { root.Send(g.next, wrap(b)) })
	for _, i := range g.idx { // forwarded: their traces are the next hop's now
		if hs[i].Flags&p2pqueue.FlagSampled != 0 {
			g.takeTrace(hs[i].ID)
		}
	}
}

// trace returns the traceparent message id arrived with.
func (g *segmentGrain) trace(id uint64) string {
	g.tmu.Lock()
	defer g.tmu.Unlock()
	return g.traces[id]
}

// takeTrace returns and forgets the traceparent message id arrived with.
func (g *segmentGrain) takeTrace(id uint64) string {
	g.tmu.Lock()
	defer g.tmu.Unlock()
	tp := g.traces[id]
	delete(g.traces, id)
	return tp
}

// report is the segment's report for the origin: now while it runs, as it
// closed after.
func (g *segmentGrain) report() []wire.ReportStage {
	if g.p == nil {
		return g.final
	}
	return reportOf(g.p)
}

// reportDead sends a dead letter to the origin, which owns the count.
func (g *segmentGrain) reportDead(d ra.DeadLetter) {
	g.takeTrace(d.ID)
	if d.Stage == "egress" {
		d.Stage = g.last // the origin knows the segment by its stages
	}
	b, err := EncodeMessage(fitDead(d))
	if err != nil {
		return // not for its texts (fitDead fits them): the origin still counts it at close
	}
	g.rt.System().Root.Send(g.origin, wrap(b))
}

// fitDead fits a dead letter's texts to what the codec carries (wire.FitText),
// so one with an error text over MaxText still reaches the origin, the
// text cut at a word and marked with how much was left out. (Its Reason
// is one of the short class names.)
func fitDead(d ra.DeadLetter) ra.DeadLetter {
	d.Stage = wire.FitText(d.Stage, MaxText)
	if d.Err != nil {
		if text := d.Err.Error(); len(text) > MaxText {
			d.Err = errors.New(wire.FitText(text, MaxText))
		}
	}
	return d
}

// ingest writes a batch into the segment's first stage. Its ra.Data and
// floats reuse the grain's buffers: the send copies them into the slots.
func (g *segmentGrain) ingest(b []byte) {
	_, es, err := g.br.Decode(b)
	if err != nil {
		return // ids unknown: the origin counts the batch's messages at close
	}
	g.ds, g.slab = entriesToData(es, nil, g.ds, g.slab)
	if g.p == nil {
		for _, d := range g.ds {
			g.reportDead(ra.DeadLetter{ID: d.ID, Stage: g.msg.Pipeline, Device: p2pqueue.Host, Reason: ra.ReasonPipelineClosed, Err: ra.ErrClosed})
		}
		return
	}
	g.tmu.Lock()
	for _, e := range es {
		if e.Trace != "" {
			g.traces[e.ID] = e.Trace
		}
	}
	g.tmu.Unlock()
	g.p.SendBatch(context.Background(), g.ds) // each message ends sent or reported
}

// entriesToData turns a batch's entries (those keep marks, or all when keep
// is nil) into ra.Data in ds, their floats in slab: both are reused and
// returned, so a steady stream allocates nothing per message. The ra.Data are
// valid until the next call.
func entriesToData(es []wire.Entry, keep []bool, ds []ra.Data, slab []float32) ([]ra.Data, []float32) {
	total := 0
	for i, e := range es {
		if keep == nil || keep[i] {
			total += len(e.Payload) / 4
		}
	}
	if cap(slab) < total {
		slab = make([]float32, total)
	}
	free := slab[:total]
	ds = ds[:0]
	for i, e := range es {
		if keep != nil && !keep[i] {
			continue
		}
		k := len(e.Payload) / 4
		v, _ := kernels.DecodeFloats(free[:k:k], e.Payload) // whole float32s, checked by decode
		free = free[k:]
		ds = append(ds, ra.Data{ID: e.ID, Floats: v, Sampled: e.Flags&p2pqueue.FlagSampled != 0, Parent: e.Parent})
	}
	return ds, slab
}

func (g *segmentGrain) close(b []byte) error {
	m, err := wire.DecodeClose(b)
	if err != nil {
		return err
	}
	if g.p == nil {
		return nil
	}
	timeout := time.Duration(min(m.Timeout, uint64(time.Hour)))
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err = g.p.Close(ctx, m.Drain)
	g.final = reportOf(g.p)
	g.p = nil
	return err
}

// drop closes the segment without drain, when its origin or node goes.
func (g *segmentGrain) drop() {
	if g.p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g.p.Close(ctx, false)
	g.p = nil
}
