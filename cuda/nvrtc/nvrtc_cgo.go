//go:build cgo && (linux || freebsd)

package nvrtc

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <stddef.h>

// NVRTC's C API, declared here so no CUDA header is needed.
typedef int ra_nvrtcResult;
typedef void *ra_nvrtcProgram;

typedef ra_nvrtcResult (*ra_fnVersion)(int *, int *);
typedef ra_nvrtcResult (*ra_fnCreate)(ra_nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
typedef ra_nvrtcResult (*ra_fnCompile)(ra_nvrtcProgram, int, const char *const *);
typedef ra_nvrtcResult (*ra_fnSize)(ra_nvrtcProgram, size_t *);
typedef ra_nvrtcResult (*ra_fnGet)(ra_nvrtcProgram, char *);
typedef ra_nvrtcResult (*ra_fnDestroy)(ra_nvrtcProgram *);

static int ra_version(void *f, int *major, int *minor) { return ((ra_fnVersion)f)(major, minor); }
static int ra_create(void *f, ra_nvrtcProgram *p, const char *src, const char *name, int n, const char *const *hs, const char *const *names) {
	return ((ra_fnCreate)f)(p, src, name, n, hs, names);
}
static int ra_compile(void *f, ra_nvrtcProgram p, int n, const char *const *opts) { return ((ra_fnCompile)f)(p, n, opts); }
static int ra_size(void *f, ra_nvrtcProgram p, size_t *n) { return ((ra_fnSize)f)(p, n); }
static int ra_get(void *f, ra_nvrtcProgram p, char *out) { return ((ra_fnGet)f)(p, out); }
static int ra_destroy(void *f, ra_nvrtcProgram *p) { return ((ra_fnDestroy)f)(p); }
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// NVRTC is a loaded NVRTC library.
type NVRTC struct {
	path                     string
	major, minor             int
	create, compile, destroy unsafe.Pointer
	logSize, getLog          unsafe.Pointer
	ptxSize, getPTX          unsafe.Pointer
}

func loadNVRTC(candidates []string) (*NVRTC, error) {
	var why string
	for _, name := range candidates {
		n := &NVRTC{path: name}
		var version unsafe.Pointer
		h, loadWhy, missing := dlopenAll(name, []symbol{
			{"nvrtcCreateProgram", &n.create}, {"nvrtcCompileProgram", &n.compile},
			{"nvrtcDestroyProgram", &n.destroy}, {"nvrtcGetProgramLogSize", &n.logSize},
			{"nvrtcGetProgramLog", &n.getLog}, {"nvrtcGetPTXSize", &n.ptxSize}, {"nvrtcGetPTX", &n.getPTX},
			{"nvrtcVersion", &version},
		})
		if h == nil {
			if missing != "" {
				why = fmt.Sprintf("; %s lacks %s", name, missing)
			} else {
				why = "; last: " + loadWhy
			}
			continue
		}
		var major, minor C.int
		if r := C.ra_version(version, &major, &minor); r != 0 {
			C.dlclose(h)
			why = fmt.Sprintf("; %s: nvrtcVersion failed (%d)", name, int(r))
			continue
		}
		n.major, n.minor = int(major), int(minor)
		return n, nil // the library stays loaded for the life of the process
	}
	return nil, noNVRTC(candidates, why)
}

// Path is the library that was loaded.
func (n *NVRTC) Path() string { return n.path }

// Version is NVRTC's CUDA version, such as 11, 8.
func (n *NVRTC) Version() (major, minor int) { return n.major, n.minor }

// Compile compiles src to PTX for arch (a virtual architecture such as
// "compute_70", or a real one such as "sm_90") with extra NVRTC options.
// A compile error is a *CompileError carrying the compiler log.
func (n *NVRTC) Compile(src Source, arch string, options ...string) (*Compiled, error) {
	var free []unsafe.Pointer
	defer func() {
		for _, p := range free {
			C.free(p)
		}
	}()
	cstr := func(s string) *C.char {
		p := C.CString(s)
		free = append(free, unsafe.Pointer(p))
		return p
	}
	// C arrays of C strings, allocated in C memory so cgo's pointer rules hold.
	carray := func(ss []string) **C.char {
		if len(ss) == 0 {
			return nil
		}
		a := (**C.char)(C.malloc(C.size_t(len(ss)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		free = append(free, unsafe.Pointer(a))
		s := unsafe.Slice(a, len(ss))
		for i, v := range ss {
			s[i] = cstr(v)
		}
		return a
	}
	var names, bodies []string
	for name, body := range src.Headers {
		names = append(names, name)
		bodies = append(bodies, body)
	}
	var prog C.ra_nvrtcProgram
	if r := C.ra_create(n.create, &prog, cstr(src.Code), cstr(src.Name), C.int(len(names)), carray(bodies), carray(names)); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcCreateProgram for %s failed (nvrtc result %d)", src.Name, int(r))
	}
	defer C.ra_destroy(n.destroy, &prog)

	opts := append([]string{"--gpu-architecture=" + arch}, options...)
	res := C.ra_compile(n.compile, prog, C.int(len(opts)), carray(opts))
	log := n.read(prog, n.logSize, n.getLog)
	if res != 0 {
		return nil, &CompileError{Name: src.Name, Arch: arch, Result: int(res), Log: log}
	}
	ptx := n.read(prog, n.ptxSize, n.getPTX)
	return &Compiled{PTX: []byte(ptx), Log: log}, nil
}

// read fetches a NUL-terminated string of the program through a size/get pair.
func (n *NVRTC) read(prog C.ra_nvrtcProgram, size, get unsafe.Pointer) string {
	var sz C.size_t
	if C.ra_size(size, prog, &sz) != 0 || sz == 0 {
		return ""
	}
	buf := C.malloc(sz)
	defer C.free(buf)
	if C.ra_get(get, prog, (*C.char)(buf)) != 0 {
		return ""
	}
	return C.GoString((*C.char)(buf))
}

// symbol is a library export and the function pointer it fills.
type symbol struct {
	name string
	dst  *unsafe.Pointer
}

// dlopenAll opens lib and resolves every symbol. On failure it closes the
// library and returns nil with why: the loader's message, or the first
// symbol missing. A library that loads stays loaded for the process.
func dlopenAll(lib string, syms []symbol) (handle unsafe.Pointer, why, missing string) {
	cname := C.CString(lib)
	h := C.dlopen(cname, C.RTLD_NOW|C.RTLD_LOCAL)
	C.free(unsafe.Pointer(cname))
	if h == nil {
		return nil, C.GoString(C.dlerror()), ""
	}
	for _, s := range syms {
		cs := C.CString(s.name)
		*s.dst = C.dlsym(h, cs)
		C.free(unsafe.Pointer(cs))
		if *s.dst == nil {
			C.dlclose(h)
			return nil, "", s.name
		}
	}
	return h, "", ""
}
