package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/internal/demo"
	"github.com/ringactor/ringactor/kernels"
	ra "github.com/ringactor/ringactor/runtime"
)

// The main job's x*2 → sqrt → +1 on 16-float (64-byte) messages, three
// ways: ring kernels on simulated devices 0, 1 and 2; three plain
// protoactor-go actors; three goroutines joined by buffered channels.
// Every way runs the same Go functions (package kernels' references) on the
// same inputs.

const (
	floats    = 16
	sendBatch = 64 // messages per SendBatch into the pipeline
	chanDepth = 1024
)

// input is message id's payload: the same in every way.
func input(id uint64, j int) float32 { return float32((id*31+uint64(j)*7)%1000) / 8 }

// guideOps are the three stage functions with their parameters.
type guideOps struct {
	f      [3]kernels.GoFunc
	params [3][]float32
}

func newGuideOps() (*guideOps, error) {
	g := &guideOps{params: [3][]float32{{2}, nil, {1}}}
	for i, name := range []string{"scale", "sqrt", "offset"} {
		op, err := kernels.Lookup(name)
		if err != nil {
			return nil, err
		}
		g.f[i] = op.Go
	}
	return g, nil
}

// apply runs stage i in place (the ops are element-wise).
func (g *guideOps) apply(i int, v []float32) { g.f[i](g.params[i], nil, v, v) }

// simRuntime is a runtime for the ring-kernel rows: simulated devices, or
// the CUDA backend's for pipeline/cuda-3stage.
type simRuntime struct {
	rt    *ra.Runtime
	ops   *guideOps
	place [3]int // the devices of the pipeline's three stages
	round int
}

func newSimRuntime(opts ra.DeviceOptions) (*simRuntime, error) {
	opts.Backend, opts.Log = "sim", io.Discard
	rt, err := ra.New(ra.Config{Devices: opts})
	if err != nil {
		return nil, err
	}
	ops, err := newGuideOps()
	if err != nil {
		rt.Close()
		return nil, err
	}
	return onRuntime(rt, ops), nil
}

// onRuntime places the three stages on devices 0, 1 and 2 of rt, or as
// many as it has (all three on device 0 of a one-GPU machine).
func onRuntime(rt *ra.Runtime, ops *guideOps) *simRuntime {
	n := max(1, len(rt.Registry().GPUs()))
	return &simRuntime{rt: rt, ops: ops, place: [3]int{0, 1 % n, 2 % n}}
}

// cudaPipeline is the guide's pipeline on the CUDA backend's devices (a
// GPU, or the emulated driver: then it shows what the device loop costs
// per message on the CPU), measured against the same pipeline on
// simulated devices in the same rounds. It exists only where rt's backend
// is cuda.
func cudaPipeline(rt *ra.Runtime, note string) (comparison, error) {
	ops, err := newGuideOps()
	if err != nil {
		return comparison{}, err
	}
	dev := onRuntime(rt, ops)
	var sim simRuntime
	return comparison{
		candidate: member{"pipeline/cuda-3stage", "cuda", dev.pipeline},
		baselines: []member{{"pipeline/sim-3stage", "sim", sim.pipeline}},
		messages:  200_000,
		least:     2000,
		note:      note,
		setup: func(context.Context) (func(), error) {
			r, err := newSimRuntime(ra.DeviceOptions{SimDevices: 3})
			if err != nil {
				return nil, err
			}
			sim = *r
			return func() { r.rt.Close() }, nil
		},
	}, nil
}

// counter closes done when the n-th message arrives.
type counter struct {
	n    int64
	got  atomic.Int64
	done chan struct{}
}

func newCounter(n int) *counter { return &counter{n: int64(n), done: make(chan struct{})} }

func (c *counter) add() {
	if c.got.Add(1) == c.n {
		close(c.done)
	}
}

func (c *counter) wait(ctx context.Context, what string) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %d of %d messages arrived: %w", what, c.got.Load(), c.n, ctx.Err())
	}
}

