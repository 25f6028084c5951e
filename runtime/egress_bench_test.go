package runtime_test

import (
	"io"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
)

// BenchmarkEgress measures a one-stage pipeline end to end, per result:
// batches of 64 sent in, each result delivered through the egress pump to
// a Func or a Chan sink. Its allocs/op is the cost per message of the
// send, the stage and the delivery together (the results of one egress
// batch share one allocation).
func BenchmarkEgress(b *testing.B) {
	for _, sink := range []string{"func", "chan"} {
		b.Run(sink, func(b *testing.B) {
			e := rttest.New(b, ra.DeviceOptions{Backend: "sim", SimDevices: 1, Log: io.Discard})
			ctx := rttest.Ctx(b)
			var got atomic.Int64
			all, done := make(chan struct{}), make(chan struct{})
			take := func() {
				if got.Add(1) == int64(b.N) {
					close(all)
				}
			}
			spec := ra.PipelineSpec{Name: "bench-" + sink, Stages: []ra.StageSpec{{Name: "id", Op: "identity"}}}
			switch sink {
			case "func":
				spec.Deliver.Func = func(ra.Result) { take() }
			case "chan":
				ch := make(chan ra.Result, 256)
				spec.Deliver.Chan = ch
				go func() {
					defer close(done)
					for range ch {
						take()
					}
				}()
			}
			p, err := e.RT.Build(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Start(ctx); err != nil {
				b.Fatal(err)
			}
			batch := make([]ra.Data, 64)
			for i := range batch {
				batch[i].Floats = make([]float32, 16)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for sent := 0; sent < b.N; {
				k := min(len(batch), b.N-sent)
				if _, err := p.SendBatch(ctx, batch[:k]); err != nil {
					b.Fatal(err)
				}
				sent += k
			}
			<-all
			b.StopTimer()
			if err := p.Close(ctx, true); err != nil {
				b.Fatal(err)
			}
			if spec.Deliver.Chan != nil {
				close(spec.Deliver.Chan)
				<-done
			}
		})
	}
}
