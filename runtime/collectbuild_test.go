package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	ra "github.com/ringactor/ringactor/runtime"
)

// The metric reader may collect at any moment, also while a pipeline is
// being built: its callbacks read the stages' kernels, which Build is
// still launching. They read none before the build has launched them all
// (under -race a read racing the launch fails; without, a RouteAll
// stage's nil kernel would panic the collection).
func TestMetricsCollectedDuringBuild(t *testing.T) {
	e := deviceEnv(t)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var rm metricdata.ResourceMetrics
		for ctx.Err() == nil {
			if err := e.Metrics.Collect(context.Background(), &rm); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { stop(); wg.Wait() }()
	for i := range 20 {
		spec := ra.PipelineSpec{Name: fmt.Sprintf("collect-%d", i), Stages: []ra.StageSpec{
			{Name: "fan", Op: "identity", Device: testDevice(0), To: []string{"a", "b"}, Route: ra.RouteAll},
			{Name: "a", Op: "identity", Device: testDevice(1)},
			{Name: "b", Op: "identity", Device: testDevice(2)},
		}}
		p, err := e.RT.Build(ctxT(t), spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctxT(t), true); err != nil {
			t.Fatal(err)
		}
	}
}
