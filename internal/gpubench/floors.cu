// floors.cu: bench-gpu's floors and microbenchmarks (internal/gpubench,
// floors.go), compiled by NVRTC at run time like a user stage and, over
// the emulated driver, built for the host (cuda/hostbuild) from this same
// source. Every kernel is one thread, named *_ring and takes the ring
// kernels' argument block (the emulated driver builds only those), of
// which it reads two words:
//   RA_ARG_OFF_CTRL    H: mapped pinned host memory (gb_* word offsets)
//   RA_ARG_OFF_PARAMS  D: device memory (gd_* word offsets)
// What it measures goes to D's samples (copied out afterwards), so the
// timed loop writes no host memory but the flags it measures.
#include "ringactor.cuh"

// H, u64 words, each flag on its own 128-byte line.
#define GB_PING 0    // host -> device: the round k the host asks for
#define GB_PONG 16   // device -> host: the round k answered
#define GB_N 32      // rounds or samples
#define GB_MODE 33   // which microbenchmark (GB_M_*)
#define GB_ARG 34    // outstanding stores before it, or ns to sleep
#define GB_DONE 48   // the kernel ended: 1
#define GB_WORD 64   // a host-memory word the load microbenchmarks read
// D, u64 words.
#define GD_A 0       // device ping-pong: A's flag
#define GD_B 16      // B's flag
#define GD_CYC 24    // cycles and ns over the whole run (clock64, globaltimer)
#define GD_NS 25
#define GD_TARGET 32     // the word the ordered stores write
#define GD_SCRATCH 48    // 32 outstanding stores, a line apart
#define GD_SAMPLES 1024  // the samples: cycles (micro) or ns (ping-pongs)

#define GB_M_ST_REL_SYS 0
#define GB_M_ST_REL_GPU 1
#define GB_M_FENCE_SYS 2
#define GB_M_FENCE_GPU 3
#define GB_M_LD_ACQ_SYS 4
#define GB_M_LD_VOLATILE 5
#define GB_M_NANOSLEEP 6

