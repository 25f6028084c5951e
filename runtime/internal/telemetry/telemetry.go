// Package telemetry is a pipeline's telemetry: the spans of its sampled
// messages (package spans: a root per message, a child per stage visited)
// and its metrics (package meter: stage latencies, counters and the
// account), both fed from the ring kernels' trace records. It joins the
// two, which do not import each other, behind the few calls a pipeline
// makes.
package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/meter"
	"github.com/ringactor/ringactor/runtime/internal/msgconv"
	"github.com/ringactor/ringactor/runtime/internal/spans"
	"github.com/ringactor/ringactor/runtime/metrics"
)

// Scope is the instrumentation scope of ringactor's spans and metrics.
const Scope = "github.com/ringactor/ringactor/runtime"

// Tracer is tp's tracer of instrumentation scope name (Scope, or a
// sub-package's path), with ringactor's version and the semantic
// conventions' schema URL (package msgconv).
func Tracer(tp trace.TracerProvider, name string) trace.Tracer {
	return tp.Tracer(name, trace.WithInstrumentationVersion(msgconv.Version), trace.WithSchemaURL(msgconv.SchemaURL))
}

// Meter is mp's meter of instrumentation scope name, as Tracer.
func Meter(mp metric.MeterProvider, name string) metric.Meter {
	return mp.Meter(name, metric.WithInstrumentationVersion(msgconv.Version), metric.WithSchemaURL(msgconv.SchemaURL))
}

// Stage is what the telemetry knows of a stage: its name, device, and
// how many copies of each result it makes (its fan-out).
type Stage struct {
	Name   string
	Device int
	Fanout int
}

// Pipeline is one pipeline's telemetry.
type Pipeline struct {
	stages []Stage
	spans  *spans.Tracer
	meter  *meter.Pipeline
}

// New registers pipeline's metrics on mp and its tracer on tp. status
// reads stage i's kernel (false before it is launched), account the
// pipeline's account.
func New(tp trace.TracerProvider, mp metric.MeterProvider, pipeline string, stages []Stage, status func(i int) (rk.Status, bool), account func() meter.Account) (*Pipeline, error) {
	ss, ms := make([]spans.Stage, len(stages)), make([]meter.Stage, len(stages))
	for i, s := range stages {
		ss[i] = spans.Stage{Name: s.Name, Device: s.Device, Fanout: s.Fanout}
		ms[i] = meter.Stage{Name: s.Name, Device: s.Device}
	}
	m, err := meter.NewPipeline(Meter(mp, Scope), pipeline, ms, status, account)
	if err != nil {
		return nil, err
	}
	return &Pipeline{stages: stages, spans: spans.New(Tracer(tp, Scope), pipeline, ss), meter: m}, nil
}

// Begin opens the trace of a sampled message under parent when it is
// valid, else under the span legacy carries (Data's deprecated Context),
// if any.
func (t *Pipeline) Begin(parent trace.SpanContext, legacy context.Context, id uint64, at time.Time) {
	t.spans.Begin(ParentContext(parent, legacy), id, at)
}

// ParentContext is the context a message's trace starts from: one
// holding parent when it is valid, else legacy (nil: none).
func ParentContext(parent trace.SpanContext, legacy context.Context) context.Context {
	if parent.IsValid() {
		return trace.ContextWithSpanContext(context.Background(), parent)
	}
	return legacy
}

// Record turns stage i's trace record into its span and metrics; the
// stage's id (its origin in records) is i+1.
func (t *Pipeline) Record(i int, r rk.TraceRecord) {
	t.meter.Record(i, r.QueueWait(), r.Service())
	t.spans.Record(uint32(i+1), r)
}

// End ends one copy of a message, delivered (dead nil) or dead-lettered,
// that came from stage id from (0: the host); the root span ends with the
// last copy.
func (t *Pipeline) End(id uint64, from uint32, when time.Time, dead *spans.Death) {
	t.spans.End(id, from, when, dead)
}

// Latency summarises each stage's sampled messages, in stage order.
func (t *Pipeline) Latency() []metrics.StageLatency {
	out := make([]metrics.StageLatency, len(t.stages))
	for i, s := range t.stages {
		l := t.meter.Latency(i)
		out[i] = metrics.StageLatency{Stage: s.Name, Device: s.Device, Samples: l.Samples, QueueWait: l.QueueWait, Service: l.Service}
	}
	return out
}

// Close stops the metrics; messages still open (shut down mid-flight)
// end now, dead with reason.
func (t *Pipeline) Close(reason string) {
	t.meter.Close()
	t.spans.Close(spans.Death{Reason: reason})
}
