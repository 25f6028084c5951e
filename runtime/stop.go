package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	"github.com/ringactor/ringactor/internal/wait"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/ingress"
)

// stopStage ends stage s for a Stop sent to its PID, and with it every
// stage upstream of s (those whose results reach it: in a chain, the
// stages before it). Their results could only go into a stage that reads
// nothing, so they stop too, and nothing is left in a link no stage
// reads. They end in graph order, each before the stages it feeds: an
// ending kernel closes its out-links, and what it passed on is still read
// by the next. With drain each first finishes what it holds (its results
// reach the stages after s as usual); without, each dead-letters it
// ("stage stopped"). From then on data sent to any of them is
// dead-lettered "stage stopped", and Send returns ErrStageStopped.
func (p *Pipeline) stopStage(ctx context.Context, s *stage, drain bool) error {
	order := p.upstream(s.idx)
	for _, i := range order {
		p.stages[i].stopped.Store(true)
		p.stages[i].ingress.Refuse() // senders give up
	}
	for _, i := range order {
		o := p.stages[i]
		o.ingress.Close() // after any send in progress
	}
	var errs []error
	if drain && p.faulted.Load() == nil {
		ss := make([]*stage, len(order))
		for k, i := range order {
			ss[k] = p.stages[i]
		}
		errs = append(errs, activateToDrain(ctx, ss)...)
	}
	for _, i := range order {
		if err := terminate(ctx, p.stages[i].kernel, drain); err != nil {
			errs = append(errs, fmt.Errorf("ringactor: stopping stage %q: %w", p.stages[i].spec.Name, err))
		}
	}
	return errors.Join(errs...)
}

// activateToDrain activates the stages a Deactivate left idle: a drain
// finishes what the stages hold, and those before an idle one could not
// drain into it.
func activateToDrain(ctx context.Context, ss []*stage) []error {
	var errs []error
	for _, s := range ss {
		if s.kernel.Status().State != rk.Idle {
			continue
		}
		if err := s.kernel.Activate(ctx); err != nil {
			errs = append(errs, fmt.Errorf("ringactor: stage %q was deactivated and could not be activated to drain: %w", s.spec.Name, err))
		}
	}
	return errs
}

// terminate ends k, also when a Close or another Stop is already ending
// it (it waits for that then).
func terminate(ctx context.Context, k *rk.Kernel, drain bool) error {
	err := k.Terminate(ctx, drain)
	if errors.Is(err, rk.ErrTransition) {
		select {
		case <-k.Done():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// upstream is stage i and every stage whose results reach it, in graph
// order (each before the stages it feeds), i last.
func (p *Pipeline) upstream(i int) []int {
	feeds := make([][]int, len(p.stages)) // feeds[j]: the stages sending to j
	for a, to := range p.next {
		for _, b := range to {
			feeds[b] = append(feeds[b], a)
		}
	}
	var order []int
	seen := make([]bool, len(p.stages))
	var visit func(j int)
	visit = func(j int) { // post-order over the stages feeding j: a topological order
		if seen[j] {
			return
		}
		seen[j] = true
		for _, a := range feeds[j] {
			visit(a)
		}
		order = append(order, j)
	}
	visit(i)
	return order
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
	w := wait.Waiter{P: idleWait}
	defer w.Stop()
	for p.account().InFlight != 0 {
		if err := w.Wait(ctx); err != nil {
			st := p.account()
			return fmt.Errorf("ringactor: pipeline %q still had %d messages in flight (%d sent, %d delivered, %d dead-lettered): %w",
				p.spec.Name, st.InFlight, st.Sent, st.Delivered, st.DeadLettered, err)
		}
	}
	return nil
}

// idleWait polls the account: yields first, then sleeps up to 1 ms.
var idleWait = ingress.Wait
