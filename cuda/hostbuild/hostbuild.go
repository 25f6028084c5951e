// Package hostbuild hands the emulated CUDA driver (internal/cudaemu) a
// kernel's CUDA C++ source, which it builds for the CPU and runs when the
// PTX compiled from that source is loaded. A real libcuda has no such entry
// point (it runs the PTX): Supported says which one is loaded. It sits
// beside package cuda, whose driver it looks the entry point up in.
package hostbuild

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/ringactor/ringactor/cuda"
)

// Results of a host build (Build), with the driver's numbering: the
// emulated driver found no C++ compiler, or the compiler rejected the
// source.
const (
	ErrorJITCompilerNotFound cuda.Result = 221
	ErrorInvalidSource       cuda.Result = 300
)

// symbol is the emulated driver's entry point that takes a kernel's CUDA
// source (internal/cudaemu/csrc/cudaemu.cpp); a real libcuda has no such
// symbol.
const symbol = "cudaemu_module_source"

// entries caches, per driver, whether it exports symbol.
var entries sync.Map // *cuda.Driver -> uintptr (the entry point, 0 for none)

func entry(d *cuda.Driver) uintptr {
	if d == nil {
		return 0
	}
	if v, ok := entries.Load(d); ok {
		return v.(uintptr)
	}
	p := lookup(d.Path(), symbol)
	entries.Store(d, p)
	return p
}

// Supported reports whether the driver builds kernels for the CPU from
// their CUDA C++ source: the emulated driver (internal/cudaemu) does, and
// then a kernel whose source it was given runs there; a real libcuda does
// not, and runs the PTX.
func Supported(d *cuda.Driver) bool { return entry(d) != 0 }

// Build hands the emulated driver d src, the CUDA C++ that ptx was
// compiled from (with the headers it includes by name), before ptx is
// loaded: the driver compiles it with the host C++ compiler through the
// shim its own kernels are built with, and a module later loaded from the
// same PTX text runs that build. Only ring kernels (.entry names ending in
// _ring) are built. A compile error is a *cuda.Error with Result
// ErrorInvalidSource whose Log is the compiler's messages; no compiler is
// ErrorJITCompilerNotFound. A driver that does not build for the host (a
// real libcuda: see Supported) returns an error wrapping
// cuda.ErrUnsupported. The build belongs to the driver: every context of
// it can load the PTX afterwards.
func Build(d *cuda.Driver, ptx []byte, src cuda.Source) error {
	if d == nil {
		return errors.New("hostbuild: nil *cuda.Driver (use cuda.LoadDriver)")
	}
	f := entry(d)
	if f == 0 {
		return fmt.Errorf("hostbuild: Build(%s): %s is no driver that builds kernels for the host (the emulated driver does; a GPU runs the PTX): %w",
			src.Name, d.Path(), cuda.ErrUnsupported)
	}
	if i := bytes.IndexByte(ptx, 0); i >= 0 {
		ptx = ptx[:i]
	}
	if len(bytes.TrimSpace(ptx)) == 0 || src.Code == "" {
		return fmt.Errorf("hostbuild: Build(%s): empty PTX or source", src.Name)
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
	call := fmt.Sprintf("%s(%s)", symbol, src.Name)
	log, r := build(f, ptx, src.Name, src.Code, names, texts)
	if r == cuda.ResultSuccess {
		return nil
	}
	e := &cuda.Error{Call: call, Result: r, Log: log}
	e.Name, e.Text = errorText(d.Path(), r)
	if e.Name == "" {
		e.Name = fmt.Sprintf("CUresult(%d)", int(r))
	}
	return e
}
