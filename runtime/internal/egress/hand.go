package egress

import (
	"fmt"
	"time"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// notRead is the error of a result a Chan sink never took.
func (p *Pump[R]) notRead() error {
	return fmt.Errorf("%w: pipeline %q closed with the result unread in its Deliver channel; read the channel until Close returns, or raise Sink.CloseWait", p.ErrNotRead, p.Name)
}

// panicError is the error of a panic with value v in what, on message
// id: it wraps ringkernel.ErrStagePanic (and v, when v is an error) and
// ends with the stack.
func panicError(what string, id uint64, v any, stack []byte) error {
	if err, ok := v.(error); ok {
		return fmt.Errorf("%w: %s, message %d: %w\n\n%s", rk.ErrStagePanic, what, id, err, stack)
	}
	return fmt.Errorf("%w: %s, message %d: %v\n\n%s", rk.ErrStagePanic, what, id, v, stack)
}

// deliver hands r to a sink other than a Func and reports whether it
// took it. Only a Chan can refuse: while the pipeline runs the pump
// waits for the reader (backpressure); once Close has begun, for
// CloseWait at most, and after one such wait the channel is taken as
// unread (by every exit's pump).
func (p *Pump[R]) deliver(r R) bool {
	ch := p.Sink.Chan
	if ch == nil {
		p.Sink.To(p.Ctx, r, p.Send)
		return true
	}
	if p.gone.Load() {
		return false
	}
	select {
	case ch <- r:
		return true
	default:
	}
	select {
	case ch <- r:
		return true
	case <-p.Ctx.Done():
	case <-p.Closing:
		t := time.NewTimer(p.Sink.closeWait())
		defer t.Stop()
		select {
		case ch <- r:
			return true
		case <-p.Ctx.Done():
		case <-t.C:
		}
	}
	p.gone.Store(true)
	return false
}
