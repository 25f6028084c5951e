//go:build cgo && (linux || freebsd)

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The driver API's types, declared here so no CUDA header is needed:
// CUresult and CUdevice are int, CUdeviceptr is unsigned long long, and the
// handles (CUcontext, CUmodule, CUfunction, CUstream, CUevent) are opaque
// pointers, carried through Go as uintptr_t. Each trampoline casts a
// dlsym'd pointer to the function's type and calls it.
typedef unsigned long long drv_dptr;

static int drv_u(void *f, unsigned a) { return ((int (*)(unsigned))f)(a); }
static int drv_pi(void *f, int *out) { return ((int (*)(int *))f)(out); }
static int drv_deviceGet(void *f, int *dev, int ordinal) { return ((int (*)(int *, int))f)(dev, ordinal); }
static int drv_deviceGetName(void *f, char *name, int len, int dev) { return ((int (*)(char *, int, int))f)(name, len, dev); }
static int drv_deviceGetAttribute(void *f, int *v, int attr, int dev) { return ((int (*)(int *, int, int))f)(v, attr, dev); }
static int drv_deviceTotalMem(void *f, size_t *n, int dev) { return ((int (*)(size_t *, int))f)(n, dev); }
static int drv_deviceCanAccessPeer(void *f, int *v, int dev, int peer) { return ((int (*)(int *, int, int))f)(v, dev, peer); }
static int drv_deviceGetP2PAttribute(void *f, int *v, int attr, int src, int dst) {
	return ((int (*)(int *, int, int, int))f)(v, attr, src, dst);
}
static int drv_primaryCtxRetain(void *f, uintptr_t *ctx, int dev) {
	void *c = NULL;
	int r = ((int (*)(void **, int))f)(&c, dev);
	*ctx = (uintptr_t)c;
	return r;
}
static int drv_dev(void *f, int dev) { return ((int (*)(int))f)(dev); }
static int drv_h(void *f, uintptr_t h) { return ((int (*)(void *))f)((void *)h); }
static int drv_none(void *f) { return ((int (*)(void))f)(); }
static int drv_hu(void *f, uintptr_t h, unsigned flags) { return ((int (*)(void *, unsigned))f)((void *)h, flags); }
static int drv_hh(void *f, uintptr_t a, uintptr_t b) { return ((int (*)(void *, void *))f)((void *)a, (void *)b); }
static int drv_create(void *f, uintptr_t *out, unsigned flags) {
	void *h = NULL;
	int r = ((int (*)(void **, unsigned))f)(&h, flags);
	*out = (uintptr_t)h;
	return r;
}
static int drv_elapsed(void *f, float *ms, uintptr_t start, uintptr_t end) {
	return ((int (*)(float *, void *, void *))f)(ms, (void *)start, (void *)end);
}
static int drv_memAlloc(void *f, drv_dptr *p, size_t n) { return ((int (*)(drv_dptr *, size_t))f)(p, n); }
static int drv_memFree(void *f, drv_dptr p) { return ((int (*)(drv_dptr))f)(p); }
// Managed memory's device address is its host address (unified addressing).
static int drv_memAllocManaged(void *f, drv_dptr *p, void **host, size_t n, unsigned flags) {
	int r = ((int (*)(drv_dptr *, size_t, unsigned))f)(p, n, flags);
	*host = (void *)(uintptr_t)*p;
	return r;
}
static int drv_memsetD8(void *f, drv_dptr p, unsigned char b, size_t n) { return ((int (*)(drv_dptr, unsigned char, size_t))f)(p, b, n); }
static int drv_memcpyHtoD(void *f, drv_dptr dst, const void *src, size_t n) { return ((int (*)(drv_dptr, const void *, size_t))f)(dst, src, n); }
static int drv_memcpyDtoH(void *f, void *dst, drv_dptr src, size_t n) { return ((int (*)(void *, drv_dptr, size_t))f)(dst, src, n); }
static int drv_memcpyHtoDAsync(void *f, drv_dptr dst, const void *src, size_t n, uintptr_t s) {
	return ((int (*)(drv_dptr, const void *, size_t, void *))f)(dst, src, n, (void *)s);
}
static int drv_memcpyDtoHAsync(void *f, void *dst, drv_dptr src, size_t n, uintptr_t s) {
	return ((int (*)(void *, drv_dptr, size_t, void *))f)(dst, src, n, (void *)s);
}
static int drv_memcpyDtoDAsync(void *f, drv_dptr dst, drv_dptr src, size_t n, uintptr_t s) {
	return ((int (*)(drv_dptr, drv_dptr, size_t, void *))f)(dst, src, n, (void *)s);
}
static int drv_memcpyPeerAsync(void *f, drv_dptr dst, uintptr_t dctx, drv_dptr src, uintptr_t sctx, size_t n, uintptr_t s) {
	return ((int (*)(drv_dptr, void *, drv_dptr, void *, size_t, void *))f)(dst, (void *)dctx, src, (void *)sctx, n, (void *)s);
}
static int drv_memHostAlloc(void *f, void **p, size_t n, unsigned flags) { return ((int (*)(void **, size_t, unsigned))f)(p, n, flags); }
static int drv_memFreeHost(void *f, void *p) { return ((int (*)(void *))f)(p); }
static int drv_memHostGetDevicePointer(void *f, drv_dptr *d, void *p) { return ((int (*)(drv_dptr *, void *, unsigned))f)(d, p, 0); }

