package runtime_test

import (
	"slices"
	"testing"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
)

// Every span a pipeline makes follows OpenTelemetry's messaging
// conventions (a root "send <pipeline>", a "process <pipeline>/<stage>"
// per stage, the message id a string), and every metric the runtime
// exports has a unit and a description; tracer and meter name
// ringactor's version and the conventions' schema URL.
func TestOpenTelemetryConventions(t *testing.T) {
	e := deviceEnv(t)
	spec := guide("conventions")
	spec.SampleRatio = 1
	res := make(chan ra.Result, 8)
	spec.Deliver.Chan = res
	p := buildStarted(t, e.RT, spec)
	ctx := ctxT(t)
	const n = 5
	for i := range n {
		if err := p.Send(ctx, ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		select {
		case <-res:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	open := rttest.MetricUnits(t, e.Metrics) // the counters report while the pipeline is open
	if err := p.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	closed := rttest.MetricUnits(t, e.Metrics) // the histograms hold every sample once it has closed
	for _, name := range []string{ra.MetricDeviceKernels, ra.MetricDeviceMemRuntime, ra.MetricDeviceMemUsed, ra.MetricDeviceMemTotal,
		ra.MetricLinkMessages, ra.MetricLinkBytes, ra.MetricLinkBandwidth,
		"ringactor.stage.processed", "ringactor.stage.dropped", "ringactor.stage.queue_depth",
		"ringactor.pipeline.sent", "ringactor.pipeline.delivered", "ringactor.pipeline.dead_lettered", "ringactor.pipeline.in_flight",
		"ringactor.stage.queue_wait", "ringactor.stage.service_time"} {
		if !slices.Contains(open, name) && !slices.Contains(closed, name) {
			t.Errorf("metric %s was not collected: have %v and %v", name, open, closed)
		}
	}
	if got := rttest.MessagingSpans(t, e.Spans.Ended()); got != n*4 {
		t.Errorf("%d spans checked, want %d (a root and 3 stages per message)", got, n*4)
	}
}
