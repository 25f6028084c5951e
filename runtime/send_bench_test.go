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
// simulated device. b.N counts messages, so ns/op and allocs/op are per
// message. Each benchmark runs twice: "run", through a started stage whose
// results are counted and dropped (the timer stops once every result has
// come out), and "host", into the link of a stage that was never started,
// which holds them all: the host's side of a send alone, with no kernel
// on the other cores.

func BenchmarkSend(b *testing.B) {
	benchSend(b, func(ctx context.Context, s *sender, d *ra.Data) error { return s.p.Send(ctx, *d) }, 1)
}

func BenchmarkSendBatch(b *testing.B) {
	ds := make([]ra.Data, 64)
	benchSend(b, func(ctx context.Context, s *sender, d *ra.Data) error {
		for i := range ds {
			ds[i] = *d
		}
		_, err := s.p.SendBatch(ctx, ds)
		return err
	}, len(ds))
}

func BenchmarkSendPID(b *testing.B) {
	benchSend(b, func(ctx context.Context, s *sender, d *ra.Data) error {
		s.root.Send(s.pid, d) // a reused *Data: copied into the mailbox
		return nil
	}, 1)
}

// sender is a benchmark's pipeline, its stage's PID and the root context.
type sender struct {
	p    *ra.Pipeline
	pid  *actor.PID
	root *actor.RootContext
}

// hostCap is the host runs' link: it holds every message of a round.
const hostCap = 1 << 15

func benchSend(b *testing.B, send func(context.Context, *sender, *ra.Data) error, per int) {
	b.Run("run", func(b *testing.B) { benchSendOn(b, send, per, true) })
	b.Run("host", func(b *testing.B) { benchSendOn(b, send, per, false) })
}

// benchSendOn sends b.N messages (about; in calls of per) through send,
// into a started stage (run) or one that takes hostCap messages at most
// without reading them, built again (the timer stopped) once it is full.
func benchSendOn(b *testing.B, send func(context.Context, *sender, *ra.Data) error, per int, run bool) {
	e := rttest.New(b, ra.DeviceOptions{Backend: "sim", SimDevices: 1, Log: io.Discard})
	ctx := rttest.Ctx(b)
	var got atomic.Int64
	var s *sender
	build := func() {
		st := ra.StageSpec{Name: "inc", Op: "offset", Params: []float32{1}}
		if !run {
			st.Capacity = hostCap
		}
		p, err := e.RT.Build(ctx, ra.PipelineSpec{Name: "bench", Stages: []ra.StageSpec{st}, Deliver: ra.Sink{Func: func(ra.Result) { got.Add(1) }}})
		if err != nil {
			b.Fatal(err)
		}
		s = &sender{p: p, root: e.RT.System().Root}
		if s.pid, err = p.PID("inc"); err != nil {
			b.Fatal(err)
		}
		if run {
			if err := p.Start(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	build()
	defer func() { s.p.Close(ctx, false) }()
	d := ra.Data{Floats: []float32{1, 2, 3, 4}}
	n, held := 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for n < b.N {
		if !run && held+per > hostCap {
			b.StopTimer()
			s.p.Close(ctx, false)
			build()
			held = 0
			b.StartTimer()
		}
		if err := send(ctx, s, &d); err != nil {
			b.Fatal(err)
		}
		n += per
		held += per
	}
	for run && got.Load() < int64(n) {
		time.Sleep(10 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}