// The ordered operations, one per call: inline PTX on a GPU, the seams'
// C++ atomics in the host build (ra_host.h), where the relaxed
// accesses are the seams too.
#if defined(RA_HOST)
__device__ __forceinline__ ra_u64 gb_clock() { return ra_host_clock_ns(); }
__device__ __forceinline__ ra_u64 gb_ld_relaxed(const ra_u64 *p, bool sys) { ra_host_seam(p, sys); return __atomic_load_n(p, __ATOMIC_RELAXED); }
__device__ __forceinline__ void gb_st_relaxed(ra_u64 *p, ra_u64 v, bool sys) { ra_host_seam(p, sys); __atomic_store_n(p, v, __ATOMIC_RELAXED); }
__device__ __forceinline__ ra_u64 gb_ld_volatile(const ra_u64 *p) { return gb_ld_relaxed(p, true); }
__device__ __forceinline__ void gb_sleep(unsigned ns) { ra_host_sleep_ns(ns); }
#else
__device__ __forceinline__ ra_u64 gb_clock() { return clock64(); }
__device__ __forceinline__ ra_u64 gb_ld_relaxed(const ra_u64 *p, bool sys) {
    ra_u64 v;
    if (sys) asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void gb_st_relaxed(ra_u64 *p, ra_u64 v, bool sys) {
    if (sys) asm volatile("st.relaxed.sys.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
    else asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ ra_u64 gb_ld_volatile(const ra_u64 *p) {
    ra_u64 v;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void gb_sleep(unsigned ns) { __nanosleep(ns); }
#endif

__device__ __forceinline__ ra_u64 *gb_h(const ra_ring_args &a) { return (ra_u64 *)ra_arg_ptr(a, RA_ARG_OFF_CTRL); }
__device__ __forceinline__ ra_u64 *gb_d(const ra_ring_args &a) { return (ra_u64 *)ra_arg_ptr(a, RA_ARG_OFF_PARAMS); }

// The host's round k (k = 1..n), or 0 once it says stop (~0).
__device__ __forceinline__ ra_u64 gb_wait(const ra_u64 *p, ra_u64 k) {
    for (;;) {
        const ra_u64 v = gb_ld_relaxed(p, true);
        if (v == ~0ull) return 0;
        if (v >= k) return v;
    }
}

// floor/mapped-pingpong: the host stores round k into PING; this thread
// sees it and stores k into PONG; the host times the round trip.
extern "C" __global__ void ra_gb_mapped_ring(ra_ring_args a) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    ra_u64 *h = gb_h(a);
    const ra_u64 n = gb_ld_relaxed(h + GB_N, true);
    for (ra_u64 k = 1; k <= n; k++) {
        if (!gb_wait(h + GB_PING, k)) break;
        gb_st_relaxed(h + GB_PONG, k, true);
    }
    ra_store_release_sys(h + GB_DONE, 1);
}

// floor/device-pingpong: A stores round k into D's A word and waits for B
// to store k into the B word, timing each round trip on the device
// (globaltimer ns); the hop is half of one. Both are one thread of their
// own kernel on the same GPU, the flags in its memory at GPU scope.
extern "C" __global__ void ra_gb_devping_a_ring(ra_ring_args a) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    ra_u64 *h = gb_h(a), *d = gb_d(a);
    const ra_u64 n = gb_ld_relaxed(h + GB_N, true);
    for (ra_u64 k = 1; k <= n; k++) {
        const ra_u64 t0 = ra_globaltimer();
        gb_st_relaxed(d + GD_A, k, false);
        while (gb_ld_relaxed(d + GD_B, false) < k) {
        }
        d[GD_SAMPLES + k - 1] = ra_globaltimer() - t0;
    }
    ra_store_release_sys(h + GB_DONE, 1);
}
extern "C" __global__ void ra_gb_devping_b_ring(ra_ring_args a) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    ra_u64 *h = gb_h(a), *d = gb_d(a);
    const ra_u64 n = gb_ld_relaxed(h + GB_N, true);
    for (ra_u64 k = 1; k <= n; k++) {
        while (gb_ld_relaxed(d + GD_A, false) < k) {
        }
        gb_st_relaxed(d + GD_B, k, false);
    }
}

// micro/...: n samples of one ordered operation (GB_MODE) after GB_ARG
// plain stores still outstanding (each to its own line; the sample's own
// store is drained by a GPU-scope fence outside the timed part), in cycles
// (clock64) between the clock reads around it; the loads are read back
// through a dependent add before the second clock read. nanosleep's
// samples are globaltimer ns around __nanosleep(GB_ARG). GD_CYC and GD_NS
// are the cycles and ns of the whole run: their ratio converts cycles.
extern "C" __global__ void ra_gb_micro_ring(ra_ring_args a) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    ra_u64 *h = gb_h(a), *d = gb_d(a);
    const ra_u64 n = gb_ld_relaxed(h + GB_N, true);
    const ra_u64 mode = gb_ld_relaxed(h + GB_MODE, true);
    const ra_u64 arg = gb_ld_relaxed(h + GB_ARG, true);
    const ra_u64 stores = arg < 32 ? arg : 32;
    ra_u64 sink = 0;
    const ra_u64 c0 = gb_clock(), n0 = ra_globaltimer();
    for (ra_u64 i = 0; i < n; i++) {
        if (mode <= GB_M_FENCE_GPU)
            for (ra_u64 j = 0; j < stores; j++) d[GD_SCRATCH + 16 * j] = i + j;  // plain stores, left outstanding
        ra_u64 t0, t1;
        switch (mode) {
        case GB_M_ST_REL_SYS:
            t0 = gb_clock(); ra_store_release_sys(d + GD_TARGET, i); t1 = gb_clock();
            break;
        case GB_M_ST_REL_GPU:
            t0 = gb_clock(); ra_store_release_gpu(d + GD_TARGET, i); t1 = gb_clock();
            break;
        case GB_M_FENCE_SYS:
            t0 = gb_clock(); ra_fence_acq_rel(true); t1 = gb_clock();
            break;
        case GB_M_FENCE_GPU:
            t0 = gb_clock(); ra_fence_acq_rel(false); t1 = gb_clock();
            break;
        case GB_M_LD_ACQ_SYS:
            t0 = gb_clock(); sink += ra_load_acquire_sys(h + GB_WORD); if (sink == 1) d[GD_TARGET] = sink; t1 = gb_clock();
            break;
        case GB_M_LD_VOLATILE:
            t0 = gb_clock(); sink += gb_ld_volatile(h + GB_WORD); if (sink == 1) d[GD_TARGET] = sink; t1 = gb_clock();
            break;
        default:  // GB_M_NANOSLEEP
            t0 = ra_globaltimer(); gb_sleep((unsigned)arg); t1 = ra_globaltimer();
            break;
        }
        d[GD_SAMPLES + i] = t1 - t0;
        ra_fence_acq_rel(false);  // the sample's store is not outstanding at the next one's op
    }
    d[GD_CYC] = gb_clock() - c0;
    d[GD_NS] = ra_globaltimer() - n0;
    ra_store_release_sys(h + GB_DONE, 1);
}
