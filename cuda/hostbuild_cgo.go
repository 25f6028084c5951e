//go:build cgo && (linux || freebsd)

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// drv_lookup finds sym in the already loaded library lib (RTLD_NOLOAD: it
// is never loaded here), or 0.
static uintptr_t drv_lookup(const char *lib, const char *sym) {
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
	if (h == NULL) return 0;
	void *p = dlsym(h, sym);
	dlclose(h); // drops the reference NOLOAD took; the library stays loaded
	return (uintptr_t)p;
}

static int drv_hostBuild(uintptr_t f, const char *ptx, const char *name, const char *code, int n,
		const char *const *names, const char *const *texts, char *log, size_t logSize) {
	int r = ((int (*)(const char *, const char *, const char *, int, const char *const *, const char *const *, char *, size_t))f)(
		ptx, name, code, n, names, texts, log, logSize);
	log[logSize - 1] = 0;
	return r;
}
*/
import "C"

import "unsafe"

// lookupOptional is the address of sym in the driver's library, or 0.
func (d *Driver) lookupOptional(sym string) uintptr {
	if d == nil {
		return 0
	}
	lib, s := C.CString(d.path), C.CString(sym)
	defer C.free(unsafe.Pointer(lib))
	defer C.free(unsafe.Pointer(s))
	return uintptr(C.drv_lookup(lib, s))
}

// hostBuild calls the emulated driver's cudaemu_module_source at f, every
// string copied into C memory for the call.
func (d *Driver) hostBuild(f uintptr, ptx []byte, name, code string, names, texts []string) (string, Result) {
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
	log := (*C.char)(C.calloc(1, jitLogSize))
	free = append(free, unsafe.Pointer(log))
	r := C.drv_hostBuild(C.uintptr_t(f), cstr(string(ptx)), cstr(name), cstr(code), C.int(n),
		(**C.char)(arrays), (**C.char)(unsafe.Pointer(&cn[n+1])), log, jitLogSize)
	return C.GoString(log), Result(r)
}
