// symbols.c: prints, for each name after the library (argv[1]), the name
// and 1 when the library exports it, 0 when it does not.
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    for (int i = 2; i < argc; i++) printf("%s %d\n", argv[i], dlsym(h, argv[i]) != NULL);
    return 0;
}
