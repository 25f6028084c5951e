// ringactor device-side helpers: link-queue access with the memory orders of
// the design (one place per rule), the global timer, and the stage signature.
// Plain CUDA C++ plus inline PTX; compiles with NVRTC 11.8 and newer.
#ifndef RINGACTOR_CUH
#define RINGACTOR_CUH

#include "ringactor_layout.h"

typedef unsigned int ra_u32;
typedef unsigned long long ra_u64;

// ---- memory order -------------------------------------------------------
// Queue words read by another agent (the host or a peer GPU) use .sys scope;
// words only this GPU reads may use .gpu. Publishing is a store-release,
// observing a load-acquire; nothing read-modify-writes across the link.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
__device__ __forceinline__ ra_u64 ra_load_acquire_sys(const ra_u64 *p) {
    ra_u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void ra_store_release_sys(ra_u64 *p, ra_u64 v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ ra_u64 ra_load_acquire_gpu(const ra_u64 *p) {
    ra_u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void ra_store_release_gpu(ra_u64 *p, ra_u64 v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
#else
// Before sm_70: volatile accesses fenced at system scope.
__device__ __forceinline__ ra_u64 ra_load_acquire_sys(const ra_u64 *p) {
    ra_u64 v = *(const volatile ra_u64 *)p;
    __threadfence_system();
    return v;
}
__device__ __forceinline__ void ra_store_release_sys(ra_u64 *p, ra_u64 v) {
    __threadfence_system();
    *(volatile ra_u64 *)p = v;
}
#define ra_load_acquire_gpu ra_load_acquire_sys
#define ra_store_release_gpu ra_store_release_sys
#endif

__device__ __forceinline__ ra_u64 ra_globaltimer() {
    ra_u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ void ra_backoff(unsigned *ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    __nanosleep(*ns);
#endif
    *ns = *ns < 1024u ? (*ns ? *ns * 2u : 32u) : 1024u;
}

// ---- queue --------------------------------------------------------------
struct ra_queue {
    unsigned char *base;   // region start, RA_Q_REGION_ALIGN aligned
    ra_u32 mask;           // capacity - 1
    ra_u32 slot_size;
};

__device__ __forceinline__ ra_u64 *ra_q_word(const ra_queue &q, unsigned off) {
    return (ra_u64 *)(q.base + off);
}
__device__ __forceinline__ unsigned char *ra_q_slot(const ra_queue &q, ra_u64 idx) {
    return q.base + RA_Q_OFF_SLOTS + (size_t)(idx & q.mask) * q.slot_size;
}

// Slot header accessors.
__device__ __forceinline__ ra_u32 ra_slot_len(const unsigned char *s) {
    return *(const ra_u32 *)(s + RA_SLOT_OFF_LEN);
}
__device__ __forceinline__ ra_u64 ra_slot_id(const unsigned char *s) {
    return *(const ra_u64 *)(s + RA_SLOT_OFF_ID);
}
__device__ __forceinline__ ra_u32 ra_slot_flags(const unsigned char *s) {
    return *(const ra_u32 *)(s + RA_SLOT_OFF_FLAGS);
}

// ---- stages -------------------------------------------------------------
// A stage function maps one message's float32 payload in[0..n) to out,
// returning the number of floats written (at most out_cap) or a negative
// error code (RA_STAGE_ERR_*), which dead-letters that message. params are
// the stage's parameters; state is a stateful stage's own memory (stateful
// stages run as one consumer and see messages in order).
#define RA_STAGE(name) \
    extern "C" __device__ int name(const float *params, float *state, const float *in, int n, float *out, int out_cap)

#define RA_STAGE_ERR_OUTPUT_TOO_SMALL (-1)
#define RA_STAGE_ERR_DOMAIN (-2)

// RA_STAGE_TEST defines a kernel applying a stage to an array, one message of
// n floats, so device and Go references can be compared element by element.
#define RA_STAGE_TEST(name) \
    extern "C" __global__ void name##_test(const float *params, float *state, const float *in, int n, float *out, int out_cap, int *ret) { \
        if (blockIdx.x == 0 && threadIdx.x == 0) *ret = name(params, state, in, n, out, out_cap); \
    }

#endif // RINGACTOR_CUH