// drv_moduleLoad copies the image into C memory with a terminating NUL and
// loads it with the JIT error and info logs (CU_JIT_ERROR_LOG_BUFFER = 5,
// its size = 6, CU_JIT_INFO_LOG_BUFFER = 3, its size = 4) going to the two
// logSize-byte buffers.
static int drv_moduleLoad(void *f, uintptr_t *mod, const void *image, size_t len, char *errLog, char *infoLog, size_t logSize) {
	char *img = malloc(len + 1);
	if (img == NULL) return 2; // CUDA_ERROR_OUT_OF_MEMORY
	memcpy(img, image, len);
	img[len] = 0;
	int opts[4] = {5, 6, 3, 4};
	void *vals[4] = {errLog, (void *)(uintptr_t)logSize, infoLog, (void *)(uintptr_t)logSize};
	void *m = NULL;
	int r = ((int (*)(void **, const void *, unsigned, int *, void **))f)(&m, img, 4, opts, vals);
	free(img);
	errLog[logSize - 1] = 0;
	infoLog[logSize - 1] = 0;
	*mod = (uintptr_t)m;
	return r;
}
static int drv_moduleGetFunction(void *f, uintptr_t *fn, uintptr_t mod, const char *name) {
	void *h = NULL;
	int r = ((int (*)(void **, void *, const char *))f)(&h, (void *)mod, name);
	*fn = (uintptr_t)h;
	return r;
}
static int drv_occupancy(void *f, int *n, uintptr_t fn, int block, size_t smem) {
	return ((int (*)(int *, void *, int, size_t))f)(n, (void *)fn, block, smem);
}

