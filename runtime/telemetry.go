package runtime

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/meter"
	"github.com/ringactor/ringactor/runtime/internal/spans"
)

// Instrumentation scope of ringactor's spans and metrics.
const scope = "github.com/ringactor/ringactor/runtime"

// telemetry is a pipeline's: the spans of its sampled messages
// (internal/spans: a root per message, a child per stage visited) and its
// metrics (internal/meter: stage latencies, counters and the account),
// both fed from the kernels' trace records.
type telemetry struct {
	spans *spans.Tracer
	meter *meter.Pipeline
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, pipeline string, stages []*stage, account func() PipelineStats) (*telemetry, error) {
	ss, ms := make([]spans.Stage, len(stages)), make([]meter.Stage, len(stages))
	for i, s := range stages {
		ss[i] = spans.Stage{Name: s.spec.Name, Device: s.spec.Device, Fanout: s.fanout()}
		ms[i] = meter.Stage{Name: s.spec.Name, Device: s.spec.Device}
	}
	status := func(i int) (rk.Status, bool) {
		if k := stages[i].kernel; k != nil {
			return k.Status(), true
		}
		return rk.Status{}, false
	}
	acct := func() meter.Account {
		a := account()
		return meter.Account{Sent: a.Sent, Delivered: a.Delivered, DeadLettered: a.DeadLettered, InFlight: a.InFlight}
	}
	m, err := meter.NewPipeline(mp.Meter(scope), pipeline, ms, status, acct)
	if err != nil {
		return nil, err
	}
	return &telemetry{spans: spans.New(tp.Tracer(scope), pipeline, ss), meter: m}, nil
}

// begin opens the trace of a sampled message entering at stage first.
func (t *telemetry) begin(parent context.Context, id uint64, first int, at time.Time) {
	t.spans.Begin(parent, id, at)
}

// record turns one stage's trace record into its span and metrics.
func (t *telemetry) record(s *stage, r rk.TraceRecord) {
	t.meter.Record(s.idx, r.QueueWait(), r.Service())
	t.spans.Record(s.id(), r)
}

// end ends one copy of a message, delivered (dead == nil) or
// dead-lettered, that came from stage id from (0: the host); the root
// span ends with the last.
func (t *telemetry) end(id uint64, from uint32, when time.Time, dead *DeadLetter) {
	var d *spans.Death
	if dead != nil {
		d = &spans.Death{Stage: dead.Stage, Reason: dead.Reason.String()}
	}
	t.spans.End(id, from, when, d)
}

// latency summarises stage s's sampled messages.
func (t *telemetry) latency(s *stage) StageLatency {
	l := t.meter.Latency(s.idx)
	return StageLatency{Stage: s.spec.Name, Device: s.spec.Device, Samples: l.Samples, QueueWait: Percentiles(l.QueueWait), Service: Percentiles(l.Service)}
}

// close stops the metrics; messages still open (shut down mid-flight)
// end now, dead with ReasonPipelineClosed.
func (t *telemetry) close() {
	t.meter.Close()
	t.spans.Close(spans.Death{Reason: ReasonPipelineClosed.String()})
}
