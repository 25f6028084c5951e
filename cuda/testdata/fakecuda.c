// fakecuda.c: a stand-in for libcuda.so.1 for the cuda package's tests on
// machines without a GPU. It implements the driver functions the package
// loads, over plain host memory:
//
//   - two devices, "Fake GPU 0" and "Fake GPU 1", attributes from a table,
//     peer access between them;
//   - device memory is malloc'd, so a CUdeviceptr is a host address;
//     allocations above 1<<40 bytes fail with CUDA_ERROR_OUT_OF_MEMORY;
//   - mapped host memory is filled with 0xA5 (the binding must zero it),
//     and its device pointer is its host pointer;
//   - calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT unless
//     one was made current on the calling thread with cuCtxSetCurrent;
//   - modules: an image not starting with "//" or "." fails with
//     CUDA_ERROR_INVALID_PTX and "fake jit: bad ptx" in the JIT error log;
//     every module has the kernels "fake_store" (stores its u64 second
//     argument at the address in its first) and "fake_nop";
//   - each stream's first cuStreamQuery says CUDA_ERROR_NOT_READY;
//   - events record the host's monotonic clock;
//   - async copies run at once, as if the stream had nothing queued;
//   - graphs: a stream capturing (cuStreamBeginCapture_v2) records its
//     async copies and launches as nodes instead of running them; a
//     cuStreamSynchronize or cuStreamQuery on it fails with
//     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture;
//     cuGraphLaunch runs an instantiated graph's nodes at once, in order,
//     re-reading the host memory of its copies.
//
// What a test cannot see through the API it reads as device attributes
// 9001 and up (see fake_attr), which no real driver has.
//
// Build: gcc -shared -fPIC -o libfakecuda.so fakecuda.c (add -DFAKECUDA_OLD
// for a driver that lacks a symbol the binding needs, -DFAKECUDA_NOGRAPH for
// one without the graph API, -DFAKECUDA_GRAPH_V2 for one whose only
// instantiate is CUDA 11.0's cuGraphInstantiate_v2)

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
	SUCCESS = 0,
	INVALID_VALUE = 1,
	OUT_OF_MEMORY = 2,
	NOT_INITIALIZED = 3,
	NO_DEVICE = 100,
	INVALID_DEVICE = 101,
	INVALID_CONTEXT = 201,
	INVALID_PTX = 218,
	INVALID_HANDLE = 400,
	ILLEGAL_STATE = 401,
	NOT_FOUND = 500,
	NOT_READY = 600,
	PEER_ACCESS_ALREADY_ENABLED = 704,
	COOPERATIVE_LAUNCH_TOO_LARGE = 720,
	STREAM_CAPTURE_UNSUPPORTED = 900,
	STREAM_CAPTURE_INVALIDATED = 901,
};

#define NDEV 2

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized;

struct ctx {
	int dev;
	int refs;
	int peers; // bit d: peer access to device d enabled
};
static struct ctx ctxs[NDEV] = {{0, 0, 0}, {1, 0, 0}};
static __thread struct ctx *current;

// What tests read back through fake attributes.
static long long last_host_flags = -1;
static unsigned last_grid[3], last_block[3], last_shared;
static int last_coop = -1, last_stream_nonzero = -1, launches;
static long long live_allocs;
static int last_stream_flags = -1;
static int last_capture_mode = -1, graph_launches, live_graphs, last_instantiate = -1, last_exec_nodes = -1;
static long long async_copies;

struct module {
	int magic;
};
struct function {
	const char *name;
};
static struct function fn_store = {"fake_store"}, fn_nop = {"fake_nop"};

// A captured node: a kernel launch (fake_store's two arguments copied) or
// an async copy.
enum { NODE_KERNEL = 1, NODE_COPY = 2 };
struct node {
	int kind;
	void *f;
	uint64_t args[2];
	void *dst;
	const void *src;
	size_t n;
};
#define MAX_NODES 64
struct graph {
	int magic; // GRAPH_MAGIC or EXEC_MAGIC
	int n;
	struct node nodes[MAX_NODES];
};
#define GRAPH_MAGIC 0x475248
#define EXEC_MAGIC 0x455845

struct stream {
	unsigned flags;
	int queries;
	struct graph *capture; // non-NULL while capturing
	int invalidated;
};
struct event {
	int recorded;
	double ms;
};