// drv_launch copies the packed arguments (argument i at offs[i]) into C memory,
// builds the void** array the driver reads them through, launches, and
// frees both: the driver copies kernel parameters at launch.
static int drv_launch(void *f, int coop, uintptr_t fn, unsigned gx, unsigned gy, unsigned gz,
		unsigned bx, unsigned by, unsigned bz, unsigned smem, uintptr_t stream, const void *packed, size_t size, const int *offs, int nargs) {
	char *buf = NULL;
	void **params = NULL;
	if (nargs > 0) {
		buf = malloc(size);
		params = malloc((size_t)nargs * sizeof(void *));
		if (buf == NULL || params == NULL) {
			free(buf);
			free(params);
			return 2; // CUDA_ERROR_OUT_OF_MEMORY
		}
		memcpy(buf, packed, size);
		for (int i = 0; i < nargs; i++) params[i] = buf + offs[i];
	}
	int r;
	if (coop) {
		r = ((int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **))f)(
			(void *)fn, gx, gy, gz, bx, by, bz, smem, (void *)stream, params);
	} else {
		r = ((int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **))f)(
			(void *)fn, gx, gy, gz, bx, by, bz, smem, (void *)stream, params, NULL);
	}
	free(buf);
	free(params);
	return r;
}
// Graphs: CUstreamCaptureMode is an enum (int); CUgraph and CUgraphExec are
// opaque pointers like the other handles.
static int drv_beginCapture(void *f, uintptr_t s, int mode) { return ((int (*)(void *, int))f)((void *)s, mode); }
static int drv_endCapture(void *f, uintptr_t s, uintptr_t *graph) {
	void *g = NULL;
	int r = ((int (*)(void *, void **))f)((void *)s, &g);
	*graph = (uintptr_t)g;
	return r;
}
static int drv_graphInstantiateWithFlags(void *f, uintptr_t *exec, uintptr_t graph, unsigned long long flags) {
	void *e = NULL;
	int r = ((int (*)(void **, void *, unsigned long long))f)(&e, (void *)graph, flags);
	*exec = (uintptr_t)e;
	return r;
}
// drv_graphInstantiateV2 is the CUDA 11.0 form, with an error node (not
// kept) and a log buffer of logSize bytes.
static int drv_graphInstantiateV2(void *f, uintptr_t *exec, uintptr_t graph, char *log, size_t logSize) {
	void *e = NULL, *errNode = NULL;
	int r = ((int (*)(void **, void *, void **, char *, size_t))f)(&e, (void *)graph, &errNode, log, logSize);
	log[logSize - 1] = 0;
	*exec = (uintptr_t)e;
	return r;
}
static int drv_errorText(void *f, int r, const char **s) { return ((int (*)(int, const char **))f)(r, s); }
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// driverFuncs holds the driver's entry points, resolved with dlsym.
type driverFuncs struct {
	init, driverGetVersion, getErrorName, getErrorString                              unsafe.Pointer
	deviceGet, deviceGetCount, deviceGetName, deviceGetAttribute, deviceTotalMem      unsafe.Pointer
	deviceCanAccessPeer, deviceGetP2PAttribute                                        unsafe.Pointer
	primaryCtxRetain, primaryCtxRelease, ctxSetCurrent, ctxSynchronize, ctxEnablePeer unsafe.Pointer
	memAlloc, memFree, memsetD8, memcpyHtoD, memcpyDtoH                               unsafe.Pointer
	memHostAlloc, memFreeHost, memHostGetDevicePointer                                unsafe.Pointer
	moduleLoadDataEx, moduleUnload, moduleGetFunction, occupancy                      unsafe.Pointer
	launchKernel, launchCooperativeKernel                                             unsafe.Pointer
	streamCreate, streamQuery, streamSynchronize, streamDestroy                       unsafe.Pointer
	eventCreate, eventRecord, eventSynchronize, eventElapsedTime, eventDestroy        unsafe.Pointer
	memcpyHtoDAsync, memcpyDtoHAsync                                                  unsafe.Pointer

	// Optional: nil when the driver lacks them (see optionalSymbols).
	streamBeginCapture, streamEndCapture, graphLaunch, graphExecDestroy, graphDestroy unsafe.Pointer
	graphInstantiateWithFlags, graphInstantiateV2                                     unsafe.Pointer
	// Optional copies between device memories (copySymbols).
	memcpyDtoDAsync, memcpyPeerAsync, memAllocManaged unsafe.Pointer
}

