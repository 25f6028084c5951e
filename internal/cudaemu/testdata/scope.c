// scope.c: drives the emulated driver's (argv[1]) scope and placement
// rules and prints one line per case: "<name> <result> <violations>".
// Run with RINGACTOR_EMU_DEVICES=2 and RINGACTOR_EMU_PEERS=all.
//
// Launch rules: a ring kernel (ra_identity_ring, resolved from a PTX text
// that only names it) launched on device 0 with one bad pointer in its
// ra_ring_args is refused (800, CUDA_ERROR_NOT_PERMITTED) before it runs.
// Seam rules: cudaemu_test_seam plays a kernel thread calling
// ra_host_seam.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int (*init_fn)(unsigned);
typedef int (*attr_fn)(int *, int, int);
typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*hostalloc_fn)(void **, size_t, unsigned);
typedef int (*retain_fn)(void **, int);
typedef int (*set_fn)(void *);
typedef int (*load_fn)(void **, const void *, unsigned, int *, void **);
typedef int (*getfn_fn)(void **, void *, const char *);
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
typedef long long (*seam_fn)(int, int, const void *, int);
typedef void (*seam_end_fn)(int);

#define ARG_SIZE 0x100
#define OFF_CTRL 0x0
#define OFF_IN 0x8
#define OFF_OUT 0x88
#define OFF_TRACE 0xc8
#define OFF_NUM_IN 0xe8
#define OFF_NUM_OUT 0xf4

static attr_fn attr;
static launch_fn launch;
static void *fn;

static int violations(void) {
    int v = 0;
    attr(&v, 9100, 0);
    return v;
}

// args: a control block, an in-link and a trace ring that are all device 0's
// own, and one out-link: out.
static void ring_args(unsigned char *a, unsigned long long own, unsigned long long pinned, unsigned long long out) {
    memset(a, 0, ARG_SIZE);
    memcpy(a + OFF_CTRL, &pinned, 8);
    memcpy(a + OFF_IN, &own, 8);
    memcpy(a + OFF_TRACE, &pinned, 8);
    memcpy(a + OFF_OUT, &out, 8);
    unsigned one = 1;
    memcpy(a + OFF_NUM_IN, &one, 4);
    memcpy(a + OFF_NUM_OUT, &one, 4);
}

static void try_launch(const char *name, unsigned long long own, unsigned long long pinned, unsigned long long out) {
    unsigned char a[ARG_SIZE];
    ring_args(a, own, pinned, out);
    void *params[] = {a};
    int before = violations();
    int r = launch(fn, 1, 1, 1, 32, 1, 1, 0, 0, params, 0);
    printf("%s %d %d\n", name, r, violations() - before);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    init_fn init = (init_fn)dlsym(h, "cuInit");
    attr = (attr_fn)dlsym(h, "cuDeviceGetAttribute");
    alloc_fn alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    hostalloc_fn hostalloc = (hostalloc_fn)dlsym(h, "cuMemHostAlloc");
    retain_fn retain = (retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    set_fn set = (set_fn)dlsym(h, "cuCtxSetCurrent");
    load_fn load = (load_fn)dlsym(h, "cuModuleLoadDataEx");
    getfn_fn getfn = (getfn_fn)dlsym(h, "cuModuleGetFunction");
    launch = (launch_fn)dlsym(h, "cuLaunchKernel");
    seam_fn seam = (seam_fn)dlsym(h, "cudaemu_test_seam");
    seam_end_fn seam_end = (seam_end_fn)dlsym(h, "cudaemu_test_seam_end");
    if (!init || !attr || !alloc || !hostalloc || !retain || !set || !load || !getfn || !launch || !seam || !seam_end ||
        init(0) != 0)
        return 2;
    void *c0, *c1;
    if (retain(&c0, 0) != 0 || retain(&c1, 1) != 0) return 2;
    // Device 1's memory, and pinned memory of device 1's context.
    unsigned long long dev1;
    void *pin1, *port1;
    if (set(c1) != 0 || alloc(&dev1, 4096) != 0 || hostalloc(&pin1, 4096, 2) != 0 || hostalloc(&port1, 4096, 3) != 0) return 2;
    // Device 0's own.
    unsigned long long dev0;
    void *pin0;
    if (set(c0) != 0 || alloc(&dev0, 4096) != 0 || hostalloc(&pin0, 4096, 2) != 0) return 2;
    const char *ptx = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry ra_identity_ring(\n.param .align 8 .b8 a[256]\n)\n{ ret; }\n";
    void *mod;
    if (load(&mod, ptx, 0, 0, 0) != 0 || getfn(&fn, mod, "ra_identity_ring") != 0) return 2;
    unsigned long long own = dev0, pinned = (unsigned long long)(uintptr_t)pin0;
    static char not_allocated[4096];

    try_launch("peer-not-enabled", own, pinned, dev1);
    try_launch("pinned-of-another-context", own, pinned, (unsigned long long)(uintptr_t)pin1);
    try_launch("no-allocation", own, pinned, (unsigned long long)(uintptr_t)not_allocated);

    // The seam: kernel 1 runs on device 0, kernel 2 on device 1.
    int before = violations();
    long long ok = seam(1, 0, (void *)(uintptr_t)(dev0 + 64), 0) + seam(1, 0, (void *)(uintptr_t)(dev0 + 64), 1) +
                   seam(1, 0, pin0, 1) + seam(2, 1, (void *)(uintptr_t)(dev1 + 64), 1);
    printf("seam-allowed %lld %d\n", ok, violations() - before);
    printf("seam-gpu-on-host-memory %lld\n", seam(1, 0, pin0, 0));
    printf("seam-gpu-on-a-peer %lld\n", seam(1, 0, (void *)(uintptr_t)(dev1 + 128), 0));
    // Word dev0+256: kernel 1 (device 0) with .gpu scope, then kernel 2
    // (device 1) through the peer mapping with .sys: reported once; again,
    // not again.
    long long first = seam(1, 0, (void *)(uintptr_t)(dev0 + 256), 0);
    long long mixed = seam(2, 1, (void *)(uintptr_t)(dev0 + 256), 1);
    long long again = seam(2, 1, (void *)(uintptr_t)(dev0 + 256), 1) + seam(1, 0, (void *)(uintptr_t)(dev0 + 256), 0);
    printf("seam-gpu-word-shared-with-another-device %lld %lld %lld\n", first, mixed, again);
    // Once kernel 2 has ended, a new kernel on device 0 may use the word
    // with .gpu scope (an arena range reused by a later link).
    seam_end(2);
    seam_end(1);
    printf("seam-reused-after-the-other-ended %lld\n", seam(3, 0, (void *)(uintptr_t)(dev0 + 256), 0));

    printf("done\n");
    return 0;
}
