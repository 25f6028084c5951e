package fanout

import (
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"
)

// Fanout is a pipeline's dead-letter subscribers; any may be nil.
type Fanout[D any] struct {
	// Name is the pipeline's.
	Name string
	On   func(D)
	Chan chan<- D
	PID  *actor.PID
}

// Tell hands d to every subscriber f names, in order: On, whose panic is
// recovered and handed to panicked with its value and stack (d still
// goes to the others); Chan, which holds the caller up while it is full;
// PID, through send (the actor system's).
func (f *Fanout[D]) Tell(d D, send func(pid *actor.PID, msg any), panicked func(v any, stack []byte)) {
	if f.On != nil {
		if v, stack, ok := Call(func() { f.On(d) }); ok {
			panicked(v, stack)
		}
	}
	if f.Chan != nil {
		f.Chan <- d
	}
	if f.PID != nil {
		send(f.PID, d)
	}
}

// Call calls f, a user's callback, recovering a panic: ok reports one,
// with its value and the panicking goroutine's stack.
func Call(f func()) (v any, stack []byte, ok bool) {
	defer func() {
		if v = recover(); v != nil {
			stack, ok = debug.Stack(), true
		}
	}()
	f()
	return nil, nil, false
}
