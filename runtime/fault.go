package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// A ring kernel cannot be killed, only abandoned. The watchdog reads each
// stage's heartbeat; a stage that has work queued and has not gone round
// its loop for HangAfter is declared faulted (rk.Kernel.Fault): its Status
// says Faulted, its actor stops (watchers get Terminated), the other
// stages' actors and OnFault are told, and the pipeline is torn down
// without drain. Every message it held ends as a dead letter with reason
// "stage faulted", counted by the host from the stage's in-links once the
// stages before it have ended; the abandoned loop's own reports are
// ignored from then on, so nothing is counted twice.

// DefaultHangAfter is the watchdog's limit when PipelineSpec.HangAfter is 0.
const DefaultHangAfter = 10 * time.Second

// ErrStageFaulted: a stage of the pipeline faulted; it takes no messages.
var ErrStageFaulted = errors.New("ringactor: stage faulted")

// StageFaulted tells a pipeline's other stage actors, and OnFault, that a
// stage faulted.
type StageFaulted struct {
	Pipeline, Stage string
	Device          int
	Cause           string
}

func (f StageFaulted) Error() string {
	return fmt.Sprintf("pipeline %q: stage %q on device %d faulted: %s", f.Pipeline, f.Stage, f.Device, f.Cause)
}

func (p *Pipeline) hangAfter() time.Duration {
	if p.spec.HangAfter == 0 {
		return DefaultHangAfter
	}
	return p.spec.HangAfter
}

// watchdog checks the stages' heartbeats until Close.
func (p *Pipeline) watchdog(ctx context.Context) {
	defer close(p.dogDone)
	limit := p.hangAfter()
	tick := time.NewTicker(max(limit/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, s := range p.stages {
			st := s.kernel.Status()
			if st.State == rk.Active && st.Queued() > 0 && st.HeartbeatAge > limit {
				p.fault(s, fmt.Sprintf("no heartbeat for %v with %d messages queued (HangAfter %v): its stage function has not returned",
					st.HeartbeatAge.Round(time.Millisecond), st.Queued(), limit))
				return
			}
		}
	}
}

// fault declares stage s faulted and tears the pipeline down.
func (p *Pipeline) fault(s *stage, cause string) {
	f := StageFaulted{Pipeline: p.spec.Name, Stage: s.spec.Name, Device: s.spec.Device, Cause: cause}
	if !p.faulted.CompareAndSwap(nil, &f) {
		return
	}
	for _, o := range p.stages {
		o.closed.Store(true) // senders get ErrStageFaulted
	}
	s.kernel.Fault(cause)
	p.rt.system.Root.StopFuture(s.pid).Wait() // watchers get Terminated
	for _, o := range p.stages {
		if o != s {
			p.rt.system.Root.Send(o.pid, f)
		}
	}
	if p.spec.OnFault != nil {
		p.rt.callback(p.spec.Name, "OnFault", 0, func() { p.spec.OnFault(f) })
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), faultTeardown)
		defer cancel()
		p.Close(ctx, false)
	}()
}

// faultTeardown bounds the teardown after a fault.
const faultTeardown = 30 * time.Second

// closedReason is the dead-letter reason for a message refused because
// the pipeline is closed, and the error its sender gets.
func (p *Pipeline) closedReason() (string, error) {
	if f := p.faulted.Load(); f != nil {
		return "stage faulted", fmt.Errorf("%w: %v", ErrStageFaulted, *f)
	}
	return "pipeline closed", ErrClosed
}

// deadLetterAbandoned counts every message still in a faulted stage's
// in-links as dead. The stages before it have ended, so nothing moves
// there any more.
func (p *Pipeline) deadLetterAbandoned(s *stage) error {
	f := p.faulted.Load()
	links := []*p2pqueue.Link{s.ingressLink}
	for _, e := range s.ups {
		links = append(links, e.link)
	}
	links = append(links, p.stealInOf(s)...)
	var errs []error
	for _, l := range links {
		hs, err := l.Queued()
		if err != nil {
			// Not host visible (device memory): count without ids.
			for range l.Len() {
				p.deadLetter(0, DeadLetter{Stage: s.spec.Name, Device: s.spec.Device, Reason: "stage faulted", Err: errors.New(f.Cause)})
			}
			errs = append(errs, err)
			continue
		}
		for _, h := range hs {
			p.deadLetter(h.Origin, DeadLetter{ID: h.ID, Stage: s.spec.Name, Device: s.spec.Device, Reason: "stage faulted", Err: errors.New(f.Cause)})
		}
	}
	return errors.Join(errs...)
}

// stealInOf is the extra in-links a group gave stage s (only the first).
func (p *Pipeline) stealInOf(s *stage) []*p2pqueue.Link {
	if s.idx == 0 {
		return p.spec.StealIn
	}
	return nil
}
