package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster/internal/wire"
	"github.com/ringactor/ringactor/runtime/internal/msgconv"
	"github.com/ringactor/ringactor/runtime/internal/telemetry"
)

// Instrumentation scope of the cluster pipeline's spans.
const scope = "github.com/ringactor/ringactor/runtime/cluster"

// roots are a cluster pipeline's root spans: one per sampled message in
// flight, from the origin's send to the end of the message there
// (delivered or dead-lettered). Each segment the message visits, on this
// node or another, traces its part as a child of that root (the root's
// W3C context is the parent of the message's Data on this node and
// travels in the Batch entry to other nodes), so one trace holds every
// stage span of every node. A nil *roots traces nothing.
type roots struct {
	tracer   trace.Tracer
	pipeline string
	node     string

	mu   sync.Mutex
	open map[uint64]*root
}

type root struct {
	ctx  context.Context
	span trace.Span
	tp   string // the root's traceparent, as Batches carry it
}

func newRoots(tp trace.TracerProvider, pipeline, node string) *roots {
	return &roots{tracer: telemetry.Tracer(tp, scope), pipeline: pipeline, node: node, open: map[uint64]*root{}}
}

// begin opens message id's root under the sender's span, if d names one
// (Data.Parent, else its deprecated Context), and returns the span
// context its segments' traces hang from.
func (rs *roots) begin(d ra.Data, id uint64) trace.SpanContext {
	parent := d.Context
	if d.Parent.IsValid() || parent == nil {
		parent = trace.ContextWithSpanContext(context.Background(), d.Parent)
	}
	ctx, span := rs.tracer.Start(parent, msgconv.SpanName(msgconv.OpSend, rs.pipeline), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(msgconv.Send(msgconv.OpSend, rs.pipeline, msgconv.ID(id), attribute.String("ringactor.pipeline", rs.pipeline),
			attribute.String("ringactor.node", rs.node))...))
	r := &root{ctx: ctx, span: span, tp: wire.Traceparent(ctx)}
	rs.mu.Lock()
	if old := rs.open[id]; old != nil { // an id reused while in flight: the first trace ends here
		old.span.SetStatus(codes.Error, "message id reused while in flight")
		old.span.SetAttributes(msgconv.ErrorType("id reused"))
		old.span.End()
	}
	rs.open[id] = r
	rs.mu.Unlock()
	return span.SpanContext()
}

// traceparent is the W3C context of message id's root, "" if it is not
// traced.
func (rs *roots) traceparent(id uint64) string {
	if rs == nil {
		return ""
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r := rs.open[id]; r != nil {
		return r.tp
	}
	return ""
}

// end ends message id's root: delivered (dead == nil) or dead-lettered.
func (rs *roots) end(id uint64, dead *ra.DeadLetter) {
	if rs == nil {
		return
	}
	rs.mu.Lock()
	r := rs.open[id]
	delete(rs.open, id)
	rs.mu.Unlock()
	if r == nil {
		return
	}
	if dead != nil {
		r.span.SetStatus(codes.Error, fmt.Sprintf("dead-lettered at stage %q: %s", dead.Stage, dead.Reason))
		r.span.SetAttributes(attribute.String("ringactor.dead_letter.reason", dead.Reason.String()), msgconv.ErrorType(dead.Reason.String()))
	}
	r.span.End()
}

// close ends the roots of messages still open when the pipeline has
// closed (their ends were not seen).
func (rs *roots) close() {
	if rs == nil {
		return
	}
	rs.mu.Lock()
	open := rs.open
	rs.open = map[uint64]*root{}
	rs.mu.Unlock()
	now := time.Now()
	for _, r := range open {
		r.span.SetStatus(codes.Error, "pipeline closed with the message in flight")
		r.span.SetAttributes(msgconv.ErrorType(ra.ReasonPipelineClosed.String()))
		r.span.End(trace.WithTimestamp(now))
	}
}
