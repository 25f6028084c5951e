// cudaemu.h: what the emulated driver (cudaemu.cpp) and the generated
// table of host-built kernels (kernels.cpp, written by internal/cudaemu)
// share.
#ifndef CUDAEMU_H
#define CUDAEMU_H

#define CUDAEMU_MAX_PARAMS 16

// A kernel the emulator can run: its PTX entry name, the sizes of its
// parameters (cuLaunchKernel's kernelParams are copied at launch), and a
// function that runs it on the copies (ra_host_run_grid runs it as the
// launch's grid of blocks of threads).
struct cudaemu_kernel {
    const char *name;
    int nparams;
    unsigned param_size[CUDAEMU_MAX_PARAMS];
    void (*run)(void **params);
};

// The table, ended by an entry whose name is null.
extern "C" const cudaemu_kernel cudaemu_kernels[];

// ringkernel/cuda's clock-calibration kernel, written in cudaemu.cpp.
extern "C" void cudaemu_ra_clock(void **params);

// The kernels of the cuda package's test modules, written in cudaemu.cpp.
extern "C" void cudaemu_test_store(void **params);
extern "C" void cudaemu_test_nop(void **params);
extern "C" void cudaemu_test_wait(void **params);
extern "C" void cudaemu_test_args(void **params);

// What a user module is built with (cudaemu.cpp's cudaemu_module_source),
// generated into kernels.cpp by internal/cudaemu: the shim and this file,
// as the kernels of the table were built with them, and the compiler
// flags they were built with (null-terminated).
extern "C" const char cudaemu_shim_ra_host_h[];
extern "C" const char cudaemu_shim_cudaemu_h[];
extern "C" const char *const cudaemu_cxx_flags[];

#endif  // CUDAEMU_H
