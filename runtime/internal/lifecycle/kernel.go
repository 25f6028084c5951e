package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// activateToDrain activates the stages among order that a Deactivate
// left idle: a drain finishes what the stages hold, and those before an
// idle one could not drain into it.
func (ss *Stages) activateToDrain(ctx context.Context, order []int) []error {
	var errs []error
	for _, i := range order {
		s := ss.List[i]
		if s.Kernel.Status().State != rk.Idle {
			continue
		}
		if err := s.Kernel.Activate(ctx); err != nil {
			errs = append(errs, fmt.Errorf("ringactor: stage %q was deactivated and could not be activated to drain: %w", s.Name, err))
		}
	}
	return errs
}

// terminate ends k, also when a Close or another Stop is already ending
// it (it waits for that then).
func terminate(ctx context.Context, k Kernel, drain bool) error {
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

// countHeld counts every message still in links (between head and tail)
// as dead, with dead; a link in device memory, whose headers the host
// cannot read, is counted without ids (a zero Header each), and its
// error returned. The links' producers and consumer have ended, so
// nothing moves there any more.
func countHeld(links []*p2pqueue.Link, dead func(p2pqueue.Header)) error {
	var errs []error
	for _, l := range links {
		hs, err := l.Queued()
		if err != nil {
			// Not host visible (device memory): count without ids.
			for range l.Len() {
				dead(p2pqueue.Header{})
			}
			errs = append(errs, err)
			continue
		}
		for _, h := range hs {
			dead(h)
		}
	}
	return errors.Join(errs...)
}
