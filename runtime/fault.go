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

// watchdog checks the stages' heartbeats until Close. A stall of the
// whole process (a GC pause, a frozen VM, CPU starvation, SIGSTOP) stops
// every loop's heartbeat and the watchdog alike, and is not a hang of a
// stage: a stage's miss counts only over intervals in which the
// watchdog itself ran on time (a look more than twice its interval
// after the last one counts for nothing) and another stage of the
// pipeline went round its loop (when it has others that are running);
// it is faulted once such misses add up to HangAfter.
func (p *Pipeline) watchdog(ctx context.Context) {
	defer close(p.dogDone)
	limit := p.hangAfter()
	every := max(limit/4, time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	n := len(p.stages)
	beat := make([]time.Time, n)       // each stage's heartbeat at the last look
	missed := make([]time.Duration, n) // on-time watching since its heartbeat last moved
	st := make([]rk.Status, n)
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p.rt.stall.Pass()
		now := time.Now()
		onTime := now.Sub(last) <= 2*every
		elapsed := now.Sub(last)
		last = now
		running, moved := 0, 0
		for i, s := range p.stages {
			st[i] = s.kernel.Status()
			if st[i].State.Running() {
				running++
				if !st[i].Heartbeat.Equal(beat[i]) {
					moved++
				}
			}
		}
		for i, s := range p.stages {
			still := st[i].Heartbeat.Equal(beat[i])
			beat[i] = st[i].Heartbeat
			switch {
			case !still || st[i].State != rk.Active || st[i].Queued() == 0:
				missed[i] = 0
			case !onTime:
				// The watchdog was held up too: the process stalled.
			case running > 1 && moved == 0:
				// No loop of the pipeline went round: the process
				// stalled (or every stage hung at once).
			default:
				missed[i] += elapsed
			}
			if missed[i] > limit {
				p.fault(s, fmt.Sprintf("no heartbeat for %v (watched on time) with %d messages queued (HangAfter %v): its stage function has not returned",
					missed[i].Round(time.Millisecond), st[i].Queued(), limit))
				return
			}
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
