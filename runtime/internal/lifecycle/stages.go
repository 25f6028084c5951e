package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/graph"
)

// Kernel is what an ending asks of a stage's ring kernel; a
// *ringkernel.Kernel has it.
type Kernel interface {
	Status() rk.Status
	Activate(ctx context.Context) error
	Terminate(ctx context.Context, drain bool) error
	Done() <-chan struct{}
	Abandoned() bool
	Fault(cause string)
}

// Stage is one stage as its ending sees it.
type Stage struct {
	Name   string
	Kernel Kernel
	// Held are the in-links whose messages are the host's to count when
	// the stage is cut off: its ingress, the links from the stages
	// feeding it, and a stage group's steal links, in that order.
	Held []*p2pqueue.Link
	// Exit: its results leave to the host. Cut off, it holds that egress
	// link open, and the egress pump must be stopped.
	Exit bool
}

// Stages is a pipeline's stages, in stage order, and how to stop their
// senders.
type Stages struct {
	List []Stage
	// Next is the graph: stage i's results go to stages Next[i].
	Next [][]int
	// Refuse makes stage i refuse messages: senders waiting for room give
	// up. stop: a Stop ends it (what it refuses from then on is "stage
	// stopped"). Seal closes its ingress, after any send in progress.
	Refuse func(i int, stop bool)
	Seal   func(i int)
	// Faulted reports whether a stage of the pipeline has faulted: a
	// Stop does not drain then.
	Faulted func() bool
}

// shut makes the stages in order refuse messages, all of them first,
// and then seals their ingresses.
func (ss *Stages) shut(order []int, stop bool) {
	for _, i := range order {
		ss.Refuse(i, stop)
	}
	for _, i := range order {
		ss.Seal(i)
	}
}

// Stop ends stage i for a Stop sent to it, and with it every stage
// upstream of it (graph.Upstream): their results could only go into a
// stage that reads nothing, so they stop too, and nothing is left in a
// link no stage reads. They end in graph order, each before the stages
// it feeds. With drain each first finishes what it holds (unless a stage
// has faulted, idle ones are activated for it); without, each
// dead-letters it.
func (ss *Stages) Stop(ctx context.Context, i int, drain bool) error {
	order := graph.Upstream(ss.Next, i)
	ss.shut(order, true)
	var errs []error
	if drain && !ss.Faulted() {
		errs = append(errs, ss.activateToDrain(ctx, order)...)
	}
	for _, j := range order {
		if err := terminate(ctx, ss.List[j].Kernel, drain); err != nil {
			errs = append(errs, fmt.Errorf("ringactor: stopping stage %q: %w", ss.List[j].Name, err))
		}
	}
	return errors.Join(errs...)
}

// Close ends every stage, in stage order, once all have stopped taking
// messages. With drain, and no stage faulted (faulted names the stage
// that did, "" for none), idle stages are activated and each finishes
// what it holds; a stage cut off (the faulted one, or one abandoned: it
// did not stop within ctx, its stage function has not returned) ends the
// drain, since it will never close its out-links. What a cut-off stage
// held is counted dead: cut(i) is called once for stage i, and what it
// returns once for each message in its Held links (a zero Header for a
// message in device memory, whose id the host cannot read). It reports
// whether a cut-off stage was an exit (the egress pump must be stopped),
// and the errors met.
func (ss *Stages) Close(ctx context.Context, drain bool, faulted string, cut func(i int) func(p2pqueue.Header)) (cutExit bool, errs []error) {
	all := make([]int, len(ss.List))
	for i := range all {
		all[i] = i
	}
	ss.shut(all, false)
	drain = drain && faulted == ""
	if drain {
		errs = append(errs, ss.activateToDrain(ctx, all)...)
	}
	for i, s := range ss.List {
		if err := s.Kernel.Terminate(ctx, drain); err != nil {
			errs = append(errs, err)
		}
		if s.Name == faulted || s.Kernel.Abandoned() {
			// The stages before it have ended: what it holds is ours to count.
			if err := countHeld(s.Held, cut(i)); err != nil {
				errs = append(errs, err)
			}
			cutExit = cutExit || s.Exit
			drain = false
		}
	}
	return cutExit, errs
}

// Fault cuts stage i off: every stage refuses messages, and i's kernel
// is declared faulted with cause (its loop abandoned). The runtime then
// tells who must know and tears the pipeline down (Teardown).
func (ss *Stages) Fault(i int, cause string) {
	for j := range ss.List {
		ss.Refuse(j, false)
	}
	ss.List[i].Kernel.Fault(cause)
}