// copySymbols are the device-to-device copies and managed memory,
// resolved when present: a driver without them loads, and only those
// calls fail.
func (f *driverFuncs) copySymbols() []symbol {
	return []symbol{{"cuMemcpyDtoDAsync_v2", &f.memcpyDtoDAsync}, {"cuMemcpyPeerAsync", &f.memcpyPeerAsync},
		{"cuMemAllocManaged", &f.memAllocManaged}}
}

// symbols pairs each exported name (with its _v2 suffix where the driver
// versions it) with the field it fills.
func (f *driverFuncs) symbols() []symbol {
	return []symbol{
		{"cuInit", &f.init}, {"cuDriverGetVersion", &f.driverGetVersion},
		{"cuGetErrorName", &f.getErrorName}, {"cuGetErrorString", &f.getErrorString},
		{"cuDeviceGet", &f.deviceGet}, {"cuDeviceGetCount", &f.deviceGetCount},
		{"cuDeviceGetName", &f.deviceGetName}, {"cuDeviceGetAttribute", &f.deviceGetAttribute},
		{"cuDeviceTotalMem_v2", &f.deviceTotalMem}, {"cuDeviceCanAccessPeer", &f.deviceCanAccessPeer},
		{"cuDeviceGetP2PAttribute", &f.deviceGetP2PAttribute},
		{"cuDevicePrimaryCtxRetain", &f.primaryCtxRetain}, {"cuDevicePrimaryCtxRelease_v2", &f.primaryCtxRelease},
		{"cuCtxSetCurrent", &f.ctxSetCurrent}, {"cuCtxSynchronize", &f.ctxSynchronize},
		{"cuCtxEnablePeerAccess", &f.ctxEnablePeer},
		{"cuMemAlloc_v2", &f.memAlloc}, {"cuMemFree_v2", &f.memFree}, {"cuMemsetD8_v2", &f.memsetD8},
		{"cuMemcpyHtoD_v2", &f.memcpyHtoD}, {"cuMemcpyDtoH_v2", &f.memcpyDtoH},
		{"cuMemHostAlloc", &f.memHostAlloc}, {"cuMemFreeHost", &f.memFreeHost},
		{"cuMemHostGetDevicePointer_v2", &f.memHostGetDevicePointer},
		{"cuModuleLoadDataEx", &f.moduleLoadDataEx}, {"cuModuleUnload", &f.moduleUnload},
		{"cuModuleGetFunction", &f.moduleGetFunction},
		{"cuOccupancyMaxActiveBlocksPerMultiprocessor", &f.occupancy},
		{"cuLaunchKernel", &f.launchKernel}, {"cuLaunchCooperativeKernel", &f.launchCooperativeKernel},
		{"cuStreamCreate", &f.streamCreate}, {"cuStreamQuery", &f.streamQuery},
		{"cuStreamSynchronize", &f.streamSynchronize}, {"cuStreamDestroy_v2", &f.streamDestroy},
		{"cuEventCreate", &f.eventCreate}, {"cuEventRecord", &f.eventRecord},
		{"cuEventSynchronize", &f.eventSynchronize}, {"cuEventElapsedTime", &f.eventElapsedTime},
		{"cuEventDestroy_v2", &f.eventDestroy},
		{"cuMemcpyHtoDAsync_v2", &f.memcpyHtoDAsync}, {"cuMemcpyDtoHAsync_v2", &f.memcpyDtoHAsync},
	}
}

// optionalSymbols are resolved when present: a driver without them still
// loads, and only the calls that need them fail (graphs: CUDA 11.0 has
// cuGraphInstantiate_v2, 11.4 and newer cuGraphInstantiateWithFlags; either
// will do).
func (f *driverFuncs) optionalSymbols() []symbol {
	return []symbol{
		{"cuStreamBeginCapture_v2", &f.streamBeginCapture}, {"cuStreamEndCapture", &f.streamEndCapture},
		{"cuGraphInstantiateWithFlags", &f.graphInstantiateWithFlags}, {"cuGraphInstantiate_v2", &f.graphInstantiateV2},
		{"cuGraphLaunch", &f.graphLaunch}, {"cuGraphExecDestroy", &f.graphExecDestroy}, {"cuGraphDestroy", &f.graphDestroy},
	}
}

