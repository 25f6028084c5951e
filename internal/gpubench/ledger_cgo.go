//go:build cgo && (linux || freebsd)

package gpubench

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// gb_lookup finds sym in the already loaded library lib (RTLD_NOLOAD: it
// is never loaded here), or 0.
static uintptr_t gb_lookup(const char *lib, const char *sym) {
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
	if (h == NULL) return 0;
	void *p = dlsym(h, sym);
	dlclose(h); // drops the reference NOLOAD took; the library stays loaded
	return (uintptr_t)p;
}

static unsigned long long gb_mark(uintptr_t f) { return ((unsigned long long (*)(void))f)(); }

static int gb_ledger(uintptr_t f, unsigned long long from, int i, char *name, int cap, unsigned long long *id,
		unsigned long long *out, int n) {
	return ((int (*)(unsigned long long, int, char *, int, unsigned long long *, unsigned long long *, int))f)(
		from, i, name, cap, id, out, n);
}
*/
import "C"

import "unsafe"

func lookup(lib, sym string) uintptr {
	l, s := C.CString(lib), C.CString(sym)
	defer C.free(unsafe.Pointer(l))
	defer C.free(unsafe.Pointer(s))
	return uintptr(C.gb_lookup(l, s))
}

func ledgerMark(f uintptr) uint64 { return uint64(C.gb_mark(C.uintptr_t(f))) }

// ledgerAt calls cudaemu_ledger at f: the i-th ring launch from mark on,
// its name, the driver's count of counters and the counters; ok false past the last.
func ledgerAt(f uintptr, from uint64, i int) (name string, n int, c [ledgerN]uint64, ok bool) {
	var buf [128]C.char
	var cid C.ulonglong
	var out [ledgerN]C.ulonglong
	r := C.gb_ledger(C.uintptr_t(f), C.ulonglong(from), C.int(i), &buf[0], C.int(len(buf)), &cid, &out[0], C.int(ledgerN))
	if r < 0 {
		return "", 0, c, false
	}
	for k := range c {
		c[k] = uint64(out[k])
	}
	return C.GoString(&buf[0]), int(r), c, true
}
