package group

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/account"
	"github.com/ringactor/ringactor/runtime/internal/flowreq"
	"github.com/ringactor/ringactor/runtime/internal/lifecycle"
)

// Flow is the group as a runtime.Flow, for code written against the
// three kinds of pipeline: its methods are the group's, except PID,
// which takes the stage's name (the group's stage, whose PID is the
// group's actor), and Stats, which is the group's account as a
// runtime.PipelineStats with each instance's stage status in device
// order (Group.Stats keeps the group's own view: policy, steals,
// imbalance).
func (g *Group) Flow() ra.Flow { return flow{g} }

// flow is a Group with Flow's PID and Stats.
type flow struct{ *Group }

var _ ra.Flow = flow{}

func (f flow) PID(stage string) (*actor.PID, error) {
	if stage != f.spec.Stage.Name {
		return nil, fmt.Errorf("ringactor: group %q runs stage %q, no stage %q", f.spec.Name, f.spec.Stage.Name, stage)
	}
	return f.pid, nil
}

func (f flow) Stats() ra.PipelineStats {
	t := f.acct.Read(nil)
	st := ra.PipelineStats{Sent: t.Sent, Delivered: t.Delivered, DeadLettered: t.DeadLettered, InFlight: t.InFlight, Abandoned: t.Abandoned}
	for _, in := range f.insts {
		st.Stages = append(st.Stages, in.p.Stats().Stages...)
	}
	return st
}

// Start does nothing on a group New has started: it is there so that
// code written against runtime.Flow calls Start on any flow. It refuses
// a nil or ended ctx, and a closed group (ErrClosed).
func (g *Group) Start(ctx context.Context) error {
	if err := ctxcheck.Live(ctx, "Group.Start"); err != nil {
		return err
	}
	if g.closed.Load() {
		return fmt.Errorf("%w: group %q cannot start again; make a new one", ra.ErrClosed, g.spec.Name)
	}
	return nil
}

// Latency summarises each instance's sampled queue waits and service
// times, in device order.
func (g *Group) Latency() []ra.StageLatency {
	var out []ra.StageLatency
	for _, in := range g.insts {
		out = append(out, in.p.Latency()...)
	}
	return out
}

// Idle waits until every message sent to the group so far has ended,
// delivered or dead-lettered (Stats().InFlight is 0), or until ctx ends,
// and returns ctx's error then. A nil ctx is refused.
func (g *Group) Idle(ctx context.Context) error {
	if err := ctxcheck.NotNil(ctx, "Group.Idle"); err != nil {
		return err
	}
	return lifecycle.IdleAccount(ctx, fmt.Sprintf("group %q", g.spec.Name), func() account.Totals { return g.acct.Read(nil) })
}

// Request sends d into the group (to the instance its policy picks) and
// returns its result, as runtime.Pipeline.Request does: a
// *runtime.RequestError (matching ErrDeadLettered) when the message was
// dead-lettered, ctx's error when ctx ends first (the message still ends
// in the account, its outcome counted as Abandoned and dropped). d.ID 0
// takes the next id; an id already in flight as a request is refused. A
// refusal before anything was sent wraps ErrNotSent.
func (g *Group) Request(ctx context.Context, d ra.Data) (ra.Result, error) {
	if err := ctxcheck.LiveSend(ctx, "Group.Request"); err != nil {
		return ra.Result{}, err
	}
	return flowreq.Request(ctx, fmt.Sprintf("group %q", g.spec.Name), &g.acct, &g.reqs, d, func(d ra.Data) error { return g.Send(ctx, d) })
}

// answer hands a request's outcome to its waiter (an abandoned one's is
// counted and dropped); false when id is no request.
func (g *Group) answer(id uint64, o outcome) bool { return flowreq.Answer(&g.acct, &g.reqs, id, o) }

// outcome is how a request's message ended: a result, or a dead letter.
type outcome = flowreq.Outcome