// pipeline runs n messages through a fresh 3-stage pipeline, sent in
// batches of sendBatch.
func (s *simRuntime) pipeline(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	s.round++
	spec := demo.Guide(fmt.Sprintf("bench-%d", s.round), s.place)
	c := newCounter(n)
	spec.Deliver.Func = func(r ra.Result) {
		lat.arrive(r.ID)
		c.add()
	}
	p, err := s.rt.Build(ctx, spec)
	if err != nil {
		return 0, err
	}
	defer p.Close(context.Background(), false)
	if err := p.Start(ctx); err != nil {
		return 0, err
	}
	ds := make([]ra.Data, sendBatch)
	for i := range ds {
		ds[i].Floats = make([]float32, floats)
	}
	start := time.Now()
	for id := 1; id <= n; id += sendBatch {
		k := min(sendBatch, n+1-id)
		for i := range k {
			d := &ds[i]
			d.ID = uint64(id + i)
			for j := range d.Floats {
				d.Floats[j] = input(d.ID, j)
			}
			lat.send(d.ID)
		}
		if _, err := p.SendBatch(ctx, ds[:k]); err != nil {
			return 0, err
		}
	}
	if err := c.wait(ctx, "pipeline"); err != nil {
		return 0, err
	}
	el := time.Since(start)
	if err := p.Close(ctx, true); err != nil {
		return 0, err
	}
	if st := p.Stats(); st.Delivered != uint64(n) || st.DeadLettered != 0 {
		return 0, fmt.Errorf("pipeline account: sent %d, delivered %d, dead-lettered %d; want %d delivered", st.Sent, st.Delivered, st.DeadLettered, n)
	}
	return el, nil
}

// paMsg is a message between plain actors: by pointer, changed in place,
// as a protoactor user would pass it on.
type paMsg struct {
	id uint64
	v  [floats]float32
}

// protoactor3 runs n messages through three plain protoactor-go actors,
// one Send per message and per hop.
func (s *simRuntime) protoactor3(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	sys := quietSystem()
	defer sys.Shutdown()
	c := newCounter(n)
	var next *actor.PID
	for i := 2; i >= 0; i-- {
		i, to := i, next
		pid, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(ac actor.Context) {
			m, ok := ac.Message().(*paMsg)
			if !ok {
				return
			}
			s.ops.apply(i, m.v[:])
			if to != nil {
				ac.Send(to, m)
				return
			}
			lat.arrive(m.id)
			c.add()
		}), fmt.Sprintf("stage-%d", i))
		if err != nil {
			return 0, err
		}
		next = pid
	}
	return sendPlain(ctx, sys, next, n, lat, c, "actors")
}

// sendPlain sends n messages to a plain actor, one Send each, a new
// message each (it is read after Send returns), and waits for c.
func sendPlain(ctx context.Context, sys *actor.ActorSystem, pid *actor.PID, n int, lat *latencies, c *counter, what string) (time.Duration, error) {
	start := time.Now()
	for id := uint64(1); id <= uint64(n); id++ {
		m := &paMsg{id: id}
		for j := range m.v {
			m.v[j] = input(id, j)
		}
		lat.send(id)
		sys.Root.Send(pid, m)
	}
	if err := c.wait(ctx, what); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// quietSystem is a plain actor system that logs nothing, as the
// runtime's own is.
func quietSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
}

// gMsg is a message between goroutines, by value.
type gMsg struct {
	id uint64
	v  [floats]float32
}

// goroutines3 runs n messages through three goroutines joined by
// buffered channels, one message per channel operation.
func (s *simRuntime) goroutines3(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	ch := [4]chan gMsg{}
	for i := range ch {
		ch[i] = make(chan gMsg, chanDepth)
	}
	for i := range 3 {
		go func(in <-chan gMsg, out chan<- gMsg) {
			defer close(out)
			for m := range in {
				s.ops.apply(i, m.v[:])
				out <- m
			}
		}(ch[i], ch[i+1])
	}
	got := make(chan int, 1)
	go func() {
		k := 0
		for m := range ch[3] {
			lat.arrive(m.id)
			k++
		}
		got <- k
	}()
	start := time.Now()
	var sendErr error
	for id := uint64(1); id <= uint64(n); id++ {
		m := gMsg{id: id}
		for j := range m.v {
			m.v[j] = input(id, j)
		}
		lat.send(id)
		select {
		case ch[0] <- m:
		case <-ctx.Done():
			sendErr = ctx.Err()
		}
		if sendErr != nil {
			break
		}
	}
	close(ch[0])
	k := <-got
	el := time.Since(start)
	if sendErr != nil {
		return 0, sendErr
	}
	if k != n {
		return 0, fmt.Errorf("goroutines: %d of %d messages arrived", k, n)
	}
	return el, nil
}
