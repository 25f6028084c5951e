package cuda

import (
	"errors"
	"fmt"
	"sync"
)

// Graph is a CUDA graph captured from a stream (CUgraph): the work issued
// to the stream between BeginCapture and EndCapture, recorded and not run.
// Instantiate makes it runnable. A Graph may be destroyed once
// instantiated; its GraphExecs do not need it.
type Graph struct {
	ctx    *Context
	handle uintptr // CUgraph

	mu        sync.RWMutex
	destroyed bool
}

// GraphExec is an instantiated graph (CUgraphExec): launched as one unit,
// as many times as wanted, with the parameters it was captured with. Host
// memory a captured copy reads or writes is read or written again at each
// launch, so the copies see what the host has put there since.
type GraphExec struct {
	ctx    *Context
	handle uintptr // CUgraphExec

	mu        sync.RWMutex
	destroyed bool
}

var (
	errNilGraph     = errors.New("cuda: nil *Graph (use Stream.EndCapture)")
	errNilGraphExec = errors.New("cuda: nil *GraphExec (use Graph.Instantiate)")
)

// graphSupport fails with an error wrapping ErrUnsupported when the driver
// lacks an entry point graphs need.
func (c *Context) graphSupport(call string) error {
	if missing := c.driver().missingGraph(); missing != "" {
		return fmt.Errorf("cuda: %s: the driver (CUDA %d.%d) lacks %s; CUDA graphs need driver 11.0 or newer: %w",
			call, c.driver().Version()/1000, c.driver().Version()%1000/10, missing, ErrUnsupported)
	}
	return nil
}

// BeginCapture starts capturing s (cuStreamBeginCapture_v2): the copies,
// launches and graph launches issued to s from now until EndCapture are
// recorded into a graph instead of run. The stream must not be
// synchronized or queried meanwhile; doing so invalidates the capture
// (EndCapture then fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).
//
// The capture mode is CU_STREAM_CAPTURE_MODE_RELAXED: a goroutine moves
// between OS threads, so EndCapture may come from another thread than
// BeginCapture, which only the relaxed mode allows; and other goroutines
// may go on using the driver (allocating, synchronizing other streams)
// while the capture lasts. The price is that the driver does not check
// that none of them touches the captured stream's work.
func (s *Stream) BeginCapture() error {
	if s == nil {
		return errNilStream
	}
	if err := s.ctx.graphSupport("cuStreamBeginCapture_v2"); err != nil {
		return err
	}
	return s.use("cuStreamBeginCapture_v2", func() Result {
		return s.ctx.driver().streamBeginCapture(s.handle, captureModeRelaxed)
	})
}

// EndCapture ends the capture BeginCapture started and returns the graph
// (cuStreamEndCapture). The stream runs its work again from here on.
func (s *Stream) EndCapture() (*Graph, error) {
	if s == nil {
		return nil, errNilStream
	}
	if err := s.ctx.graphSupport("cuStreamEndCapture"); err != nil {
		return nil, err
	}
	var h uintptr
	err := s.use("cuStreamEndCapture", func() (r Result) {
		h, r = s.ctx.driver().streamEndCapture(s.handle)
		return r
	})
	if err != nil {
		return nil, err
	}
	if h == 0 {
		return nil, fmt.Errorf("cuda: cuStreamEndCapture: the driver returned no graph (the capture was invalidated)")
	}
	return &Graph{ctx: s.ctx, handle: h}, nil
}

// Instantiate makes the graph runnable (cuGraphInstantiateWithFlags with
// no flags, or cuGraphInstantiate_v2 on a driver older than 11.4).
func (g *Graph) Instantiate() (*GraphExec, error) {
	if g == nil {
		return nil, errNilGraph
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.destroyed {
		return nil, fmt.Errorf("cuda: Instantiate: graph was destroyed: %w", ErrReleased)
	}
	var h uintptr
	var call, log string
	var r Result
	err := g.ctx.do("cuGraphInstantiate", func() Result {
		h, call, log, r = g.ctx.driver().graphInstantiate(g.handle)
		return ResultSuccess // named below, with the entry point that was used
	})
	if err != nil {
		return nil, err
	}
	if err := g.ctx.driver().err(call, r); err != nil {
		if e, ok := err.(*Error); ok {
			e.Log = log
		}
		return nil, err
	}
	return &GraphExec{ctx: g.ctx, handle: h}, nil
}

// Destroy destroys the graph (cuGraphDestroy). GraphExecs instantiated
// from it stay valid. Destroying twice is an error wrapping ErrReleased.
func (g *Graph) Destroy() error {
	if g == nil {
		return errNilGraph
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.destroyed {
		return fmt.Errorf("cuda: Destroy: graph was destroyed already: %w", ErrReleased)
	}
	if err := g.ctx.do("cuGraphDestroy", func() Result { return g.ctx.driver().graphDestroy(g.handle) }); err != nil {
		return err
	}
	g.destroyed = true
	return nil
}

// Launch queues one run of the graph in stream s (nil: the default
// stream) and returns (cuGraphLaunch); s.Synchronize waits for it.
func (e *GraphExec) Launch(s *Stream) error {
	if e == nil {
		return errNilGraphExec
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.destroyed {
		return fmt.Errorf("cuda: cuGraphLaunch: graph exec was destroyed: %w", ErrReleased)
	}
	defer s.rlock()()
	sh, err := e.ctx.streamHandle(s)
	if err != nil {
		return fmt.Errorf("cuda: cuGraphLaunch: %w", err)
	}
	return e.ctx.do("cuGraphLaunch", func() Result { return e.ctx.driver().graphLaunch(e.handle, sh) })
}

// Destroy destroys the executable graph (cuGraphExecDestroy); runs
// already queued still complete. Destroying twice is an error wrapping
// ErrReleased.
func (e *GraphExec) Destroy() error {
	if e == nil {
		return errNilGraphExec
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.destroyed {
		return fmt.Errorf("cuda: Destroy: graph exec was destroyed already: %w", ErrReleased)
	}
	if err := e.ctx.do("cuGraphExecDestroy", func() Result { return e.ctx.driver().graphExecDestroy(e.handle) }); err != nil {
		return err
	}
	e.destroyed = true
	return nil
}
