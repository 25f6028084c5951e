package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/watchdog"
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

// watchdog looks at the stages' heartbeats until Close, and faults the
// stage its watch (package watchdog: the decision, which a stall of the
// whole process does not fool) finds hung.
func (p *Pipeline) watchdog(ctx context.Context) {
	defer close(p.dogDone)
	limit := p.hangAfter()
	w := watchdog.New(len(p.stages), limit, time.Now())
	tick := time.NewTicker(w.Every())
	defer tick.Stop()
	look := make([]watchdog.Stage, len(p.stages))
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p.rt.stall.Pass()
		now := time.Now()
		for i, s := range p.stages {
			st := s.kernel.Status()
			look[i] = watchdog.Stage{Heartbeat: st.Heartbeat, Running: st.State.Running(), Active: st.State == rk.Active, Queued: st.Queued()}
		}
		if i, missed := w.Look(now, look); i >= 0 {
			p.fault(p.stages[i], fmt.Sprintf("no heartbeat for %v (watched on time) with %d messages queued (HangAfter %v): its stage function has not returned",
				missed.Round(time.Millisecond), look[i].Queued, limit))
			return
		}
		p.dogLooks.Add(1)
	}
}

// fault declares stage s faulted and tears the pipeline down.
func (p *Pipeline) fault(s *stage, cause string) {
	f := StageFaulted{Pipeline: p.spec.Name, Stage: s.spec.Name, Device: s.spec.Device, Cause: cause}
	if !p.faulted.CompareAndSwap(nil, &f) {
		return
	}
	for _, o := range p.stages {
		o.ingress.Refuse() // senders get ErrStageFaulted
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

// deadLetterAbandoned counts every message still in the in-links of a
// stage the host cut off (faulted, or abandoned by a Close whose ctx
// ended while its stage function ran) as dead. The stages before it have
// ended, so nothing moves there any more. The reason is "stage faulted"
// after a fault, else "shutdown without drain".
func (p *Pipeline) deadLetterAbandoned(s *stage) error {
	reason, cause := ReasonShutdown, error(nil)
	if f := p.faulted.Load(); f != nil {
		reason, cause = ReasonStageFaulted, fmt.Errorf("%w: %s", ErrStageFaulted, f.Cause)
	} else if le := s.kernel.Status().LastError; le != nil {
		cause = fmt.Errorf("stage %q was cut off at Close: %s", s.spec.Name, le.Text)
	} else {
		cause = fmt.Errorf("stage %q was cut off at Close", s.spec.Name)
	}
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
				p.deadLetter(0, DeadLetter{Stage: s.spec.Name, Device: s.spec.Device, Reason: reason, Err: cause})
			}
			errs = append(errs, err)
			continue
		}
		for _, h := range hs {
			p.deadLetter(h.Origin, DeadLetter{ID: h.ID, Stage: s.spec.Name, Device: s.spec.Device, Reason: reason, Err: cause})
		}
	}
	return errors.Join(errs...)
}

// stealInOf is the extra in-links a group gave stage s (only the first).
func (p *Pipeline) stealInOf(s *stage) []*p2pqueue.Link {
	if s.idx == 0 {
		return p.spec.stealIn
	}
	return nil
}
