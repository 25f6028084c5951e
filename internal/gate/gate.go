// Package gate holds goroutines at a point while it is closed: the
// tests' model of a stall of the whole process (a GC pause, a frozen VM,
// SIGSTOP), used by the sim backend's loops and the runtime's watchdogs
// and pumps. An open gate costs one atomic load to pass.
package gate

import (
	"sync"
	"sync/atomic"
)

// Gate is open in its zero value.
type Gate struct{ ch atomic.Pointer[chan struct{}] }

// Close closes the gate until open is called (once; later calls do
// nothing).
func (g *Gate) Close() (open func()) {
	ch := make(chan struct{})
	g.ch.Store(&ch)
	var once sync.Once
	return func() {
		once.Do(func() {
			g.ch.CompareAndSwap(&ch, nil)
			close(ch)
		})
	}
}

// Pass waits while the gate is closed. A nil Gate is always open.
func (g *Gate) Pass() {
	if g == nil {
		return
	}
	if ch := g.ch.Load(); ch != nil {
		<-*ch
	}
}
