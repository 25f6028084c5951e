package runtime

import (
	"fmt"
	"runtime/debug"

	rk "github.com/ringactor/ringactor/ringkernel"
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

// handOver gives r to the pipeline's sink (deliver). A Func that panics
// is recovered, so the egress pump goes on, and r is dead-lettered
// "stage panic"; a Chan that never took r gives "sink not read".
func (p *Pipeline) handOver(r Result) (Reason, error) {
	if f := p.spec.Deliver.Func; f != nil {
		if err := callSinkFunc(f, r); err != nil {
			return ReasonStagePanic, fmt.Errorf("pipeline %q: %w", p.spec.Name, err)
		}
		return 0, nil
	}
	if !p.deliver(r) {
		return ReasonSinkNotRead, fmt.Errorf("%w: pipeline %q closed with the result unread in its Deliver channel; read the channel until Close returns, or raise Sink.CloseWait", ErrSinkNotRead, p.spec.Name)
	}
	return 0, nil
}

// callSinkFunc calls f(r) and returns its panic, if any, as an error.
func callSinkFunc(f func(Result), r Result) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError("Sink.Func", r.ID, v, debug.Stack())
		}
	}()
	f(r)
	return nil
}

// panicError is the error of a panic with value v in what, on message
// id: it wraps ErrStagePanic (and v, when v is an error) and ends with
// the stack.
func panicError(what string, id uint64, v any, stack []byte) error {
	if err, ok := v.(error); ok {
		return fmt.Errorf("%w: %s, message %d: %w\n\n%s", ErrStagePanic, what, id, err, stack)
	}
	return fmt.Errorf("%w: %s, message %d: %v\n\n%s", ErrStagePanic, what, id, v, stack)
}

// callback calls a user callback of pipeline name (OnDeadLetter, OnFault)
// in the runtime's own goroutine, recovering a panic: the caller goes on,
// and the panic is published as a CallbackPanicked.
func (rt *Runtime) callback(pipeline, which string, id uint64, f func()) {
	defer func() {
		if v := recover(); v != nil {
			rt.system.EventStream.Publish(CallbackPanicked{Pipeline: pipeline, Callback: which, ID: id, Value: v, Stack: debug.Stack()})
		}
	}()
	f()
}
