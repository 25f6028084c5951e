package cuda

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Stream is a queue of device work in one context. Streams from NewStream
// do not synchronize with the default stream (CU_STREAM_NON_BLOCKING), so
// a persistent kernel on one does not block work on others.
type Stream struct {
	ctx    *Context
	handle uintptr // CUstream

	mu        sync.RWMutex
	destroyed bool
}

// Event marks a point in a stream; two recorded events time the work
// between them.
type Event struct {
	ctx    *Context
	handle uintptr // CUevent

	mu        sync.RWMutex
	destroyed bool
}

var (
	errNilStream = errors.New("cuda: nil *Stream (use Context.NewStream; a nil stream argument means the default stream)")
	errNilEvent  = errors.New("cuda: nil *Event (use Context.NewEvent)")
)

// NewStream creates a non-blocking stream.
func (c *Context) NewStream() (*Stream, error) {
	if c == nil {
		return nil, errNilContext
	}
	var h uintptr
	err := c.do("cuStreamCreate", func() (r Result) {
		h, r = c.driver().streamCreate(streamNonBlocking)
		return r
	})
	if err != nil {
		return nil, err
	}
	return &Stream{ctx: c, handle: h}, nil
}

// use runs f with the stream known to be live and its context current.
func (s *Stream) use(call string, f func() Result) error {
	if s == nil {
		return errNilStream
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.destroyed {
		return fmt.Errorf("cuda: %s: stream was destroyed: %w", call, ErrReleased)
	}
	return s.ctx.do(call, f)
}

// Query reports whether all work in the stream is done, without waiting.
func (s *Stream) Query() (done bool, err error) {
	var r Result
	err = s.use("cuStreamQuery", func() Result {
		r = s.ctx.driver().streamQuery(s.handle)
		if r == ResultNotReady {
			return ResultSuccess
		}
		return r
	})
	if err != nil {
		return false, err
	}
	return r == ResultSuccess, nil
}

// Synchronize waits until all work in the stream is done.
func (s *Stream) Synchronize() error {
	return s.use("cuStreamSynchronize", func() Result { return s.ctx.driver().streamSynchronize(s.handle) })
}

// Destroy destroys the stream (work already in it still completes).
// Destroying twice is an error wrapping ErrReleased.
func (s *Stream) Destroy() error {
	if s == nil {
		return errNilStream
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed {
		return fmt.Errorf("cuda: Destroy: stream was destroyed already: %w", ErrReleased)
	}
	if err := s.ctx.do("cuStreamDestroy_v2", func() Result { return s.ctx.driver().streamDestroy(s.handle) }); err != nil {
		return err
	}
	s.destroyed = true
	return nil
}

// streamHandle is the CUstream for s in c, 0 (the default stream) for nil.
// The caller holds s's read lock through the use of the handle.
func (c *Context) streamHandle(s *Stream) (uintptr, error) {
	if s == nil {
		return 0, nil
	}
	if s.destroyed {
		return 0, fmt.Errorf("cuda: stream was destroyed: %w", ErrReleased)
	}
	if err := c.sameContext("the stream", s.ctx); err != nil {
		return 0, err
	}
	return s.handle, nil
}

// rlock read-locks s, if any, for the length of a call that uses it.
func (s *Stream) rlock() func() {
	if s == nil {
		return func() {}
	}
	s.mu.RLock()
	return s.mu.RUnlock
}

// NewEvent creates an event that records timing.
func (c *Context) NewEvent() (*Event, error) {
	if c == nil {
		return nil, errNilContext
	}
	var h uintptr
	err := c.do("cuEventCreate", func() (r Result) {
		h, r = c.driver().eventCreate(eventDefault)
		return r
	})
	if err != nil {
		return nil, err
	}
	return &Event{ctx: c, handle: h}, nil
}

// use runs f with the event known to be live and its context current.
func (e *Event) use(call string, f func() Result) error {
	if e == nil {
		return errNilEvent
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.destroyed {
		return fmt.Errorf("cuda: %s: event was destroyed: %w", call, ErrReleased)
	}
	return e.ctx.do(call, f)
}

// Record records the event in stream s (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	if e == nil {
		return errNilEvent
	}
	defer s.rlock()()
	sh, err := e.ctx.streamHandle(s)
	if err != nil {
		return fmt.Errorf("cuda: cuEventRecord: %w", err)
	}
	return e.use("cuEventRecord", func() Result { return e.ctx.driver().eventRecord(e.handle, sh) })
}

// Synchronize waits until the event has happened.
func (e *Event) Synchronize() error {
	return e.use("cuEventSynchronize", func() Result { return e.ctx.driver().eventSynchronize(e.handle) })
}

// Elapsed is the time from since to e, both recorded and done
// (cuEventElapsedTime, about half a microsecond of resolution).
func (e *Event) Elapsed(since *Event) (time.Duration, error) {
	if e == nil || since == nil {
		return 0, errNilEvent
	}
	// since is checked, not held: holding two events' locks could deadlock
	// two Elapsed calls in opposite order; a since destroyed meanwhile is
	// an invalid handle to the driver, an error and not a fault.
	since.mu.RLock()
	start, gone := since.handle, since.destroyed
	since.mu.RUnlock()
	if gone {
		return 0, fmt.Errorf("cuda: cuEventElapsedTime: the start event was destroyed: %w", ErrReleased)
	}
	if err := e.ctx.sameContext("the start event", since.ctx); err != nil {
		return 0, err
	}
	var ms float32
	err := e.use("cuEventElapsedTime", func() (r Result) {
		ms, r = e.ctx.driver().eventElapsed(start, e.handle)
		return r
	})
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Destroy destroys the event. Destroying twice is an error wrapping
// ErrReleased.
func (e *Event) Destroy() error {
	if e == nil {
		return errNilEvent
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.destroyed {
		return fmt.Errorf("cuda: Destroy: event was destroyed already: %w", ErrReleased)
	}
	if err := e.ctx.do("cuEventDestroy_v2", func() Result { return e.ctx.driver().eventDestroy(e.handle) }); err != nil {
		return err
	}
	e.destroyed = true
	return nil
}