// loadDriverFrom opens the first candidate that loads and has every
// symbol, then runs cuInit(0) and reads the version.
func loadDriverFrom(candidates []string) (*Driver, error) {
	var why string
	for _, name := range candidates {
		d := &Driver{path: name}
		h, loadWhy, missing := dlopenAll(name, d.fn.symbols())
		if h == nil {
			if missing != "" {
				why = fmt.Sprintf("; %s lacks %s (the driver is too old: CUDA 11.0 or newer is needed)", name, missing)
			} else {
				why = "; last: " + loadWhy
			}
			continue
		}
		dlsymOptional(h, d.fn.optionalSymbols())
		dlsymOptional(h, d.fn.copySymbols())
		if err := d.err("cuInit", Result(C.drv_u(d.fn.init, 0))); err != nil {
			return nil, fmt.Errorf("cuda: %s loaded, but the driver cannot start: %w", name, err)
		}
		var v C.int
		if err := d.err("cuDriverGetVersion", Result(C.drv_pi(d.fn.driverGetVersion, &v))); err != nil {
			return nil, err
		}
		d.version = int(v)
		return d, nil // the library stays loaded for the life of the process
	}
	return nil, noDriver(candidates, why)
}

func (d *Driver) errorText(f unsafe.Pointer, r Result) (string, bool) {
	if d == nil || f == nil {
		return "", false
	}
	var s *C.char
	if C.drv_errorText(f, C.int(r), &s) != 0 || s == nil {
		return "", false
	}
	return C.GoString(s), true
}

func (d *Driver) errorName(r Result) (string, bool)   { return d.errorText(d.fn.getErrorName, r) }
func (d *Driver) errorString(r Result) (string, bool) { return d.errorText(d.fn.getErrorString, r) }

func (d *Driver) deviceCount() (int, Result) {
	var n C.int
	r := C.drv_pi(d.fn.deviceGetCount, &n)
	return int(n), Result(r)
}

func (d *Driver) deviceGet(ordinal int) (int, Result) {
	var h C.int
	r := C.drv_deviceGet(d.fn.deviceGet, &h, C.int(ordinal))
	return int(h), Result(r)
}

func (d *Driver) deviceName(dev int) (string, Result) {
	const size = 256
	buf := (*C.char)(C.calloc(1, size))
	defer C.free(unsafe.Pointer(buf))
	r := C.drv_deviceGetName(d.fn.deviceGetName, buf, size, C.int(dev))
	if r != 0 {
		return "", Result(r)
	}
	return C.GoStringN(buf, C.int(C.strnlen(buf, size-1))), 0
}

func (d *Driver) deviceAttribute(attr, dev int) (int, Result) {
	var v C.int
	r := C.drv_deviceGetAttribute(d.fn.deviceGetAttribute, &v, C.int(attr), C.int(dev))
	return int(v), Result(r)
}

func (d *Driver) deviceTotalMem(dev int) (uint64, Result) {
	var n C.size_t
	r := C.drv_deviceTotalMem(d.fn.deviceTotalMem, &n, C.int(dev))
	return uint64(n), Result(r)
}

func (d *Driver) deviceCanAccessPeer(dev, peer int) (bool, Result) {
	var v C.int
	r := C.drv_deviceCanAccessPeer(d.fn.deviceCanAccessPeer, &v, C.int(dev), C.int(peer))
	return v != 0, Result(r)
}

func (d *Driver) deviceP2PAttribute(attr, src, dst int) (int, Result) {
	var v C.int
	r := C.drv_deviceGetP2PAttribute(d.fn.deviceGetP2PAttribute, &v, C.int(attr), C.int(src), C.int(dst))
	return int(v), Result(r)
}

