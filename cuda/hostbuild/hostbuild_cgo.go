//go:build cgo && (linux || freebsd)

package hostbuild

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// hb_lookup finds sym in the already loaded library lib (RTLD_NOLOAD: it
// is never loaded here), or 0.
static uintptr_t hb_lookup(const char *lib, const char *sym) {
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
	if (h == NULL) return 0;
	void *p = dlsym(h, sym);
	dlclose(h); // drops the reference NOLOAD took; the library stays loaded
	return (uintptr_t)p;
}

static int hb_build(uintptr_t f, const char *ptx, const char *name, const char *code, int n,
		const char *const *names, const char *const *texts, char *log, size_t logSize) {
	int r = ((int (*)(const char *, const char *, const char *, int, const char *const *, const char *const *, char *, size_t))f)(
		ptx, name, code, n, names, texts, log, logSize);
	log[logSize - 1] = 0;
	return r;
}

// hb_errorText calls cuGetErrorName or cuGetErrorString at f.
static int hb_errorText(uintptr_t f, int r, const char **s) { return ((int (*)(int, const char **))f)(r, s); }
*/
import "C"

import (
	"unsafe"

	"github.com/ringactor/ringactor/cuda"
)

// logSize is the room for the compiler's messages (package cuda's JIT log
// size).
const logSize = 16 << 10

// lookup is the address of sym in the loaded library lib, or 0.
func lookup(lib, sym string) uintptr {
	l, s := C.CString(lib), C.CString(sym)
	defer C.free(unsafe.Pointer(l))
	defer C.free(unsafe.Pointer(s))
	return uintptr(C.hb_lookup(l, s))
}

// build calls the emulated driver's cudaemu_module_source at f, every
// string copied into C memory for the call.
func build(f uintptr, ptx []byte, name, code string, names, texts []string) (string, cuda.Result) {
	var free []unsafe.Pointer
	cstr := func(s string) *C.char {
		p := C.CString(s)
		free = append(free, unsafe.Pointer(p))
		return p
	}
	defer func() {
		for _, p := range free {
			C.free(p)
		}
	}()
	n := len(names)
	arrays := C.malloc(C.size_t(2*(n+1)) * C.size_t(unsafe.Sizeof(uintptr(0))))
	free = append(free, arrays)
	cn := unsafe.Slice((**C.char)(arrays), 2*(n+1))
	for i := range n {
		cn[i], cn[n+1+i] = cstr(names[i]), cstr(texts[i])
	}
	cn[n], cn[2*n+1] = nil, nil
	log := (*C.char)(C.calloc(1, logSize))
	free = append(free, unsafe.Pointer(log))
	r := C.hb_build(C.uintptr_t(f), cstr(string(ptx)), cstr(name), cstr(code), C.int(n),
		(**C.char)(arrays), (**C.char)(unsafe.Pointer(&cn[n+1])), log, logSize)
	return C.GoString(log), cuda.Result(r)
}

// errorText is the driver's name (cuGetErrorName) and text
// (cuGetErrorString) for r, as package cuda's errors carry them; either
// is empty where the driver has none.
func errorText(lib string, r cuda.Result) (name, text string) {
	get := func(sym string) string {
		var s *C.char
		f := lookup(lib, sym)
		if f == 0 || C.hb_errorText(C.uintptr_t(f), C.int(r), &s) != 0 || s == nil {
			return ""
		}
		return C.GoString(s)
	}
	return get("cuGetErrorName"), get("cuGetErrorString")
}
