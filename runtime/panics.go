package runtime

import (
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/fanout"
)

// ErrStagePanic: a stage function, or the pipeline's Sink.Func, panicked
// on the message. Its dead letter ("stage panic") has an error that wraps
// ErrStagePanic (and the panic value, when that is an error) and holds the
// value and the panicking goroutine's stack. It is ringkernel.ErrStagePanic.
var ErrStagePanic = rk.ErrStagePanic

// CallbackPanicked is published on the runtime's actor system's event
// stream (Runtime.System().EventStream) when a pipeline's OnDeadLetter or
// OnFault panicked. The runtime recovers such a panic, so the goroutine
// that called the callback (a stage's record pump, a sender, the
// watchdog) goes on: the dead letter is still counted and still goes to
// DeadLetterChan and DeadLetterPID; the fault's teardown still runs.
// Nothing is printed: subscribe to see them.
type CallbackPanicked struct {
	Pipeline string
	// Callback is "OnDeadLetter" or "OnFault".
	Callback string
	// ID is the message id of the dead letter OnDeadLetter was given.
	ID    uint64
	Value any
	Stack []byte
}

// callback calls a user callback of pipeline name (OnDeadLetter, OnFault)
// in the runtime's own goroutine, recovering a panic: the caller goes on,
// and the panic is published as a CallbackPanicked.
func (rt *Runtime) callback(pipeline, which string, id uint64, f func()) {
	if v, stack, ok := fanout.Call(f); ok {
		rt.callbackPanicked(pipeline, which, id, v, stack)
	}
}

// callbackPanicked publishes a callback's recovered panic.
func (rt *Runtime) callbackPanicked(pipeline, which string, id uint64, v any, stack []byte) {
	rt.system.EventStream.Publish(CallbackPanicked{Pipeline: pipeline, Callback: which, ID: id, Value: v, Stack: stack})
}