func (d *Driver) primaryCtxRetain(dev int) (uintptr, Result) {
	var h C.uintptr_t
	r := C.drv_primaryCtxRetain(d.fn.primaryCtxRetain, &h, C.int(dev))
	return uintptr(h), Result(r)
}

func (d *Driver) primaryCtxRelease(dev int) Result {
	return Result(C.drv_dev(d.fn.primaryCtxRelease, C.int(dev)))
}

func (d *Driver) ctxSetCurrent(ctx uintptr) Result {
	return Result(C.drv_h(d.fn.ctxSetCurrent, C.uintptr_t(ctx)))
}

func (d *Driver) ctxSynchronize() Result { return Result(C.drv_none(d.fn.ctxSynchronize)) }

func (d *Driver) ctxEnablePeerAccess(peer uintptr) Result {
	return Result(C.drv_hu(d.fn.ctxEnablePeer, C.uintptr_t(peer), 0))
}

func (d *Driver) memAlloc(n uint64) (uint64, Result) {
	var p C.drv_dptr
	r := C.drv_memAlloc(d.fn.memAlloc, &p, C.size_t(n))
	return uint64(p), Result(r)
}

func (d *Driver) memAllocManaged(n uint64) (uint64, unsafe.Pointer, Result) {
	if d.fn.memAllocManaged == nil {
		return 0, nil, ErrorNotSupported
	}
	var p C.drv_dptr
	var h unsafe.Pointer
	r := C.drv_memAllocManaged(d.fn.memAllocManaged, &p, &h, C.size_t(n), memAttachGlobal)
	return uint64(p), h, Result(r)
}

func (d *Driver) memFree(p uint64) Result { return Result(C.drv_memFree(d.fn.memFree, C.drv_dptr(p))) }

func (d *Driver) memsetD8(p uint64, b byte, n uint64) Result {
	return Result(C.drv_memsetD8(d.fn.memsetD8, C.drv_dptr(p), C.uchar(b), C.size_t(n)))
}

