package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	"github.com/ringactor/ringactor/runtime/internal/lifecycle"
)

// A ring kernel cannot be killed, only abandoned: a stage with work
// queued whose loop has not gone round for HangAfter is declared faulted,
// and the pipeline torn down without drain; what it held is counted dead
// by the host (package lifecycle).

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

// watchdog looks at the stages' heartbeats until Close, and faults the
// stage it finds hung (lifecycle.Stages.Watch).
func (p *Pipeline) watchdog(ctx context.Context) {
	p.ending().Watch(ctx, cmp.Or(p.spec.HangAfter, DefaultHangAfter), p.rt.stall.Pass, &p.dogLooks, func(i int, cause string) { p.fault(p.stages[i], cause) })
}

// fault declares stage s faulted and tears the pipeline down: its Status
// says Faulted, its actor stops (watchers get Terminated), the other
// stages' actors and OnFault are told, and Close runs without drain.
func (p *Pipeline) fault(s *stage, cause string) {
	f := StageFaulted{Pipeline: p.spec.Name, Stage: s.spec.Name, Device: s.spec.Device, Cause: cause}
	if !p.faulted.CompareAndSwap(nil, &f) {
		return
	}
	p.ending().Fault(s.idx, cause)            // senders get ErrStageFaulted
	p.rt.system.Root.StopFuture(s.pid).Wait() // watchers get Terminated
	for _, o := range p.stages {
		if o != s {
			p.rt.system.Root.Send(o.pid, f)
		}
	}
	if p.spec.OnFault != nil {
		p.rt.callback(p.spec.Name, "OnFault", 0, func() { p.spec.OnFault(f) })
	}
	lifecycle.Teardown(func(ctx context.Context) { p.Close(ctx, false) })
}

// deadLetterAbandoned is how Close counts each message still in the
// in-links of stage i, which the host cut off (faulted, or abandoned by a
// Close whose ctx ended while its stage function ran), as dead. The
// reason is "stage faulted" after a fault, else "shutdown without drain".
func (p *Pipeline) deadLetterAbandoned(i int) func(p2pqueue.Header) {
	s := p.stages[i]
	reason, cause := ReasonShutdown, error(nil)
	if f := p.faulted.Load(); f != nil {
		reason, cause = ReasonStageFaulted, fmt.Errorf("%w: %s", ErrStageFaulted, f.Cause)
	} else if le := s.kernel.Status().LastError; le != nil {
		cause = fmt.Errorf("stage %q was cut off at Close: %s", s.spec.Name, le.Text)
	} else {
		cause = fmt.Errorf("stage %q was cut off at Close", s.spec.Name)
	}
	return func(h p2pqueue.Header) { // a zero h: one in device memory, without its id
		p.deadLetter(h.Origin, DeadLetter{ID: h.ID, Stage: s.spec.Name, Device: s.spec.Device, Reason: reason, Err: cause})
	}
}
