package runtime_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
)

// The ingress's hot path: messages into a one-stage pipeline on a
// simulated device, whose results are counted and dropped. b.N counts
// messages, so ns/op and allocs/op are per message; the timer stops once
// every result has come out.

func BenchmarkSend(b *testing.B) {
	benchSend(b, func(ctx context.Context, p *ra.Pipeline, d *ra.Data) error { return p.Send(ctx, *d) }, 1)
}

func BenchmarkSendBatch(b *testing.B) {
	ds := make([]ra.Data, 64)
	benchSend(b, func(ctx context.Context, p *ra.Pipeline, d *ra.Data) error {
		for i := range ds {
			ds[i] = *d
		}
		_, err := p.SendBatch(ctx, ds)
		return err
	}, len(ds))
}

func BenchmarkSendPID(b *testing.B) {
	var pid *actor.PID
	benchSend(b, func(ctx context.Context, p *ra.Pipeline, d *ra.Data) error {
		if pid == nil {
			var err error
			if pid, err = p.PID("inc"); err != nil {
				return err
			}
		}
		root.Send(pid, d) // a reused *Data: copied into the mailbox
		return nil
	}, 1)
}

// root is the benchmark runtime's root context, for BenchmarkSendPID.
var root *actor.RootContext

// benchSend sends b.N messages (about; in calls of per) through send.
func benchSend(b *testing.B, send func(context.Context, *ra.Pipeline, *ra.Data) error, per int) {
	e := rttest.New(b, ra.DeviceOptions{Backend: "sim", SimDevices: 1, Log: io.Discard})
	root = e.RT.System().Root
	ctx := rttest.Ctx(b)
	var got atomic.Int64
	p, err := e.RT.Build(ctx, ra.PipelineSpec{Name: "bench", Stages: []ra.StageSpec{{Name: "inc", Op: "offset", Params: []float32{1}}},
		Deliver: ra.Sink{Func: func(ra.Result) { got.Add(1) }}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx, true)
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	d := ra.Data{Floats: []float32{1, 2, 3, 4}}
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for n < b.N {
		if err := send(ctx, p, &d); err != nil {
			b.Fatal(err)
		}
		n += per
	}
	for got.Load() < int64(n) {
		time.Sleep(10 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}