struct hostalloc {
	void *p;
	unsigned flags;
	struct hostalloc *next;
};
static struct hostalloc *hostallocs;

static int sms(int dev) { return dev == 0 ? 4 : 2; }

static int need_ctx(void) {
	if (!initialized) return NOT_INITIALIZED;
	if (current == NULL || current->refs <= 0) return INVALID_CONTEXT;
	return SUCCESS;
}

CUresult cuInit(unsigned flags) {
	const char *fail = getenv("FAKECUDA_INIT_RESULT"); // lets a test see cuInit fail
	if (fail != NULL && *fail) return atoi(fail);
	if (flags != 0) return INVALID_VALUE;
	initialized = 1;
	return SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
	if (v == NULL) return INVALID_VALUE;
	*v = 12040;
	return SUCCESS;
}

static const struct {
	int code;
	const char *name, *text;
} errs[] = {
	{SUCCESS, "CUDA_SUCCESS", "no error"},
	{INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
	{PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
	{COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
	{ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
	{STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
	{STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
};

static CUresult error_text(CUresult r, const char **s, int name) {
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
		if (errs[i].code == r) {
			*s = name ? errs[i].name : errs[i].text;
			return SUCCESS;
		}
	}
	*s = NULL;
	return INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult r, const char **s) { return error_text(r, s, 1); }
CUresult cuGetErrorString(CUresult r, const char **s) { return error_text(r, s, 0); }

CUresult cuDeviceGetCount(int *n) {
	if (!initialized) return NOT_INITIALIZED;
	*n = NDEV;
	return SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	if (!initialized) return NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= NDEV) return INVALID_DEVICE;
	*d = ordinal;
	return SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	if (!initialized) return NOT_INITIALIZED;
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	if (name == NULL || len <= 0) return INVALID_VALUE;
	snprintf(name, (size_t)len, "Fake GPU %d", d);
	return SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *n, CUdevice d) {
	if (!initialized) return NOT_INITIALIZED;
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	*n = (size_t)(d == 0 ? 16 : 8) << 30;
	return SUCCESS;
}

static int fake_attr(int attr, int *v) {
	pthread_mutex_lock(&mu);
	int ok = 1;
	switch (attr) {
	case 9001: *v = (int)last_host_flags; break;
	case 9002: *v = (int)last_grid[0]; break;
	case 9003: *v = (int)last_grid[1]; break;
	case 9004: *v = (int)last_grid[2]; break;
	case 9005: *v = (int)last_block[0]; break;
	case 9006: *v = (int)last_block[1]; break;
	case 9007: *v = (int)last_block[2]; break;
	case 9008: *v = (int)last_shared; break;
	case 9009: *v = last_coop; break;
	case 9010: *v = last_stream_nonzero; break;
	case 9011: *v = (int)live_allocs; break;
	case 9012: *v = launches; break;
	case 9013: *v = last_stream_flags; break;
	case 9014: *v = last_capture_mode; break;
	case 9015: *v = graph_launches; break;
	case 9016: *v = live_graphs; break;       // graphs and execs not destroyed
	case 9017: *v = last_instantiate; break;  // 1: WithFlags, 2: _v2
	case 9018: *v = last_exec_nodes; break;
	case 9019: *v = (int)async_copies; break;
	default: ok = 0;
	}
	pthread_mutex_unlock(&mu);
	return ok;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	if (!initialized) return NOT_INITIALIZED;
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	if (attr == 9999) return 12345; // a code the driver has no name for
	if (fake_attr(attr, v)) return SUCCESS;
	switch (attr) {
	case 1: *v = 1024; break;                  // MAX_THREADS_PER_BLOCK
	case 16: *v = sms(d); break;               // MULTIPROCESSOR_COUNT
	case 19: *v = 1; break;                    // CAN_MAP_HOST_MEMORY
	case 33: *v = 0x17 + d; break;             // PCI_BUS_ID
	case 34: *v = 0; break;                    // PCI_DEVICE_ID
	case 39: *v = 2048; break;                 // MAX_THREADS_PER_MULTIPROCESSOR
	case 41: *v = 1; break;                    // UNIFIED_ADDRESSING
	case 75: *v = d == 0 ? 9 : 8; break;       // COMPUTE_CAPABILITY_MAJOR
	case 76: *v = d == 0 ? 0 : 6; break;       // COMPUTE_CAPABILITY_MINOR
	case 86: *v = 0; break;                    // HOST_NATIVE_ATOMIC_SUPPORTED
	case 88: *v = 0; break;                    // PAGEABLE_MEMORY_ACCESS
	case 89: *v = 1; break;                    // CONCURRENT_MANAGED_ACCESS
	case 95: *v = 1; break;                    // COOPERATIVE_LAUNCH
	default: return INVALID_VALUE;
	}
	return SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *v, CUdevice d, CUdevice peer) {
	if (!initialized) return NOT_INITIALIZED;
	if (d < 0 || d >= NDEV || peer < 0 || peer >= NDEV) return INVALID_DEVICE;
	*v = d != peer;
	return SUCCESS;
}

CUresult cuDeviceGetP2PAttribute(int *v, int attr, CUdevice src, CUdevice dst) {
	if (!initialized) return NOT_INITIALIZED;
	if (src < 0 || src >= NDEV || dst < 0 || dst >= NDEV || src == dst) return INVALID_DEVICE;
	switch (attr) {
	case 1: *v = 0; break; // PERFORMANCE_RANK
	case 2: *v = 1; break; // ACCESS_SUPPORTED
	case 3: *v = 0; break; // NATIVE_ATOMIC_SUPPORTED
	case 4: *v = 0; break; // CUDA_ARRAY_ACCESS_SUPPORTED
	default: return INVALID_VALUE;
	}
	return SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(void **c, CUdevice d) {
	if (!initialized) return NOT_INITIALIZED;
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	ctxs[d].refs++;
	pthread_mutex_unlock(&mu);
	*c = &ctxs[d];
	return SUCCESS;
}

// Built with -DFAKECUDA_OLD, the fake lacks the _v2 name, as drivers
// older than CUDA 11 do.
#ifdef FAKECUDA_OLD
CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
#else
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
#endif
	if (!initialized) return NOT_INITIALIZED;
	if (d < 0 || d >= NDEV) return INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	int r = ctxs[d].refs > 0 ? SUCCESS : INVALID_CONTEXT;
	if (r == SUCCESS && --ctxs[d].refs == 0) ctxs[d].peers = 0;
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuCtxSetCurrent(void *c) {
	if (!initialized) return NOT_INITIALIZED;
	if (c == NULL) {
		current = NULL;
		return SUCCESS;
	}
	if (c != &ctxs[0] && c != &ctxs[1]) return INVALID_CONTEXT;
	if (((struct ctx *)c)->refs <= 0) return INVALID_CONTEXT;
	current = c;
	return SUCCESS;
}

CUresult cuCtxSynchronize(void) { return need_ctx(); }

CUresult cuCtxEnablePeerAccess(void *peer, unsigned flags) {
	int r = need_ctx();
	if (r) return r;
	if (flags != 0) return INVALID_VALUE;
	if (peer != &ctxs[0] && peer != &ctxs[1]) return INVALID_CONTEXT;
	struct ctx *p = peer;
	if (p == current) return INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	if (current->peers & (1 << p->dev)) r = PEER_ACCESS_ALREADY_ENABLED;
	current->peers |= 1 << p->dev;
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	int r = need_ctx();
	if (r) return r;
	if (n == 0) return INVALID_VALUE;
	if (n > (size_t)1 << 40) return OUT_OF_MEMORY;
	void *m = malloc(n);
	if (m == NULL) return OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	live_allocs++;
	pthread_mutex_unlock(&mu);
	*p = (CUdeviceptr)(uintptr_t)m;
	return SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	int r = need_ctx();
	if (r) return r;
	free((void *)(uintptr_t)p);
	pthread_mutex_lock(&mu);
	live_allocs--;
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char b, size_t n) {
	int r = need_ctx();
	if (r) return r;
	memset((void *)(uintptr_t)p, b, n);
	return SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	int r = need_ctx();
	if (r) return r;
	memcpy((void *)(uintptr_t)dst, src, n);
	return SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	int r = need_ctx();
	if (r) return r;
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return SUCCESS;
}

// add_node records n into the stream's capture; a full graph invalidates it.
static void add_node(struct stream *st, struct node n) {
	pthread_mutex_lock(&mu);
	if (st->capture->n == MAX_NODES) st->invalidated = 1;
	else st->capture->nodes[st->capture->n++] = n;
	pthread_mutex_unlock(&mu);
}

static CUresult copy_async(void *dst, const void *src, size_t n, void *stream) {
	int r = need_ctx();
	if (r) return r;
	if (n > 0 && (dst == NULL || src == NULL)) return INVALID_VALUE;
	struct stream *st = stream;
	if (st != NULL && st->capture != NULL) {
		add_node(st, (struct node){.kind = NODE_COPY, .dst = dst, .src = src, .n = n});
		return SUCCESS;
	}
	memcpy(dst, src, n);
	pthread_mutex_lock(&mu);
	async_copies++;
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream) {
	return copy_async((void *)(uintptr_t)dst, src, n, stream);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream) {
	return copy_async(dst, (const void *)(uintptr_t)src, n, stream);
}

CUresult cuMemHostAlloc(void **pp, size_t n, unsigned flags) {
	int r = need_ctx();
	if (r) return r;
	if (n == 0 || (flags & ~7u) != 0) return INVALID_VALUE;
	struct hostalloc *h = malloc(sizeof *h);
	void *p = malloc(n);
	if (h == NULL || p == NULL) {
		free(h);
		free(p);
		return OUT_OF_MEMORY;
	}
	memset(p, 0xA5, n); // not zeroed, as the real driver promises nothing
	pthread_mutex_lock(&mu);
	h->p = p;
	h->flags = flags;
	h->next = hostallocs;
	hostallocs = h;
	last_host_flags = flags;
	pthread_mutex_unlock(&mu);
	*pp = p;
	return SUCCESS;
}

CUresult cuMemFreeHost(void *p) {
	int r = need_ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	struct hostalloc **hp = &hostallocs;
	while (*hp != NULL && (*hp)->p != p) hp = &(*hp)->next;
	struct hostalloc *h = *hp;
	if (h != NULL) *hp = h->next;
	pthread_mutex_unlock(&mu);
	if (h == NULL) return INVALID_VALUE;
	free(h->p);
	free(h);
	return SUCCESS;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags) {
	int r = need_ctx();
	if (r) return r;
	if (flags != 0) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct hostalloc *h = hostallocs;
	while (h != NULL && h->p != p) h = h->next;
	int mapped = h != NULL && (h->flags & 2); // CU_MEMHOSTALLOC_DEVICEMAP
	pthread_mutex_unlock(&mu);
	if (!mapped) return INVALID_VALUE;
	*d = (CUdeviceptr)(uintptr_t)p;
	return SUCCESS;
}

static void put_log(char *buf, size_t size, const char *msg) {
	if (buf != NULL && size > 0) snprintf(buf, size, "%s", msg);
}

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals) {
	int r = need_ctx();
	if (r) return r;
	if (image == NULL || (n > 0 && (opts == NULL || vals == NULL))) return INVALID_VALUE;
	char *errlog = NULL, *infolog = NULL;
	size_t errsize = 0, infosize = 0;
	for (unsigned i = 0; i < n; i++) {
		switch (opts[i]) {
		case 3: infolog = vals[i]; break;                      // CU_JIT_INFO_LOG_BUFFER
		case 4: infosize = (size_t)(uintptr_t)vals[i]; break;  // its size
		case 5: errlog = vals[i]; break;                       // CU_JIT_ERROR_LOG_BUFFER
		case 6: errsize = (size_t)(uintptr_t)vals[i]; break;   // its size
		}
	}
	const char *s = image;
	if (strncmp(s, "//", 2) != 0 && s[0] != '.') {
		put_log(errlog, errsize, "fake jit: bad ptx");
		return INVALID_PTX;
	}
	put_log(infolog, infosize, "fake jit: ok");
	struct module *m = malloc(sizeof *m);
	if (m == NULL) return OUT_OF_MEMORY;
	m->magic = 0x4d4f44;
	*mod = m;
	return SUCCESS;
}

CUresult cuModuleUnload(void *mod) {
	int r = need_ctx();
	if (r) return r;
	struct module *m = mod;
	if (m == NULL || m->magic != 0x4d4f44) return INVALID_HANDLE;
	m->magic = 0;
	free(m);
	return SUCCESS;
}

CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
	int r = need_ctx();
	if (r) return r;
	struct module *m = mod;
	if (m == NULL || m->magic != 0x4d4f44) return INVALID_HANDLE;
	if (strcmp(name, fn_store.name) == 0) *f = &fn_store;
	else if (strcmp(name, fn_nop.name) == 0) *f = &fn_nop;
	else return NOT_FOUND;
	return SUCCESS;
}

static int max_blocks(int block, size_t smem) {
	if (block <= 0 || block > 1024 || smem > 48 * 1024) return 0;
	int n = 2048 / block;
	return n > 32 ? 32 : n;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int block, size_t smem) {
	int r = need_ctx();
	if (r) return r;
	if (f != &fn_store && f != &fn_nop) return INVALID_HANDLE;
	*n = max_blocks(block, smem);
	return SUCCESS;
}

static CUresult launch(int coop, void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		unsigned bz, unsigned smem, void *stream, void **params) {
	int r = need_ctx();
	if (r) return r;
	if (f != &fn_store && f != &fn_nop) return INVALID_HANDLE;
	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024) return INVALID_VALUE;
	if (coop && (unsigned long long)gx * gy * gz > (unsigned long long)max_blocks((int)(bx * by * bz), smem) * sms(current->dev))
		return COOPERATIVE_LAUNCH_TOO_LARGE;
	if (f == &fn_store && (params == NULL || params[0] == NULL || params[1] == NULL)) return INVALID_VALUE;
	struct stream *st = stream;
	if (st != NULL && st->capture != NULL) {
		struct node n = {.kind = NODE_KERNEL, .f = f};
		if (f == &fn_store) n.args[0] = *(uint64_t *)params[0], n.args[1] = *(uint64_t *)params[1];
		add_node(st, n);
		return SUCCESS;
	}
	pthread_mutex_lock(&mu);
	last_grid[0] = gx, last_grid[1] = gy, last_grid[2] = gz;
	last_block[0] = bx, last_block[1] = by, last_block[2] = bz;
	last_shared = smem;
	last_coop = coop;
	last_stream_nonzero = stream != NULL;
	launches++;
	pthread_mutex_unlock(&mu);
	if (f == &fn_store) {
		uint64_t *dst = (uint64_t *)(uintptr_t)(*(uint64_t *)params[0]);
		*dst = *(uint64_t *)params[1];
	}
	return SUCCESS;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned smem, void *stream, void **params, void **extra) {
	if (extra != NULL) return INVALID_VALUE;
	return launch(0, f, gx, gy, gz, bx, by, bz, smem, stream, params);
}

CUresult cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		unsigned bz, unsigned smem, void *stream, void **params) {
	return launch(1, f, gx, gy, gz, bx, by, bz, smem, stream, params);
}

CUresult cuStreamCreate(void **s, unsigned flags) {
	int r = need_ctx();
	if (r) return r;
	struct stream *st = calloc(1, sizeof *st);
	if (st == NULL) return OUT_OF_MEMORY;
	st->flags = flags;
	pthread_mutex_lock(&mu);
	last_stream_flags = (int)flags;
	pthread_mutex_unlock(&mu);
	*s = st;
	return SUCCESS;
}

CUresult cuStreamQuery(void *s) {
	int r = need_ctx();
	if (r) return r;
	if (s == NULL) return SUCCESS;
	struct stream *st = s;
	if (st->capture != NULL) {
		st->invalidated = 1;
		return STREAM_CAPTURE_UNSUPPORTED;
	}
	return st->queries++ == 0 ? NOT_READY : SUCCESS;
}

CUresult cuStreamSynchronize(void *s) {
	int r = need_ctx();
	if (r) return r;
	struct stream *st = s;
	if (st != NULL && st->capture != NULL) {
		st->invalidated = 1;
		return STREAM_CAPTURE_UNSUPPORTED;
	}
	return SUCCESS;
}

CUresult cuStreamDestroy_v2(void *s) {
	int r = need_ctx();
	if (r) return r;
	if (s == NULL) return INVALID_HANDLE;
	free(((struct stream *)s)->capture);
	free(s);
	return SUCCESS;
}

CUresult cuEventCreate(void **e, unsigned flags) {
	int r = need_ctx();
	if (r) return r;
	(void)flags;
	struct event *ev = calloc(1, sizeof *ev);
	if (ev == NULL) return OUT_OF_MEMORY;
	*e = ev;
	return SUCCESS;
}

CUresult cuEventRecord(void *e, void *s) {
	int r = need_ctx();
	if (r) return r;
	(void)s;
	struct event *ev = e;
	if (ev == NULL) return INVALID_HANDLE;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ev->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
	ev->recorded = 1;
	return SUCCESS;
}

CUresult cuEventSynchronize(void *e) {
	int r = need_ctx();
	if (r) return r;
	return e == NULL ? INVALID_HANDLE : SUCCESS;
}

CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
	int r = need_ctx();
	if (r) return r;
	struct event *a = start, *b = end;
	if (a == NULL || b == NULL || !a->recorded || !b->recorded) return INVALID_HANDLE;
	*ms = (float)(b->ms - a->ms);
	return SUCCESS;
}