// memcpyHtoD and memcpyDtoH pass Go byte slices for the length of the
// call only, which cgo allows: they hold no Go pointers and the driver
// does not keep them.
func (d *Driver) memcpyHtoD(dst uint64, src []byte) Result {
	return Result(C.drv_memcpyHtoD(d.fn.memcpyHtoD, C.drv_dptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

func (d *Driver) memcpyDtoH(dst []byte, src uint64) Result {
	return Result(C.drv_memcpyDtoH(d.fn.memcpyDtoH, unsafe.Pointer(&dst[0]), C.drv_dptr(src), C.size_t(len(dst))))
}

// memcpyHtoDAsync and memcpyDtoHAsync take host memory from cuMemHostAlloc
// (C memory), which the driver reads or writes after the call returns.
func (d *Driver) memcpyHtoDAsync(dst uint64, src unsafe.Pointer, n uint64, stream uintptr) Result {
	return Result(C.drv_memcpyHtoDAsync(d.fn.memcpyHtoDAsync, C.drv_dptr(dst), src, C.size_t(n), C.uintptr_t(stream)))
}

func (d *Driver) memcpyDtoHAsync(dst unsafe.Pointer, src uint64, n uint64, stream uintptr) Result {
	return Result(C.drv_memcpyDtoHAsync(d.fn.memcpyDtoHAsync, dst, C.drv_dptr(src), C.size_t(n), C.uintptr_t(stream)))
}

func (d *Driver) memcpyDtoDAsync(dst, src, n uint64, stream uintptr) Result {
	if d.fn.memcpyDtoDAsync == nil {
		return ErrorNotSupported
	}
	return Result(C.drv_memcpyDtoDAsync(d.fn.memcpyDtoDAsync, C.drv_dptr(dst), C.drv_dptr(src), C.size_t(n), C.uintptr_t(stream)))
}

func (d *Driver) memcpyPeerAsync(dst uint64, dctx uintptr, src uint64, sctx uintptr, n uint64, stream uintptr) Result {
	if d.fn.memcpyPeerAsync == nil {
		return ErrorNotSupported
	}
	return Result(C.drv_memcpyPeerAsync(d.fn.memcpyPeerAsync, C.drv_dptr(dst), C.uintptr_t(dctx), C.drv_dptr(src), C.uintptr_t(sctx), C.size_t(n), C.uintptr_t(stream)))
}

func (d *Driver) memHostAlloc(n uint64, flags uint32) (unsafe.Pointer, Result) {
	var p unsafe.Pointer
	r := C.drv_memHostAlloc(d.fn.memHostAlloc, &p, C.size_t(n), C.uint(flags))
	return p, Result(r)
}

func (d *Driver) memFreeHost(p unsafe.Pointer) Result {
	return Result(C.drv_memFreeHost(d.fn.memFreeHost, p))
}

func (d *Driver) memHostGetDevicePointer(p unsafe.Pointer) (uint64, Result) {
	var dp C.drv_dptr
	r := C.drv_memHostGetDevicePointer(d.fn.memHostGetDevicePointer, &dp, p)
	return uint64(dp), Result(r)
}

// jitLogSize is the size of each JIT log buffer.
const jitLogSize = 16 << 10

func (d *Driver) moduleLoad(image []byte) (mod uintptr, errLog, infoLog string, r Result) {
	el := (*C.char)(C.calloc(1, jitLogSize))
	il := (*C.char)(C.calloc(1, jitLogSize))
	defer C.free(unsafe.Pointer(el))
	defer C.free(unsafe.Pointer(il))
	var h C.uintptr_t
	r = Result(C.drv_moduleLoad(d.fn.moduleLoadDataEx, &h, unsafe.Pointer(&image[0]), C.size_t(len(image)), el, il, jitLogSize))
	return uintptr(h), C.GoString(el), C.GoString(il), r
}

func (d *Driver) moduleUnload(mod uintptr) Result {
	return Result(C.drv_h(d.fn.moduleUnload, C.uintptr_t(mod)))
}

func (d *Driver) moduleGetFunction(mod uintptr, name string) (uintptr, Result) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var h C.uintptr_t
	r := C.drv_moduleGetFunction(d.fn.moduleGetFunction, &h, C.uintptr_t(mod), cs)
	return uintptr(h), Result(r)
}

func (d *Driver) occupancy(fn uintptr, block int, smem uint64) (int, Result) {
	var n C.int
	r := C.drv_occupancy(d.fn.occupancy, &n, C.uintptr_t(fn), C.int(block), C.size_t(smem))
	return int(n), Result(r)
}

func (d *Driver) launch(coop bool, fn uintptr, grid, block Dim3, smem uint32, stream uintptr, packed []byte, offs []int32) Result {
	nargs := len(offs)
	f, c := d.fn.launchKernel, C.int(0)
	if coop {
		f, c = d.fn.launchCooperativeKernel, 1
	}
	var args unsafe.Pointer
	var coffs *C.int
	if nargs > 0 {
		// Both into C memory: cgo forbids passing Go pointers that C keeps.
		args = C.CBytes(packed)
		defer C.free(args)
		co := (*C.int)(C.malloc(C.size_t(4 * nargs)))
		defer C.free(unsafe.Pointer(co))
		for i, o := range offs {
			unsafe.Slice(co, nargs)[i] = C.int(o)
		}
		coffs = co
	}
	return Result(C.drv_launch(f, c, C.uintptr_t(fn),
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(smem), C.uintptr_t(stream), args, C.size_t(len(packed)), coffs, C.int(nargs)))
}

func (d *Driver) streamCreate(flags uint32) (uintptr, Result) {
	var h C.uintptr_t
	r := C.drv_create(d.fn.streamCreate, &h, C.uint(flags))
	return uintptr(h), Result(r)
}

func (d *Driver) streamQuery(s uintptr) Result {
	return Result(C.drv_h(d.fn.streamQuery, C.uintptr_t(s)))
}
func (d *Driver) streamSynchronize(s uintptr) Result {
	return Result(C.drv_h(d.fn.streamSynchronize, C.uintptr_t(s)))
}
func (d *Driver) streamDestroy(s uintptr) Result {
	return Result(C.drv_h(d.fn.streamDestroy, C.uintptr_t(s)))
}

func (d *Driver) eventCreate(flags uint32) (uintptr, Result) {
	var h C.uintptr_t
	r := C.drv_create(d.fn.eventCreate, &h, C.uint(flags))
	return uintptr(h), Result(r)
}

func (d *Driver) eventRecord(e, s uintptr) Result {
	return Result(C.drv_hh(d.fn.eventRecord, C.uintptr_t(e), C.uintptr_t(s)))
}
func (d *Driver) eventSynchronize(e uintptr) Result {
	return Result(C.drv_h(d.fn.eventSynchronize, C.uintptr_t(e)))
}

func (d *Driver) eventElapsed(start, end uintptr) (float32, Result) {
	var ms C.float
	r := C.drv_elapsed(d.fn.eventElapsedTime, &ms, C.uintptr_t(start), C.uintptr_t(end))
	return float32(ms), Result(r)
}

func (d *Driver) eventDestroy(e uintptr) Result {
	return Result(C.drv_h(d.fn.eventDestroy, C.uintptr_t(e)))
}

// missingGraph names the first graph entry point the driver lacks, or "".
func (d *Driver) missingGraph() string {
	for _, s := range d.fn.optionalSymbols() {
		if *s.dst == nil && s.name != "cuGraphInstantiateWithFlags" && s.name != "cuGraphInstantiate_v2" {
			return s.name
		}
	}
	if d.fn.graphInstantiateWithFlags == nil && d.fn.graphInstantiateV2 == nil {
		return "cuGraphInstantiateWithFlags"
	}
	return ""
}

func (d *Driver) streamBeginCapture(s uintptr, mode int) Result {
	return Result(C.drv_beginCapture(d.fn.streamBeginCapture, C.uintptr_t(s), C.int(mode)))
}

func (d *Driver) streamEndCapture(s uintptr) (uintptr, Result) {
	var g C.uintptr_t
	r := C.drv_endCapture(d.fn.streamEndCapture, C.uintptr_t(s), &g)
	return uintptr(g), Result(r)
}

// graphInstantiate uses cuGraphInstantiateWithFlags where the driver has
// it, else cuGraphInstantiate_v2 (whose log it returns); call names the
// one used.
func (d *Driver) graphInstantiate(g uintptr) (exec uintptr, call, log string, r Result) {
	var e C.uintptr_t
	if d.fn.graphInstantiateWithFlags != nil {
		r = Result(C.drv_graphInstantiateWithFlags(d.fn.graphInstantiateWithFlags, &e, C.uintptr_t(g), 0))
		return uintptr(e), "cuGraphInstantiateWithFlags", "", r
	}
	const size = 4 << 10
	buf := (*C.char)(C.calloc(1, size))
	defer C.free(unsafe.Pointer(buf))
	r = Result(C.drv_graphInstantiateV2(d.fn.graphInstantiateV2, &e, C.uintptr_t(g), buf, size))
	return uintptr(e), "cuGraphInstantiate_v2", C.GoString(buf), r
}

func (d *Driver) graphLaunch(e, s uintptr) Result {
	return Result(C.drv_hh(d.fn.graphLaunch, C.uintptr_t(e), C.uintptr_t(s)))
}

func (d *Driver) graphExecDestroy(e uintptr) Result {
	return Result(C.drv_h(d.fn.graphExecDestroy, C.uintptr_t(e)))
}

func (d *Driver) graphDestroy(g uintptr) Result {
	return Result(C.drv_h(d.fn.graphDestroy, C.uintptr_t(g)))
}
