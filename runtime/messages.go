package runtime

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// Data is a data message: a float32 vector, or a value of a registered
// type (RegisterType), for a stage. Sent to a stage's PID it goes straight
// into the stage's device mailbox (its ingress link), never through the
// actor's Receive; so does a bare value of a registered type sent there.
type Data struct {
	// ID identifies the message in results, dead letters and traces; 0 lets
	// the pipeline assign the next one (SendID and SendBatchIDs report
	// it). Auto ids increase and keep clear of every explicit id the
	// pipeline has seen (an explicit id moves the counter up to it).
	// Explicit ids are the caller's: a duplicate one is accepted and
	// travels as given (its results, dead letters and traces then share
	// the id), except that Request refuses an id already in flight as a
	// request.
	ID     uint64
	Floats []float32
	// Value, instead of Floats, is a message of a registered type (a T or
	// *T): it travels as the type's id and bytes. A value of a type that
	// is not registered, or not the one the stage takes, is dead-lettered
	// ("unregistered type", "wrong type").
	Value any
	// Sampled forces a trace of this message (the pipeline samples others
	// by its ratio).
	Sampled bool
	// Parent, when valid, is the parent span of the message's trace
	// (trace.SpanContextFromContext(ctx) gives the caller's).
	Parent trace.SpanContext
	// Deprecated: set Parent; Context is read only when Parent is not
	// valid. It is removed in the next release.
	Context context.Context
}

// Result is a message that left the pipeline: through its last stage, or
// in a graph through any stage whose results leave (an exit), named by
// Stage.
type Result struct {
	ID uint64
	// Type is the result's type id: kernels.TypeFloats for a float32
	// vector (in Floats), else a registered type's, whose bytes are in
	// Bytes (decode them with As or Value).
	// Floats and Bytes are the result's own (but a Sink.Batch's): never
	// reused, they may be kept (holding its egress batch's memory).
	Type   uint32
	Floats []float32
	Bytes  []byte
	Stage  string
}

// Control messages, handled by the stage actor's Receive, each within
// 10 s. Sent with RequestFuture, each is answered once the kernel has
// acknowledged it, with the stage's StageStats then (State Active, Idle,
// Terminated), or with an error: one wrapping ringkernel.ErrTransition
// when the stage's state does not take it (Activate of an Active stage,
// Deactivate of one not Active, anything to a stopped one), the fault
// of a faulted stage, or the timeout's. Sent with Send, none is answered.
type (
	// Activate lets the stage's kernel take messages (Launched or Idle).
	Activate struct{}
	// Deactivate leaves messages queued in the stage's mailbox (Active).
	Deactivate struct{}
	// Stop ends the stage's kernel and those of the stages feeding it,
	// draining first when Drain is set; it is answered once all ended.
	Stop struct{ Drain bool }
	// Stats asks for the stage's status.
	Stats struct{}
)

// StageStats answers control messages.
type StageStats struct {
	Stage  string
	Device int
	// Node is the cluster node the stage runs on: "" for this process (a
	// cluster pipeline's Stats names the others).
	Node string
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
