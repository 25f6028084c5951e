package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	ra "github.com/ringactor/ringactor/runtime"
)

// One actor, one Send per message: a stage's PID (the message goes into
// its device mailbox and through its kernel) against a plain actor running
// the same function on a protoactor mailbox.

// sendToStage sends n messages, one Send each, to a one-stage pipeline's
// PID and waits for all of them at its egress. The stage copies a message
// into its device mailbox during Send, so the sender reuses one *Data and
// its vector, as the runtime's docs allow.
func (s *simRuntime) sendToStage(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	s.round++
	c := newCounter(n)
	p, err := s.rt.Build(ctx, ra.PipelineSpec{
		Name:   fmt.Sprintf("send-%d", s.round),
		Stages: []ra.StageSpec{{Name: "x2", Op: "scale", Params: []float32{2}, Device: 0}},
		Deliver: ra.Sink{Func: func(r ra.Result) {
			lat.arrive(r.ID)
			c.add()
		}},
	})
	if err != nil {
		return 0, err
	}
	defer p.Close(context.Background(), false)
	if err := p.Start(ctx); err != nil {
		return 0, err
	}
	pid, err := p.PID("x2")
	if err != nil {
		return 0, err
	}
	root := s.rt.System().Root
	d := &ra.Data{Floats: make([]float32, floats)}
	start := time.Now()
	for id := uint64(1); id <= uint64(n); id++ {
		d.ID = id
		for j := range d.Floats {
			d.Floats[j] = input(id, j)
		}
		lat.send(id)
		root.Send(pid, d)
	}
	if err := c.wait(ctx, "stage"); err != nil {
		return 0, err
	}
	el := time.Since(start)
	if err := p.Close(ctx, true); err != nil {
		return 0, err
	}
	if st := p.Stats(); st.Delivered != uint64(n) {
		return 0, fmt.Errorf("stage account: sent %d, delivered %d, dead-lettered %d; want %d delivered", st.Sent, st.Delivered, st.DeadLettered, n)
	}
	return el, nil
}

// sendToActor is the same through a plain protoactor-go actor: a message
// must be its own value, since it is read after Send returns.
func (s *simRuntime) sendToActor(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	sys := quietSystem()
	defer sys.Shutdown()
	c := newCounter(n)
	pid, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(ac actor.Context) {
		m, ok := ac.Message().(*paMsg)
		if !ok {
			return
		}
		s.ops.apply(0, m.v[:])
		lat.arrive(m.id)
		c.add()
	}), "x2")
	if err != nil {
		return 0, err
	}
	return sendPlain(ctx, sys, pid, n, lat, c, "actor")
}
