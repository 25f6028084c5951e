package runtime

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"
)

// Flow is what the three kinds of pipeline share: a *Pipeline, a stage
// group (runtime/group: Group.Flow) and a pipeline across nodes
// (*cluster.Pipeline). Each method means what Pipeline's does. Build
// returns a flow that is not started (Runtime.Build) or started
// (cluster's Node.Build, group.New); Start is idempotent, so code written
// against Flow calls Start. Every method that can wait takes a ctx.
type Flow interface {
	Start(ctx context.Context) error
	Send(ctx context.Context, d Data) error
	SendBatch(ctx context.Context, ds []Data) (int, error)
	Request(ctx context.Context, d Data) (Result, error)
	// Idle waits until no message sent so far is in flight.
	Idle(ctx context.Context) error
	// PID is the actor that takes the named stage's data, where there is
	// one in this process.
	PID(stage string) (*actor.PID, error)
	Stats() PipelineStats
	Latency() []StageLatency
	Close(ctx context.Context, drain bool) error
}

var _ Flow = (*Pipeline)(nil)
