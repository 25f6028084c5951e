package runtime

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"
)

// Flow is what *Pipeline, a stage group's Flow and *cluster.Pipeline
// share, each method meaning what Pipeline's does. Runtime.Build returns
// a flow not started, cluster's Node.Build and group.New one started;
// Start is idempotent, so code written against Flow calls Start.
type Flow interface {
	Start(ctx context.Context) error
	Send(ctx context.Context, d Data) error
	SendBatch(ctx context.Context, ds []Data) (int, error)
	Request(ctx context.Context, d Data) (Result, error)
	Idle(ctx context.Context) error
	PID(stage string) (*actor.PID, error) // the stage's actor, where it is in this process
	Stats() PipelineStats
	Latency() []StageLatency
	Close(ctx context.Context, drain bool) error
}

var _ Flow = (*Pipeline)(nil)
