package runtime

import (
	"context"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// Data is a data message: a float32 vector for a stage. Sent to a stage's
// PID it goes straight into the stage's device mailbox (its ingress link),
// never through the actor's Receive.
type Data struct {
	// ID identifies the message in results, dead letters and traces; 0 lets
	// the pipeline assign the next one.
	ID     uint64
	Floats []float32
	// Sampled forces a trace of this message (the pipeline samples others
	// by its ratio).
	Sampled bool
	// Context, when it carries a span, is the parent of the message's trace.
	Context context.Context
}

// Result is a message that left the pipeline: through its last stage, or
// in a graph through any stage whose results leave (an exit), named by
// Stage.
type Result struct {
	ID     uint64
	Floats []float32
	Stage  string
}

// Control messages, handled by the stage actor's Receive. Each is answered
// (to RequestFuture) with the stage's StageStats or an error.
type (
	// Activate lets the stage's kernel take messages.
	Activate struct{}
	// Deactivate leaves messages queued in the stage's mailbox.
	Deactivate struct{}
	// Stop ends the stage's kernel, draining first when Drain is set.
	Stop struct{ Drain bool }
	// Stats asks for the stage's status.
	Stats struct{}
)

// StageStats answers control messages.
type StageStats struct {
	Stage  string
	Device int
	rk.Status
}

// Steal asks a group instance's kernel to forward up to N queued messages
// to its thief number To (the instances in order, itself left out); the
// coordinator sends it to the instance's PID (group.Group's InstancePID), and so
// may anyone. The answer is Stolen.
type Steal struct{ N, To int }

// Stolen answers Steal: how many messages moved.
type Stolen struct {
	Moved int
	Err   error
}
