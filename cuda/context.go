package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// Context is a retained primary context of one device. Every call that
// needs a context makes this one current on the calling OS thread for the
// length of the call (see do), so a Context may be used from any goroutine.
// Its methods are safe for concurrent use.
type Context struct {
	dev    *Device
	handle uintptr // CUcontext

	mu       sync.RWMutex // held for reading during calls, for writing by Release
	released bool
}

var errNilContext = errors.New("cuda: nil *Context (use Device.PrimaryContext)")

// do runs f with c current on the calling thread. This is the one place
// that holds the rule: CUDA's current context is per OS thread, so the
// goroutine is locked to its thread, c is made current, f runs, and the
// thread is unlocked. The result of f becomes an *Error naming call.
func (c *Context) do(call string, f func() Result) error {
	if c == nil {
		return errNilContext
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.released {
		return fmt.Errorf("cuda: %s on device %d: context was released: %w", call, c.dev.ordinal, ErrReleased)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.dev.d.err("cuCtxSetCurrent", c.dev.d.ctxSetCurrent(c.handle)); err != nil {
		return err
	}
	return c.dev.d.err(call, f())
}

// driver is the Driver the context belongs to.
func (c *Context) driver() *Driver { return c.dev.d }

// Device is the device the context belongs to.
func (c *Context) Device() *Device {
	if c == nil {
		return nil
	}
	return c.dev
}

// Release releases the primary context once; later calls do nothing and
// return nil. When no other Context of this process retains the device's
// primary context, the driver destroys it with all its memory, modules,
// streams and events, and every handle made from it refuses further use.
func (c *Context) Release() error {
	if c == nil {
		return errNilContext
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return nil
	}
	c.released = true
	d := c.driver()
	d.mu.Lock()
	d.retains[c.dev.handle]--
	last := d.retains[c.dev.handle] <= 0
	if last {
		delete(d.retains, c.dev.handle)
	}
	d.mu.Unlock()
	if last {
		d.dropAllocs(c.handle)
	}
	return d.err("cuDevicePrimaryCtxRelease_v2", d.primaryCtxRelease(c.dev.handle))
}

// Synchronize waits until all work in the context is done.
func (c *Context) Synchronize() error {
	if c == nil {
		return errNilContext
	}
	return c.do("cuCtxSynchronize", c.driver().ctxSynchronize)
}

// sameContext checks that a handle made from other can be used with c.
func (c *Context) sameContext(what string, other *Context) error {
	if other == nil || other.handle != c.handle {
		return fmt.Errorf("cuda: %s belongs to another context than device %d's", what, c.dev.ordinal)
	}
	return nil
}
