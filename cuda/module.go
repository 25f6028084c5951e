package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
)

// Module is PTX loaded (JIT-compiled) into a context.
type Module struct {
	ctx    *Context
	name   string
	handle uintptr // CUmodule
	log    string  // JIT info log

	mu       sync.RWMutex
	unloaded bool
}

// Function is a kernel entry point of a loaded module.
type Function struct {
	mod    *Module
	name   string
	handle uintptr // CUfunction
}

var (
	errNilModule   = errors.New("cuda: nil *Module (use Context.LoadModule)")
	errNilFunction = errors.New("cuda: nil *Function (use Module.Function)")
)

// LoadModule JIT-compiles and loads ptx into the context
// (cuModuleLoadDataEx with error and info log buffers); name only labels
// errors. The PTX is read up to its first NUL, if any, and handed to the
// driver NUL-terminated in C memory. A failure is an *Error whose Log is
// the JIT error log.
func (c *Context) LoadModule(name string, ptx []byte) (*Module, error) {
	if c == nil {
		return nil, errNilContext
	}
	if i := bytes.IndexByte(ptx, 0); i >= 0 {
		ptx = ptx[:i] // the driver reads PTX up to its NUL
	}
	if len(bytes.TrimSpace(ptx)) == 0 {
		return nil, fmt.Errorf("cuda: LoadModule(%s): empty image", name)
	}
	var (
		h             uintptr
		errLog, infoL string
	)
	call := fmt.Sprintf("cuModuleLoadDataEx(%s)", name)
	err := c.do(call, func() (r Result) {
		h, errLog, infoL, r = c.driver().moduleLoad(ptx)
		return r
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Call == call {
			e.Log = errLog
		}
		return nil, err
	}
	return &Module{ctx: c, name: name, handle: h, log: infoL}, nil
}

// Name is the name the module was loaded under.
func (m *Module) Name() string {
	if m == nil {
		return ""
	}
	return m.name
}

// Log is the JIT compiler's info log of the load (often empty).
func (m *Module) Log() string {
	if m == nil {
		return ""
	}
	return m.log
}

// use runs f with the module known to be loaded and its context current.
func (m *Module) use(call string, f func() Result) error {
	if m == nil {
		return errNilModule
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.unloaded {
		return fmt.Errorf("cuda: %s: module %s was unloaded: %w", call, m.name, ErrReleased)
	}
	return m.ctx.do(call, f)
}

// Function looks up a kernel (an .entry, by its unmangled name for
// extern "C" kernels).
func (m *Module) Function(name string) (*Function, error) {
	var h uintptr
	err := m.use(fmt.Sprintf("cuModuleGetFunction(%s)", name), func() (r Result) {
		h, r = m.ctx.driver().moduleGetFunction(m.handle, name)
		return r
	})
	if err != nil {
		return nil, err
	}
	return &Function{mod: m, name: name, handle: h}, nil
}

// Unload unloads the module; its Functions refuse use afterwards.
// Unloading twice is an error wrapping ErrReleased.
func (m *Module) Unload() error {
	if m == nil {
		return errNilModule
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unloaded {
		return fmt.Errorf("cuda: Unload: module %s was unloaded already: %w", m.name, ErrReleased)
	}
	if err := m.ctx.do("cuModuleUnload", func() Result { return m.ctx.driver().moduleUnload(m.handle) }); err != nil {
		return err
	}
	m.unloaded = true
	return nil
}

// Name is the kernel's name.
func (f *Function) Name() string {
	if f == nil {
		return ""
	}
	return f.name
}

// MaxActiveBlocksPerSM is how many blocks of blockSize threads, each with
// dynamicSharedBytes of dynamic shared memory, fit on one multiprocessor at
// once (cuOccupancyMaxActiveBlocksPerMultiprocessor). Persistent kernels
// must not launch more than this times the SM count.
func (f *Function) MaxActiveBlocksPerSM(blockSize, dynamicSharedBytes int) (int, error) {
	if f == nil {
		return 0, errNilFunction
	}
	if blockSize <= 0 || blockSize > 1<<31-1 || dynamicSharedBytes < 0 || dynamicSharedBytes > maxAlloc {
		return 0, fmt.Errorf("cuda: MaxActiveBlocksPerSM(%d, %d) for %s: block size must be positive, shared bytes not negative", blockSize, dynamicSharedBytes, f.name)
	}
	var n int
	err := f.mod.use("cuOccupancyMaxActiveBlocksPerMultiprocessor", func() (r Result) {
		n, r = f.mod.ctx.driver().occupancy(f.handle, blockSize, uint64(dynamicSharedBytes))
		return r
	})
	if err != nil {
		return 0, fmt.Errorf("cuda: occupancy of %s: %w", f.name, err)
	}
	return n, nil
}
