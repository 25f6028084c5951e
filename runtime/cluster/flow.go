package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/account"
	"github.com/ringactor/ringactor/runtime/internal/flowreq"
	"github.com/ringactor/ringactor/runtime/internal/lifecycle"
)

// A cluster Pipeline is a runtime.Flow.
var _ ra.Flow = (*Pipeline)(nil)

// ClusterPipeline is the old name of Pipeline.
//
// Deprecated: use Pipeline. It is removed in the next release.
type ClusterPipeline = Pipeline

// ClusterOptions is the old name of Options.
//
// Deprecated: use Options. It is removed in the next release.
type ClusterOptions = Options

// ErrRemoteStage: a stage that runs on another node, whose actor is not
// in this process (Pipeline.PID).
var ErrRemoteStage = errors.New("ringactor: stage on another node")

// Start does nothing on a pipeline Node.Build has started: it is there so
// that code written against runtime.Flow calls Start on any flow. It
// refuses a nil or ended ctx, and a closed pipeline (ErrClosed).
func (cp *Pipeline) Start(ctx context.Context) error {
	if err := ctxcheck.Live(ctx, "cluster.Pipeline.Start"); err != nil {
		return err
	}
	if cp.closed.Load() {
		return fmt.Errorf("%w: cluster pipeline %q cannot start again; build a new one", ra.ErrClosed, cp.spec.Name)
	}
	return nil
}

// PID is the actor of the named stage when it runs on this node (in a
// segment here: data sent to it enters the pipeline there, and is
// counted by that segment, not by the origin's account). A stage on
// another node has its actor there, in a segment this process cannot
// address: PID returns an error wrapping ErrRemoteStage (send through
// Send or Request instead).
func (cp *Pipeline) PID(stage string) (*actor.PID, error) {
	s, ok := cp.byStage[stage]
	switch {
	case !ok:
		names := make([]string, 0, len(cp.spec.Stages))
		for _, st := range cp.spec.Stages {
			names = append(names, st.Name)
		}
		return nil, fmt.Errorf("ringactor: cluster pipeline %q has no stage %q; stages: %s", cp.spec.Name, stage, strings.Join(names, ", "))
	case s.local == nil:
		return nil, fmt.Errorf("%w: stage %q of pipeline %q runs on node %q; send through the pipeline (Send, Request)", ErrRemoteStage, stage, cp.spec.Name, s.node)
	}
	return s.local.PID(stage)
}

// Idle waits until every message sent so far has ended at the origin,
// delivered or dead-lettered (Stats().InFlight is 0, counting messages on
// other nodes), or until ctx ends, and returns ctx's error then. A nil
// ctx is refused.
func (cp *Pipeline) Idle(ctx context.Context) error {
	if err := ctxcheck.NotNil(ctx, "cluster.Pipeline.Idle"); err != nil {
		return err
	}
	return lifecycle.IdleAccount(ctx, fmt.Sprintf("cluster pipeline %q", cp.spec.Name), func() account.Totals { return cp.acct.Read(nil) })
}

// Request sends d into the pipeline and returns its result, wherever the
// last stage runs, as runtime.Pipeline.Request does: a
// *runtime.RequestError (matching ErrDeadLettered) when the message was
// dead-lettered on any node (remote unreachable included), ctx's error
// when ctx ends first (the message still ends in the account, its
// outcome counted as Abandoned and dropped). d.ID 0 takes the next id;
// an id already in flight as a request is refused. A refusal before
// anything was sent wraps ErrNotSent.
func (cp *Pipeline) Request(ctx context.Context, d ra.Data) (ra.Result, error) {
	if err := ctxcheck.LiveSend(ctx, "cluster.Pipeline.Request"); err != nil {
		return ra.Result{}, err
	}
	return flowreq.Request(ctx, fmt.Sprintf("cluster pipeline %q", cp.spec.Name), &cp.acct, &cp.reqs, d, func(d ra.Data) error { return cp.Send(ctx, d) })
}

// answer hands a request's outcome to its waiter (an abandoned one's is
// counted and dropped); false when id is no request.
func (cp *Pipeline) answer(id uint64, o outcome) bool {
	return flowreq.Answer(&cp.acct, &cp.reqs, id, o)
}

// outcome is how a request's message ended: a result, or a dead letter.
type outcome = flowreq.Outcome
