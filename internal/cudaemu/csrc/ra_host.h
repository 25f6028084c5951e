// ra_host.h: the one shim that lets the system C++ compiler build the device
// code (kernels/cuda/ringactor.cuh and the stage .cu files, the same text
// NVRTC compiles) for the emulated driver. It is force-included (-include)
// before that code and defines RA_HOST, which selects ringactor.cuh's host
// seam: C++ acquire/release atomics, CLOCK_REALTIME for %globaltimer, and
// nanosleep for __nanosleep.
//
// A kernel runs as a block of ONE thread: threadIdx.x == 0, blockDim.x == 1.
// The loop is written for any block size: every per-thread loop strides by
// blockDim.x from threadIdx.x, and work only thread 0 does is guarded by
// threadIdx.x == 0, so one thread does all of it, in the same order a GPU's
// thread 0 and its strides would. Barriers (__syncthreads) then have nothing
// to wait for, and __shared__ variables are the thread's own locals.
#ifndef RA_HOST_H
#define RA_HOST_H

#define RA_HOST 1

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define __global__
#define __device__ inline
#define __forceinline__
#define __shared__

struct ra_host_dim3 {
    unsigned x, y, z;
};
static const ra_host_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0};
static const ra_host_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};

inline void __syncthreads() {}

template <class T>
inline T min(T a, T b) { return b < a ? b : a; }
template <class T>
inline T max(T a, T b) { return a < b ? b : a; }

// CUDA's bit-cast intrinsics.
inline float __int_as_float(int i) {
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}
inline int __float_as_int(float f) {
    int i;
    memcpy(&i, &f, sizeof i);
    return i;
}

// %globaltimer: ns since the epoch, as the GPU's timer reads after the
// driver sets it from the host clock.
inline unsigned long long ra_host_clock_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

// __nanosleep: the kernel's backoff between polls. The OS rounds a short
// sleep up (timer slack, tens of microseconds), which keeps idle emulated
// kernels from eating a small machine's cores.
inline void ra_host_sleep_ns(unsigned ns) {
    struct timespec ts = {0, (long)ns};
    nanosleep(&ts, 0);
}

#endif  // RA_HOST_H
