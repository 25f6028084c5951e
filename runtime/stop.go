package runtime

import (
	"context"
	"fmt"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	"github.com/ringactor/ringactor/p2pqueue"
	"github.com/ringactor/ringactor/runtime/internal/lifecycle"
)

// stopStage ends stage s for a Stop sent to its PID, and with it every
// stage upstream of s, in graph order (lifecycle.Stages.Stop). With drain
// each first finishes what it holds (its results reach the stages after
// s as usual); without, each dead-letters it ("stage stopped"). From then
// on data sent to any of them is dead-lettered "stage stopped", and Send
// returns ErrStageStopped.
func (p *Pipeline) stopStage(ctx context.Context, s *stage, drain bool) error {
	return p.ending().Stop(ctx, s.idx, drain)
}

// ending is the pipeline's stages as package lifecycle ends them.
func (p *Pipeline) ending() *lifecycle.Stages {
	ss := &lifecycle.Stages{List: make([]lifecycle.Stage, len(p.stages)), Next: p.next,
		Refuse: func(i int, stop bool) {
			if stop {
				p.stages[i].stopped.Store(true)
			}
			p.stages[i].ingress.Refuse() // senders give up
		},
		Seal: func(i int) {
			p.stages[i].ingress.Close() // after any send in progress
		},
		Faulted: func() bool { return p.faulted.Load() != nil },
	}
	for i, s := range p.stages {
		held := []*p2pqueue.Link{s.ingressLink}
		for _, e := range s.ups {
			held = append(held, e.link)
		}
		if i == 0 {
			held = append(held, p.spec.stealIn...) // the extra in-links a group gave it
		}
		ss.List[i] = lifecycle.Stage{Name: s.spec.Name, Kernel: s.kernel, Held: held, Exit: s.egress != nil}
	}
	return ss
}

// Idle waits until every message sent so far has ended, delivered or
// dead-lettered (PipelineStats.InFlight is 0), or until ctx ends, and
// returns ctx's error then. It does not stop senders: with messages still
// being sent it returns at a moment when all sent so far had ended. In a
// graph that copies messages (RouteAll), a copy is counted a moment after
// it is published (see PipelineStats), so call Idle once the senders
// are done. A nil ctx is refused.
func (p *Pipeline) Idle(ctx context.Context) error {
	if err := ctxcheck.NotNil(ctx, "Pipeline.Idle"); err != nil {
		return err
	}
	return lifecycle.IdleAccount(ctx, fmt.Sprintf("pipeline %q", p.spec.Name), p.account)
}
