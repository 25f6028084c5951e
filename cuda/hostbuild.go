package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Results of a host build (Context.BuildForHost), with the driver's
// numbering: the emulated driver found no C++ compiler, or the compiler
// rejected the source.
const (
	ErrorJITCompilerNotFound Result = 221
	ErrorInvalidSource       Result = 300
)

// hostBuildSymbol is the emulated driver's entry point that takes a
// kernel's CUDA source (internal/cudaemu/csrc/cudaemu.cpp); a real libcuda
// has no such symbol.
const hostBuildSymbol = "cudaemu_module_source"

// hostBuilds caches, per driver, whether it exports hostBuildSymbol.
var hostBuilds sync.Map // *Driver -> uintptr (the entry point, 0 for none)

func (d *Driver) hostBuildEntry() uintptr {
	if v, ok := hostBuilds.Load(d); ok {
		return v.(uintptr)
	}
	p := d.lookupOptional(hostBuildSymbol)
	hostBuilds.Store(d, p)
	return p
}

// HostBuilds reports whether the context's driver builds kernels for the
// CPU from their CUDA C++ source: the emulated driver (internal/cudaemu)
// does, and then a kernel whose source it was given runs there; a real
// libcuda does not, and runs the PTX.
func (c *Context) HostBuilds() bool {
	return c != nil && c.driver().hostBuildEntry() != 0
}

// BuildForHost hands the emulated driver src, the CUDA C++ that ptx was
// compiled from (with the headers it includes by name), before ptx is
// loaded: the driver compiles it with the host C++ compiler through the
// shim its own kernels are built with, and a module later loaded from the
// same PTX text runs that build. Only ring kernels (.entry names ending in
// _ring) are built. A compile error is an *Error with Result
// ErrorInvalidSource whose Log is the compiler's messages; no compiler is
// ErrorJITCompilerNotFound. A driver that does not build for the host (a
// real libcuda: see HostBuilds) returns an error wrapping ErrUnsupported.
// The build belongs to the driver, not to the context: every context of
// it can load the PTX afterwards.
func (c *Context) BuildForHost(ptx []byte, src Source) error {
	if c == nil {
		return errNilContext
	}
	d := c.driver()
	f := d.hostBuildEntry()
	if f == 0 {
		return fmt.Errorf("cuda: BuildForHost(%s): %s is no driver that builds kernels for the host (the emulated driver does; a GPU runs the PTX): %w",
			src.Name, d.path, ErrUnsupported)
	}
	if i := bytes.IndexByte(ptx, 0); i >= 0 {
		ptx = ptx[:i]
	}
	if len(bytes.TrimSpace(ptx)) == 0 || src.Code == "" {
		return fmt.Errorf("cuda: BuildForHost(%s): empty PTX or source", src.Name)
	}
	names := make([]string, 0, len(src.Headers))
	for n := range src.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	texts := make([]string, len(names))
	for i, n := range names {
		texts[i] = src.Headers[n]
	}
	call := fmt.Sprintf("%s(%s)", hostBuildSymbol, src.Name)
	log, r := d.hostBuild(f, ptx, src.Name, src.Code, names, texts)
	if err := d.err(call, r); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Log = log
		}
		return err
	}
	return nil
}
