//go:build cgo && (linux || freebsd)

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
*/
import "C"

import "unsafe"

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

// dlsymOptional resolves each symbol of the open library h that it has,
// leaving the others nil.
func dlsymOptional(h unsafe.Pointer, syms []symbol) {
	for _, s := range syms {
		cs := C.CString(s.name)
		*s.dst = C.dlsym(h, cs)
		C.free(unsafe.Pointer(cs))
	}
}
