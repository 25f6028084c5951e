// nocontext.c: calls the emulated driver (argv[1]) as a program that forgot
// to make a context current would, then as one that did, and prints
// "<result without> <violations counted> <result with>".
#include <dlfcn.h>
#include <stdio.h>

typedef int (*init_fn)(unsigned);
typedef int (*attr_fn)(int *, int, int);
typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*retain_fn)(void **, int);
typedef int (*set_fn)(void *);

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    init_fn init = (init_fn)dlsym(h, "cuInit");
    attr_fn attr = (attr_fn)dlsym(h, "cuDeviceGetAttribute");
    alloc_fn alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    retain_fn retain = (retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    set_fn set = (set_fn)dlsym(h, "cuCtxSetCurrent");
    if (!init || !attr || !alloc || !retain || !set || init(0) != 0) return 2;
    int before = 0, after = 0;
    unsigned long long p;
    attr(&before, 9100, 0);
    int without = alloc(&p, 64);
    attr(&after, 9100, 0);
    void *ctx;
    if (retain(&ctx, 0) != 0 || set(ctx) != 0) return 2;
    int with = alloc(&p, 64);
    printf("%d %d %d\n", without, after - before, with);
    return 0;
}