CUresult cuEventDestroy_v2(void *e) {
	int r = need_ctx();
	if (r) return r;
	if (e == NULL) return INVALID_HANDLE;
	free(e);
	return SUCCESS;
}

#ifndef FAKECUDA_NOGRAPH
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
	int r = need_ctx();
	if (r) return r;
	struct stream *st = s;
	if (st == NULL || mode < 0 || mode > 2) return INVALID_VALUE; // the legacy stream cannot capture
	if (st->capture != NULL) return ILLEGAL_STATE;
	st->capture = calloc(1, sizeof *st->capture);
	if (st->capture == NULL) return OUT_OF_MEMORY;
	st->capture->magic = GRAPH_MAGIC;
	st->invalidated = 0;
	pthread_mutex_lock(&mu);
	last_capture_mode = mode;
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

CUresult cuStreamEndCapture(void *s, void **graph) {
	int r = need_ctx();
	if (r) return r;
	struct stream *st = s;
	if (st == NULL || graph == NULL) return INVALID_VALUE;
	if (st->capture == NULL) return ILLEGAL_STATE;
	struct graph *g = st->capture;
	st->capture = NULL;
	if (st->invalidated) {
		free(g);
		*graph = NULL;
		return STREAM_CAPTURE_INVALIDATED;
	}
	pthread_mutex_lock(&mu);
	live_graphs++;
	pthread_mutex_unlock(&mu);
	*graph = g;
	return SUCCESS;
}

