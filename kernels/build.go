package kernels

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/ringactor/ringactor/cuda"
)

// ShippedArch is the virtual architecture the shipped PTX is built for; the
// driver JIT-compiles it for any newer GPU.
const ShippedArch = "compute_70"

// CompileOptions are the NVRTC options every stage is built with.
var CompileOptions = []string{"--std=c++14"}

//go:embed ptx
var ptxFS embed.FS

// Compiler compiles CUDA C++ to PTX: *cuda.NVRTC, or a test double.
type Compiler interface {
	Compile(src cuda.Source, arch string, options ...string) (*cuda.Compiled, error)
}

// Symbol is the C name of op's stage function and the prefix of its ring
// kernel (Symbol+"_ring"): "ra_" and the op's name with every character
// that is not a letter, digit or underscore made an underscore.
func Symbol(opName string) string {
	var b strings.Builder
	b.WriteString("ra_")
	for _, r := range opName {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// RingSource is the whole program for op's ring kernel: the op's stage
// source, which defines RA_STAGE(Symbol(op.Name)), and the persistent loop
// around it.
func RingSource(op Op) cuda.Source {
	sym := Symbol(op.Name)
	return cuda.Source{
		Name:    sym + ".cu",
		Code:    op.CUDA + "\nRA_RING_KERNEL(" + sym + ")\n",
		Headers: Headers(),
	}
}

// ShippedPTX returns the PTX built into the package for a built-in op
// (for ShippedArch), made by `make ptx`.
func ShippedPTX(opName string) ([]byte, bool) {
	b, err := ptxFS.ReadFile("ptx/" + Symbol(opName) + ".ptx")
	return b, err == nil
}

// ShippedPTXNames lists the embedded PTX files, sorted.
func ShippedPTXNames() []string {
	ents, _ := ptxFS.ReadDir("ptx")
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".ptx") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

var (
	cacheMu sync.Mutex
	cache   = map[string][]byte{} // source hash -> PTX
)

// Build returns the PTX of op's ring kernel for arch. A built-in op's
// shipped PTX serves ShippedArch with no compiler at all; anything else is
// compiled by c (NVRTC) once per distinct source, arch and options, then
// served from a cache keyed by their hash. A compile error carries the
// compiler's log.
func Build(c Compiler, op Op, arch string) ([]byte, error) {
	if op.CUDA == "" {
		return nil, fmt.Errorf("kernels: op %q has no CUDA source; register it with one to run it on a GPU", op.Name)
	}
	src := RingSource(op)
	if arch == ShippedArch && isBuiltin(op) {
		if ptx, ok := ShippedPTX(op.Name); ok {
			return ptx, nil
		}
	}
	key := hashSource(src, arch)
	cacheMu.Lock()
	ptx, ok := cache[key]
	cacheMu.Unlock()
	if ok {
		return ptx, nil
	}
	if c == nil {
		return nil, fmt.Errorf("kernels: op %q for %s needs NVRTC: %w", op.Name, arch, cuda.ErrNoNVRTC)
	}
	out, err := c.Compile(src, arch, CompileOptions...)
	if err != nil {
		return nil, fmt.Errorf("kernels: op %q: %w", op.Name, err)
	}
	cacheMu.Lock()
	cache[key] = out.PTX
	cacheMu.Unlock()
	return out.PTX, nil
}

// isBuiltin reports whether op is the registered built-in of its name,
// source unchanged.
func isBuiltin(op Op) bool {
	src, ok := Source(strings.TrimPrefix(Symbol(op.Name), "ra_") + ".cu")
	return ok && src == op.CUDA
}

func hashSource(src cuda.Source, arch string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", arch, strings.Join(CompileOptions, " "), src.Code)
	names := make([]string, 0, len(src.Headers))
	for n := range src.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%s\x00", n, src.Headers[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}