static CUresult instantiate(void **exec, void *graph, int how) {
	int r = need_ctx();
	if (r) return r;
	struct graph *g = graph;
	if (exec == NULL || g == NULL || g->magic != GRAPH_MAGIC) return INVALID_VALUE;
	struct graph *e = malloc(sizeof *e);
	if (e == NULL) return OUT_OF_MEMORY;
	*e = *g; // an exec is independent of its graph
	e->magic = EXEC_MAGIC;
	pthread_mutex_lock(&mu);
	live_graphs++;
	last_instantiate = how;
	last_exec_nodes = e->n;
	pthread_mutex_unlock(&mu);
	*exec = e;
	return SUCCESS;
}

#ifndef FAKECUDA_GRAPH_V2
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
	if (flags != 0) return INVALID_VALUE;
	return instantiate(exec, graph, 1);
}
#endif

CUresult cuGraphInstantiate_v2(void **exec, void *graph, void **errNode, char *log, size_t logSize) {
	if (errNode != NULL) *errNode = NULL;
	CUresult r = instantiate(exec, graph, 2);
	if (log != NULL && logSize > 0) snprintf(log, logSize, "%s", r == SUCCESS ? "" : "fake: instantiate failed");
	return r;
}

CUresult cuGraphLaunch(void *exec, void *stream) {
	int r = need_ctx();
	if (r) return r;
	struct graph *e = exec;
	if (e == NULL || e->magic != EXEC_MAGIC) return INVALID_HANDLE;
	(void)stream;
	for (int i = 0; i < e->n; i++) {
		struct node *n = &e->nodes[i];
		if (n->kind == NODE_COPY) memcpy(n->dst, n->src, n->n);
		else if (n->f == &fn_store) *(uint64_t *)(uintptr_t)n->args[0] = n->args[1];
	}
	pthread_mutex_lock(&mu);
	graph_launches++;
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

static CUresult destroy(void *h, int magic) {
	int r = need_ctx();
	if (r) return r;
	struct graph *g = h;
	if (g == NULL || g->magic != magic) return INVALID_VALUE;
	g->magic = 0;
	free(g);
	pthread_mutex_lock(&mu);
	live_graphs--;
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

CUresult cuGraphExecDestroy(void *exec) { return destroy(exec, EXEC_MAGIC); }
CUresult cuGraphDestroy(void *graph) { return destroy(graph, GRAPH_MAGIC); }
#endif
