// ringactor device-side helpers: link-queue access with the memory orders of
// docs/ARCHITECTURE.md §2 (one place per rule), the timer, and the stage signature.
// Plain CUDA C++ plus inline PTX; compiles with NVRTC 11.8 and newer.
#ifndef RINGACTOR_CUH
#define RINGACTOR_CUH

#include "ringactor_layout.h"
#include "ringactor_types.h"

typedef unsigned int ra_u32;
typedef unsigned long long ra_u64;

// ---- memory order: the seams ---------------------------------------------
// Every access to a word another agent reads or writes (the host, a peer
// GPU, or another kernel) goes through one of these functions, never a bare
// volatile: queue indices, the control block, counters, link headers.
// Words read by the host or a peer GPU use .sys scope; words only this GPU
// reads may use .gpu. Publishing is a release (a release store, or a
// release fence followed by relaxed stores), observing an acquire load;
// nothing read-modify-writes across a link. Slot bytes are plain data,
// covered by the index that publishes them (docs/ARCHITECTURE.md §2.2).
//
//   ra_load_acquire_{sys,gpu}[32]   ld.acquire.{sys,gpu}
//   ra_store_release_{sys,gpu}[32]  st.release.{sys,gpu}
//   ra_load_relaxed_sys[32]         ld.relaxed.sys: a word no data hangs on
//   ra_store_relaxed_sys[32]        st.relaxed.sys: likewise, or ordered by
//                                   a later release (counters before head)
//   ra_fence_acq_rel(sys)           fence.acq_rel.{sys,gpu}
//   ra_store_fenced(p, v, sys)      st.relaxed.{sys,gpu} after ra_fence_acq_rel,
//                                   with no access to covered data between:
//                                   with the fence, a release of p (PTX §8.8)
//
// Three builds of the same rules: sm_70 and later (PTX at the scope asked
// for), earlier GPUs (volatile plus a fence), and the host build (RA_HOST:
// the emulated driver and the ThreadSanitizer harness, internal/cudaemu),
// where each is a C++ atomic at the same order and calls ra_host_seam
// first (the emulator's scope checker). A fenced store is a release store
// there: GCC's ThreadSanitizer does not model fences, and the release
// store is what the fence-plus-store pair promises.
#if defined(RA_HOST)
__device__ __forceinline__ ra_u64 ra_load_acquire_sys(const ra_u64 *p) { ra_host_op(p, 1, RA_HOST_LD_ACQ, 0); return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
__device__ __forceinline__ void ra_store_release_sys(ra_u64 *p, ra_u64 v) { ra_host_op(p, 1, RA_HOST_ST_REL, v); __atomic_store_n(p, v, __ATOMIC_RELEASE); }
__device__ __forceinline__ ra_u64 ra_load_acquire_gpu(const ra_u64 *p) { ra_host_op(p, 0, RA_HOST_LD_ACQ, 0); return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
__device__ __forceinline__ void ra_store_release_gpu(ra_u64 *p, ra_u64 v) { ra_host_op(p, 0, RA_HOST_ST_REL, v); __atomic_store_n(p, v, __ATOMIC_RELEASE); }
__device__ __forceinline__ ra_u32 ra_load_acquire_sys32(const ra_u32 *p) { ra_host_op(p, 1, RA_HOST_LD_ACQ, 0); return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
__device__ __forceinline__ void ra_store_release_sys32(ra_u32 *p, ra_u32 v) { ra_host_op(p, 1, RA_HOST_ST_REL, v); __atomic_store_n(p, v, __ATOMIC_RELEASE); }
__device__ __forceinline__ ra_u64 ra_load_relaxed_sys(const ra_u64 *p) { ra_host_op(p, 1, RA_HOST_LD_RLX, 0); return __atomic_load_n(p, __ATOMIC_RELAXED); }
__device__ __forceinline__ ra_u32 ra_load_relaxed_sys32(const ra_u32 *p) { ra_host_op(p, 1, RA_HOST_LD_RLX, 0); return __atomic_load_n(p, __ATOMIC_RELAXED); }
__device__ __forceinline__ void ra_store_relaxed_sys(ra_u64 *p, ra_u64 v) { ra_host_op(p, 1, RA_HOST_ST_RLX, v); __atomic_store_n(p, v, __ATOMIC_RELAXED); }
__device__ __forceinline__ void ra_store_relaxed_sys32(ra_u32 *p, ra_u32 v) { ra_host_op(p, 1, RA_HOST_ST_RLX, v); __atomic_store_n(p, v, __ATOMIC_RELAXED); }
__device__ __forceinline__ void ra_fence_acq_rel(bool sys) { ra_host_fence(sys); __atomic_thread_fence(__ATOMIC_ACQ_REL); }
__device__ __forceinline__ void ra_store_fenced(ra_u64 *p, ra_u64 v, bool sys) { ra_host_op(p, sys, RA_HOST_ST_FENCED, v); __atomic_store_n(p, v, __ATOMIC_RELEASE); }
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
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
__device__ __forceinline__ ra_u32 ra_load_acquire_sys32(const ra_u32 *p) {
    ra_u32 v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void ra_store_release_sys32(ra_u32 *p, ra_u32 v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ ra_u64 ra_load_relaxed_sys(const ra_u64 *p) {
    ra_u64 v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ ra_u32 ra_load_relaxed_sys32(const ra_u32 *p) {
    ra_u32 v;
    asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void ra_store_relaxed_sys(ra_u64 *p, ra_u64 v) {
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void ra_store_relaxed_sys32(ra_u32 *p, ra_u32 v) {
    asm volatile("st.relaxed.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void ra_fence_acq_rel(bool sys) {
    if (sys) asm volatile("fence.acq_rel.sys;" ::: "memory");
    else asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
__device__ __forceinline__ void ra_store_fenced(ra_u64 *p, ra_u64 v, bool sys) {
    if (sys) asm volatile("st.relaxed.sys.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
    else asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
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
__device__ __forceinline__ ra_u32 ra_load_acquire_sys32(const ra_u32 *p) {
    ra_u32 v = *(const volatile ra_u32 *)p;
    __threadfence_system();
    return v;
}
__device__ __forceinline__ void ra_store_release_sys32(ra_u32 *p, ra_u32 v) {
    __threadfence_system();
    *(volatile ra_u32 *)p = v;
}
#define ra_load_acquire_gpu ra_load_acquire_sys
#define ra_store_release_gpu ra_store_release_sys
__device__ __forceinline__ ra_u64 ra_load_relaxed_sys(const ra_u64 *p) { return *(const volatile ra_u64 *)p; }
__device__ __forceinline__ ra_u32 ra_load_relaxed_sys32(const ra_u32 *p) { return *(const volatile ra_u32 *)p; }
__device__ __forceinline__ void ra_store_relaxed_sys(ra_u64 *p, ra_u64 v) { *(volatile ra_u64 *)p = v; }
__device__ __forceinline__ void ra_store_relaxed_sys32(ra_u32 *p, ra_u32 v) { *(volatile ra_u32 *)p = v; }
__device__ __forceinline__ void ra_fence_acq_rel(bool sys) { (void)sys; __threadfence_system(); }
__device__ __forceinline__ void ra_store_fenced(ra_u64 *p, ra_u64 v, bool sys) { (void)sys; *(volatile ra_u64 *)p = v; }
#endif

// Scope by who else reads the word: sys when the host or a peer GPU does.
__device__ __forceinline__ ra_u64 ra_load_acquire(const ra_u64 *p, bool sys) {
    return sys ? ra_load_acquire_sys(p) : ra_load_acquire_gpu(p);
}
__device__ __forceinline__ void ra_store_release(ra_u64 *p, ra_u64 v, bool sys) {
    if (sys) ra_store_release_sys(p, v); else ra_store_release_gpu(p, v);
}

// ra_block_or ORs v into a word of the block's shared memory, which several
// threads may do at once; they read it only after a barrier.
#if defined(RA_HOST)
__device__ __forceinline__ void ra_block_or(ra_u32 *p, ra_u32 v) { __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
#else
__device__ __forceinline__ void ra_block_or(ra_u32 *p, ra_u32 v) { atomicOr(p, v); }
#endif

// Block-shared data: __shared__ on a GPU; the host build places it in the
// block's arena (ra_host.h), so every thread of one block sees one copy.
#if defined(RA_HOST)
#define RA_SHARED(type, name) \
    static const char ra_shared_key_##name = 0; \
    type &name = ra_host_shared<type>(&ra_shared_key_##name)
#else
#define RA_SHARED(type, name) __shared__ type name
#endif

__device__ __forceinline__ ra_u64 ra_globaltimer() {
#if defined(RA_HOST)
    return ra_host_clock_ns();
#else
    ra_u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#endif
}

// ra_clock_offset reads the host's current estimate of host ns minus
// device globaltimer ns from the control block. Every time a kernel writes
// is globaltimer + this offset: the wire carries host time only (the host
// stamps enqueue times with its own clock).
__device__ __forceinline__ ra_u64 ra_clock_offset(const unsigned char *ctrl) {
    return ra_load_relaxed_sys((const ra_u64 *)(ctrl + RA_CB_OFF_CLOCK_OFFSET));
}

// Idle backoff: up to about half a microsecond between polls, so a message
// waits little for an idle kernel, and an idle kernel polling a link in
// host memory reads a few tens of MB/s over PCIe.
__device__ __forceinline__ void ra_backoff(unsigned *ns) {
#if defined(RA_HOST)
    ra_host_sleep_ns(*ns);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    __nanosleep(*ns);
#endif
    *ns = *ns < 512u ? (*ns ? *ns * 2u : 32u) : 512u;
}

// ---- barrier ------------------------------------------------------------
// The flag-array barrier of package barrier (layout RA_BAR_*): each
// participant owns one u64 generation word on its own line; arriving at
// generation g is a .sys-scope store-release of g into that word, and
// waiting is .sys-scope load-acquires of every word until all are >= g.
// Stores and loads only, no read-modify-write, so one flag array spans
// GPUs and the host (portable pinned memory). The ring loop's CmdBarrier
// (ra_loop::barrier_*) and ra_barrier.cuh's blocking wait use these.

// ra_barrier_word is participant i's generation word in the flag array at
// flags (the region's base, RA_Q_REGION_ALIGN aligned).
__device__ __forceinline__ ra_u64 *ra_barrier_word(unsigned char *flags, ra_u32 i) {
    return (ra_u64 *)(flags + RA_BAR_HEADER_SIZE + (size_t)i * RA_BAR_LINE_SIZE + RA_BAR_OFF_GENERATION);
}

// ra_barrier_check reports whether flags holds a barrier of this layout for
// n participants. Check once per use; a kernel must not trust memory.
__device__ __forceinline__ bool ra_barrier_check(const unsigned char *flags, ra_u32 n) {
    return ra_load_acquire_sys32((const ra_u32 *)(flags + RA_BAR_OFF_MAGIC)) == RA_BAR_MAGIC &&
           (ra_load_relaxed_sys32((const ra_u32 *)(flags + (RA_BAR_OFF_VERSION & ~3u))) >> (8 * (RA_BAR_OFF_VERSION & 3u)) & 0xffffu) == RA_BAR_VERSION &&
           ra_load_relaxed_sys32((const ra_u32 *)(flags + RA_BAR_OFF_PARTICIPANTS)) == n &&
           n >= 1 && n <= RA_BAR_MAX_PARTICIPANTS;
}

// ra_barrier_arrive: participant me reached generation gen. A store-release
// at system scope: every write the calling thread made (or observed, e.g.
// through a __syncthreads before the call) is visible to whoever sees gen.
// gen must be greater than me's last generation.
__device__ __forceinline__ void ra_barrier_arrive(unsigned char *flags, ra_u32 me, ra_u64 gen) {
    ra_store_release_sys(ra_barrier_word(flags, me), gen);
}

// ra_barrier_poll: one round of a wait for all n participants to reach
// gen. Words below *seen have reached it (words only grow); it advances
// *seen over the words that have now and reports whether all have.
__device__ __forceinline__ bool ra_barrier_poll(unsigned char *flags, ra_u32 n, ra_u64 gen, ra_u32 *seen) {
    while (*seen < n && ra_load_acquire_sys(ra_barrier_word(flags, *seen)) >= gen) (*seen)++;
    return *seen >= n;
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

// A stage that routes (an op with Ports) also writes the out-link its
// result goes down, 0 to ports-1, to *port.
#define RA_PORT_STAGE(name) \
    extern "C" __device__ int name(const float *params, float *state, const float *in, int n, float *out, int out_cap, int *port)

// A typed stage (an op registered with kernels.Op.Typed) sees the message's
// type id (RA_TYPE_*, or a user type's) and its len payload bytes, writes
// its result's bytes to out (at most out_cap) and its type id to
// *out_type (and, for an op with Ports, its out-link to *port), and
// returns the result's length in bytes or a negative error code; a type it
// does not take is RA_CODE_WRONG_TYPE. A fixed-layout type's payload is
// its struct (ringactor_types.h), 8-byte aligned in the slot.
#define RA_TYPED_STAGE(name) \
    extern "C" __device__ int name(const float *params, float *state, ra_u32 in_type, const unsigned char *in, int len, \
                                   ra_u32 *out_type, unsigned char *out, int out_cap, int *port)

// A buffer bound to a stage (ringkernel.Stage.Buffers): its device
// address and its size in bytes.
struct ra_buf {
    unsigned char *ptr;
    unsigned long long size;
};

// A stage that reads or writes the buffers bound to it (an op registered
// with kernels.Op.GoBuf) gets them, nbufs of them (its Op.Buffers), in the
// order the stage binds them; otherwise it is a RA_STAGE. A buffer may be
// another device's (by peer access). Writes to a bound buffer are seen by
// later messages of a stateful stage; a stateless stage's threads run
// concurrently, so they must not write the same bytes.
#define RA_BUF_STAGE(name) \
    extern "C" __device__ int name(const float *params, float *state, const ra_buf *bufs, int nbufs, const float *in, int n, \
                                   float *out, int out_cap)

#define RA_STAGE_ERR_OUTPUT_TOO_SMALL (-1)
#define RA_STAGE_ERR_DOMAIN (-2)

// RA_STAGE_TEST defines a kernel applying a stage to an array, one message of
// n floats, so device and Go references can be compared element by element.
#define RA_STAGE_TEST(name) \
    extern "C" __global__ void name##_test(const float *params, float *state, const float *in, int n, float *out, int out_cap, int *ret) { \
        if (blockIdx.x == 0 && threadIdx.x == 0) *ret = name(params, state, in, n, out, out_cap); \
    }
// RA_PORT_STAGE_TEST likewise for a routing stage, whose result has n
// floats: *ret is the port it chose, or its negative error.
#define RA_PORT_STAGE_TEST(name) \
    extern "C" __global__ void name##_test(const float *params, float *state, const float *in, int n, float *out, int out_cap, int *ret) { \
        if (blockIdx.x == 0 && threadIdx.x == 0) { int p = 0; int r = name(params, state, in, n, out, out_cap, &p); *ret = r < 0 ? r : p; } \
    }

// RA_TYPED_STAGE_TEST likewise for a typed stage, in the same parameter
// shape: in and out are bytes, n and out_cap byte counts, and ret[0] is
// the message's type id going in; coming out ret[0] is the stage's return,
// ret[1] the result's type id and ret[2] its port.
#define RA_TYPED_STAGE_TEST(name) \
    extern "C" __global__ void name##_test(const float *params, float *state, const float *in, int n, float *out, int out_cap, int *ret) { \
        if (blockIdx.x == 0 && threadIdx.x == 0) { ra_u32 t = (ra_u32)ret[0]; int p = 0; \
            ret[0] = name(params, state, t, (const unsigned char *)in, n, &t, (unsigned char *)out, out_cap, &p); ret[1] = (int)t; ret[2] = p; } \
    }

// ---- routes -----------------------------------------------------------------
// Which out-link a routed result goes down (ringkernel.ResultRoute is the
// Go side of this table; RA_ROUTE_ALL copies to all and never asks).
__device__ __forceinline__ ra_u32 ra_key_hash(ra_u32 k) {
    k ^= k >> 16; k *= 0x85ebca6bu; k ^= k >> 13; k *= 0xc2b2ae35u; k ^= k >> 16;
    return k;
}
__device__ __forceinline__ int ra_route_pick(ra_u32 route, ra_u32 nout, ra_u64 rr, const unsigned char *payload, ra_u32 len,
                                             ra_u32 key_off, int port, ra_u32 *dst) {
    *dst = 0;
    if (route == RA_ROUTE_ROUND_ROBIN) *dst = (ra_u32)(rr % nout);
    else if (route == RA_ROUTE_KEY) {
        if ((ra_u64)key_off + 4 > len) return RA_CODE_NO_KEY;
        *dst = ra_key_hash(*(const ra_u32 *)(payload + key_off)) % nout;
    } else if (route == RA_ROUTE_PORT) {
        if (port < 0 || (ra_u32)port >= nout) return RA_CODE_BAD_PORT;
        *dst = (ra_u32)port;
    }
    return 0;
}

// ---- the persistent ring-kernel loop --------------------------------------
// One block: thread 0 is the only agent on the links (the kernel as a whole
// is their one consumer and one producer), the block's warps run the stage
// over a batch in parallel (a stateful stage is launched with one warp, so
// it sees its messages one at a time, in order), and thread 0 publishes the
// results in order, then frees the in-slots. No in-slot is reused before it
// is processed: head moves only after the batch is done. A batch comes from
// one in-link; the in-links take turns.


// A batch's in-slots are copied into shared memory by the whole block
// (8-byte loads spread over all threads, one round trip over PCIe for a
// link in host memory) before the stage reads them: a lone thread reading
// a slot in host memory word by word pays a PCIe round trip per word. Each
// staged slot is followed by 8 bytes of padding, so threads reading the
// same word of consecutive slots fall on different shared-memory banks
// (at most two to a bank). A batch whose slots do not fit is cut to what
// fits; a slot larger than this is read where it is.
#define RA_STAGE_BYTES 32768

// A ring kernel's heartbeat period, ns.
#define RA_BEAT_NS 10000ull
__device__ __forceinline__ unsigned ra_stage_pitch(unsigned slot_size) { return slot_size + 8; }

// The launch argument block, passed by value: a plain block of words read
// at ringkernel's ArgOff* offsets (generated into the layout header), so
// the Go side and this side share one definition of it.
struct ra_ring_args {
    ra_u64 w[RA_ARG_SIZE / 8];
};
#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(RA_ARG_SIZE % 8 == 0 && RA_ARG_OFF_STEAL % 8 == 0, "ra_ring_args: u64 words");
static_assert(RA_ARG_OFF_STEAL + 8 * RA_MAX_STEAL_LINKS <= RA_ARG_OFF_NUM_STEAL && RA_ARG_OFF_STEAL_SYS + 4 <= RA_ARG_SIZE,
              "ra_ring_args: the steal links fit the block");
static_assert(RA_MAX_STEAL_LINKS <= 32, "ra_ring_args: steal links' scope bits are one u32");
static_assert(RA_ARG_OFF_BUF % 8 == 0 && RA_ARG_OFF_BUF + 8 * RA_MAX_STAGE_BUFFERS <= RA_ARG_OFF_BUF_SIZE &&
                  RA_ARG_OFF_BUF_SIZE + 8 * RA_MAX_STAGE_BUFFERS <= RA_ARG_OFF_NUM_BUF && RA_ARG_OFF_NUM_BUF + 4 <= RA_ARG_SIZE,
              "ra_ring_args: the bound buffers fit the block");
#endif
__device__ __forceinline__ unsigned char *ra_arg_ptr(const ra_ring_args &a, unsigned off) {
    return (unsigned char *)a.w[off / 8];
}
__device__ __forceinline__ ra_u32 ra_arg_u32(const ra_ring_args &a, unsigned off) {
    return (ra_u32)(a.w[off / 8] >> (8 * (off % 8)));  // little-endian
}

struct ra_link_end {
    ra_queue q;
    ra_u64 own;    // our index (head for the in-link, tail for out-links)
    ra_u64 other;  // cached index of the other side
    ra_u64 pub;    // own as last published
    // Our side's counters in the link header, as the Go producer and
    // consumer keep them (p2pqueue): payload bytes published (producer's
    // bytes in) or consumed (consumer's bytes out), and index stores
    // (publishes, releases). Taken up from the header at attach.
    ra_u64 bytes, ops;
    bool sys;
    bool ll;  // flagged (p2pqueue FormatFlagged): ra_ll.cuh reads it
};

#include "ra_ll.cuh"

__device__ __forceinline__ bool ra_attach(unsigned char *base, ra_link_end *e, bool consumer, bool sys) {
    if (base == 0) return false;
    if (ra_load_relaxed_sys32((const ra_u32 *)(base + RA_Q_OFF_MAGIC)) != RA_Q_MAGIC) return false;
    ra_u32 cap = ra_load_relaxed_sys32((const ra_u32 *)(base + RA_Q_OFF_CAPACITY));
    ra_u32 ss = ra_load_relaxed_sys32((const ra_u32 *)(base + RA_Q_OFF_SLOT_SIZE));
    if (cap < RA_MIN_CAPACITY || cap > RA_MAX_CAPACITY || (cap & (cap - 1)) || ss < RA_MIN_SLOT_SIZE || ss % RA_SLOT_ALIGN) return false;
    e->q.base = base; e->q.mask = cap - 1; e->q.slot_size = ss; e->sys = sys; e->ll = false;
    ra_u64 t = ra_load_acquire_sys(ra_q_word(e->q, RA_Q_OFF_TAIL));
    ra_u64 h = ra_load_acquire_sys(ra_q_word(e->q, RA_Q_OFF_HEAD));
    if (t - h > cap) return false;
    e->own = consumer ? h : t;
    e->pub = e->own;
    e->other = h;  // the consumer's tail cache starts empty, the producer's head cache exact
    e->bytes = ra_load_relaxed_sys(ra_q_word(e->q, consumer ? RA_Q_OFF_BYTES_OUT : RA_Q_OFF_BYTES_IN));
    e->ops = ra_load_relaxed_sys(ra_q_word(e->q, consumer ? RA_Q_OFF_RELEASES : RA_Q_OFF_PUBLISHES));
    return true;
}

// Slots published and not yet consumed; re-reads tail only when empty.
// Returns -1 on a tail no correct producer writes.
__device__ __forceinline__ long long ra_avail(ra_link_end *in) {
    if (in->ll) return ra_ll_avail(in);
    if (in->other != in->own) return (long long)(in->other - in->own);
    ra_u64 t = ra_load_acquire(ra_q_word(in->q, RA_Q_OFF_TAIL), in->sys);
    if (t - in->own > (ra_u64)in->q.mask + 1) return -1;
    in->other = t;
    return (long long)(t - in->own);
}

// Free slots; re-reads head only when fewer than want look free.
__device__ __forceinline__ long long ra_free(ra_link_end *out, ra_u32 want) {
    ra_u64 cap = (ra_u64)out->q.mask + 1;
    if (cap - (out->own - out->other) >= want) return (long long)(cap - (out->own - out->other));
    ra_u64 h = ra_load_acquire(ra_q_word(out->q, RA_Q_OFF_HEAD), out->sys);
    if (out->own - h > cap) return -1;
    out->other = h;
    return (long long)(cap - (out->own - h));
}

__device__ __forceinline__ bool ra_closed(const ra_link_end *in) {
    return ra_load_acquire_sys32((const ra_u32 *)(in->q.base + RA_Q_OFF_CLOSED)) == 1;
}

__device__ __forceinline__ void ra_write_header(unsigned char *s, ra_u64 id, ra_u32 type, ra_u32 len, ra_u32 flags, ra_u32 origin, ra_u64 enq) {
    *(ra_u64 *)(s + RA_SLOT_OFF_ID) = id;
    *(ra_u32 *)(s + RA_SLOT_OFF_TYPE) = type;
    *(ra_u32 *)(s + RA_SLOT_OFF_LEN) = len;
    *(ra_u32 *)(s + RA_SLOT_OFF_FLAGS) = flags;
    *(ra_u32 *)(s + RA_SLOT_OFF_ORIGIN) = origin;
    *(ra_u64 *)(s + RA_SLOT_OFF_ENQUEUED) = enq;
}

// ra_record writes one trace-ring record, waiting (with backoff) while the
// host pump catches up: records are never dropped while the host listens.
// It returns false, writing nothing, on a trace ring no correct pump leaves
// (a corrupt head) or when the host posts a terminate (seq moves past ack
// and the command is one) while it waits: a stopped pump must not make the
// kernel unkillable.
// The caller faults.
__device__ bool ra_record(ra_link_end *tr, const unsigned char *ctrl, ra_u32 ack, ra_u32 kind, const unsigned char *msg,
                          ra_u32 stage, ra_u64 deq, ra_u64 done, int code) {
    unsigned ns = 0;
    for (;;) {
        long long fr = ra_free(tr, 1);
        if (fr < 0) return false;
        if (fr >= 1) break;
        ra_store_release(ra_q_word(tr->q, RA_Q_OFF_TAIL), tr->own, true);
        // A terminate posted meanwhile ends the wait (the caller faults); any
        // other command waits for the record (the coordinator's steals come
        // every millisecond and must not fault a kernel behind a slow pump).
        if (ra_load_acquire_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_COMMAND_SEQ)) != ack) {
            const ra_u32 c = ra_load_relaxed_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_COMMAND));
            if (c == RA_CMD_TERMINATE || c == RA_CMD_TERMINATE_DRAIN) return false;
        }
        ra_backoff(&ns);
    }
    unsigned char *s = ra_q_slot(tr->q, tr->own);
    ra_write_header(s, msg ? ra_slot_id(msg) : 0, kind, RA_REC_OFF_TEXT, msg ? ra_slot_flags(msg) : 0, stage,
                    msg ? *(const ra_u64 *)(msg + RA_SLOT_OFF_ENQUEUED) : 0);
    unsigned char *p = s + RA_SLOT_HEADER_SIZE;
    *(ra_u64 *)(p + RA_REC_OFF_DEQUEUED) = deq;
    *(ra_u64 *)(p + RA_REC_OFF_DONE) = done;
    *(int *)(p + RA_REC_OFF_CODE) = code;
    *(ra_u32 *)(p + RA_REC_OFF_TEXT_LEN) = 0;  // device code has codes, not text
    *(ra_u32 *)(p + RA_REC_OFF_FROM) = msg ? *(const ra_u32 *)(msg + RA_SLOT_OFF_ORIGIN) : 0;
    tr->own++;
    return true;
}

// ra_fault ends the loop on a link no correct peer leaves as it is: the
// cause goes into the control block and, if the trace ring is attached and
// has room, a fault record (never waited for: the kernel is stopping).
__device__ void ra_fault(unsigned char *ctrl, ra_link_end *tr, ra_u32 stage, ra_u64 clk, ra_u32 *life) {
    *life = RA_STATE_FAULTED;
    ra_store_relaxed_sys32((ra_u32 *)(ctrl + RA_CB_OFF_LAST_ERROR), (ra_u32)RA_CODE_CORRUPT_QUEUE);
    if (tr->q.base && ra_free(tr, 1) >= 1) {
        ra_u64 now = ra_globaltimer() + clk;
        unsigned char *s = ra_q_slot(tr->q, tr->own);
        ra_write_header(s, 0, RA_REC_FAULT, RA_REC_OFF_TEXT, 0, stage, 0);
        unsigned char *p = s + RA_SLOT_HEADER_SIZE;
        *(ra_u64 *)(p + RA_REC_OFF_DEQUEUED) = now;
        *(ra_u64 *)(p + RA_REC_OFF_DONE) = now;
        *(int *)(p + RA_REC_OFF_CODE) = RA_CODE_CORRUPT_QUEUE;
        *(ra_u32 *)(p + RA_REC_OFF_TEXT_LEN) = 0;
        *(ra_u32 *)(p + RA_REC_OFF_FROM) = 0;
        tr->own++;
    }
}

typedef int (*ra_stage_fn)(const float *, float *, const float *, int, float *, int);
typedef int (*ra_port_stage_fn)(const float *, float *, const float *, int, float *, int, int *);
typedef int (*ra_typed_stage_fn)(const float *, float *, ra_u32, const unsigned char *, int, ra_u32 *, unsigned char *, int, int *);
typedef int (*ra_buf_stage_fn)(const float *, float *, const ra_buf *, int, const float *, int, float *, int);

// The loop calls its stage through one of these, in the typed signature
// (bytes in, bytes out): a float32 stage takes float vectors only and
// gives them, and a plain one always chooses port 0.
__device__ __forceinline__ int ra_float_result(int r, int cap_floats) {
    return r < 0 ? r : (r > cap_floats ? RA_CODE_BAD_RESULT : r * 4);
}
template <ra_stage_fn F> struct ra_plain {
    static __device__ __forceinline__ int run(const float *p, float *s, const ra_buf *, int, ra_u32 in_type, const unsigned char *in,
                                              int len, ra_u32 *out_type, unsigned char *o, int cap, int *port) {
        *port = 0;
        *out_type = RA_TYPE_FLOATS;
        if (in_type != RA_TYPE_FLOATS) return RA_CODE_WRONG_TYPE;
        if (len % 4) return RA_CODE_NOT_FLOATS;
        return ra_float_result(F(p, s, (const float *)in, len / 4, (float *)o, cap / 4), cap / 4);
    }
};
template <ra_port_stage_fn F> struct ra_ported {
    static __device__ __forceinline__ int run(const float *p, float *s, const ra_buf *, int, ra_u32 in_type, const unsigned char *in,
                                              int len, ra_u32 *out_type, unsigned char *o, int cap, int *port) {
        *port = 0;
        *out_type = RA_TYPE_FLOATS;
        if (in_type != RA_TYPE_FLOATS) return RA_CODE_WRONG_TYPE;
        if (len % 4) return RA_CODE_NOT_FLOATS;
        return ra_float_result(F(p, s, (const float *)in, len / 4, (float *)o, cap / 4, port), cap / 4);
    }
};
// ra_buffered calls a RA_BUF_STAGE with the kernel's bound buffers.
template <ra_buf_stage_fn F> struct ra_buffered {
    static __device__ __forceinline__ int run(const float *p, float *s, const ra_buf *b, int nb, ra_u32 in_type,
                                              const unsigned char *in, int len, ra_u32 *out_type, unsigned char *o, int cap, int *port) {
        *port = 0;
        *out_type = RA_TYPE_FLOATS;
        if (in_type != RA_TYPE_FLOATS) return RA_CODE_WRONG_TYPE;
        if (len % 4) return RA_CODE_NOT_FLOATS;
        return ra_float_result(F(p, s, b, nb, (const float *)in, len / 4, (float *)o, cap / 4), cap / 4);
    }
};
template <ra_typed_stage_fn F> struct ra_typed {
    static __device__ __forceinline__ int run(const float *p, float *s, const ra_buf *, int, ra_u32 in_type, const unsigned char *in,
                                              int len, ra_u32 *out_type, unsigned char *o, int cap, int *port) {
        *port = 0;
        *out_type = in_type;
        int r = F(p, s, in_type, in, len, out_type, o, cap, port);
        return r > cap ? RA_CODE_BAD_RESULT : r;
    }
};

// Dead-letter codes that are no failure of the stage function, so not
// counted as its errors.
__device__ __forceinline__ bool ra_not_stage_error(int code) {
    return code == RA_CODE_NOT_FLOATS || code == RA_CODE_CORRUPT_SLOT || code == RA_CODE_NO_KEY || code == RA_CODE_BAD_PORT ||
           code == RA_CODE_WRONG_TYPE;
}

// ra_copy_payload copies len bytes between slot payloads, a word at a time
// (payloads are 8-byte aligned and their slots' sizes multiples of 64, so
// the last word stays inside both slots).
__device__ __forceinline__ void ra_copy_payload(unsigned char *dst, const unsigned char *src, int len) {
    for (int k = 0; k < (len + 3) / 4; k++) ((ra_u32 *)dst)[k] = ((const ra_u32 *)src)[k];
}

// Block-shared state of one ring kernel (RA_SHARED): the link ends, the
// lifecycle and the batch in flight. Thread 0 writes the link ends and the
// lifecycle; every other thread reads what thread 0 wrote only after a
// __syncthreads that follows the write, and thread 0 reads what the others
// wrote (res, t0, t1, ports, otype, staged) only after one too.
struct ra_loop_shared {
    ra_link_end ins[RA_MAX_IN_LINKS], outs[RA_MAX_OUT_LINKS], tr;
    ra_link_end steals[RA_MAX_STEAL_LINKS];  // thread 0's alone: Spec.StealTo (ra_loop::steal)
    ra_u32 life, ack, n, stop, cur, next, ocap;
    ra_u32 gaps;  // a dead letter in this batch: set by any thread (ra_block_or)
    ra_buf bufs[RA_MAX_STAGE_BUFFERS];  // the bound buffers, nbufs of them (ra_loop::bind)
    ra_u32 nbufs;
    bool drain, sink;
    ra_u64 deq, clk;
    int res[RA_BATCH];
    ra_u64 t0[RA_BATCH], t1[RA_BATCH];
    int ports[RA_BATCH];     // the port each message's stage call chose
    ra_u32 otype[RA_BATCH];  // each result's type id
    // The batch's in-slots, each padded to ra_stage_pitch; or, when a slot
    // is too large to stage, the batch's slot headers: after head is
    // published nothing reads an in-slot (the trace records read these).
    ra_u64 staged[RA_STAGE_BYTES / 8];
};

// ---- per-phase timers (bench-gpu) ---------------------------------------
// With ArgOffPhase set (ringkernel.Spec.PhaseTimers: device memory,
// RA_PHASE_WORDS u64 words), thread 0 adds the globaltimer time of each
// phase of a step into its own registers: poll (the look at the command
// word and the in-links that found the batch; idle looks before it are
// not counted), stage-in (to the barrier after the slots are staged),
// compute (the stage, to the barrier after the headers) and publish
// (results, flush, records: bottom); and counts batches and messages. It
// stores them once, as the kernel ends, before the state's release (a
// host that sees the state final finds them). Off (0, the default), each
// mark is one predictable branch.
#define RA_PHASE_POLL 0
#define RA_PHASE_STAGE_IN 1
#define RA_PHASE_COMPUTE 2
#define RA_PHASE_PUBLISH 3
#define RA_PHASE_BATCHES 4
#define RA_PHASE_MSGS 5
#define RA_PHASE_WORDS 8
struct ra_phase {
    ra_u64 *p;
    ra_u64 last, acc[RA_PHASE_MSGS + 1];
    __device__ __forceinline__ void init(const ra_ring_args &a) {
        p = (ra_u64 *)ra_arg_ptr(a, RA_ARG_OFF_PHASE);
        last = 0;
        for (int k = 0; k <= RA_PHASE_MSGS; k++) acc[k] = 0;
    }
    __device__ __forceinline__ void start() {
        if (p) last = ra_globaltimer();
    }
    __device__ __forceinline__ void mark(int k) {
        if (p) { const ra_u64 now = ra_globaltimer(); acc[k] += now - last; last = now; }
    }
    __device__ __forceinline__ void taken(ra_u32 n) {
        if (p && n) { mark(RA_PHASE_POLL); acc[RA_PHASE_BATCHES]++; acc[RA_PHASE_MSGS] += n; }
    }
    __device__ __forceinline__ void flush() {
        if (p) for (int k = 0; k <= RA_PHASE_MSGS; k++) ra_store_relaxed_sys(p + k, acc[k]);
    }
};
#define RA_PHASE_MARK(L, k) do { if (threadIdx.x == 0) (L).ph.mark(k); } while (0)

// The warp loops (ringkernel.LoopWarp, LoopWarpPrefetch): ra_warp_sync, ra_warp_loop<STAGE, PF>.
#include "ra_warp.cuh"

// ra_loop is one ring kernel's loop, a phase per method, named as its Go
// twin's in ringkernel/sim/loop.go: commands, deadLetterQueued, pick,
// stageIn, process, publishRouted, publish (the results), flush (counters,
// then the release of the out tails and head), records, finish. Methods
// that say "thread 0" run on thread 0 alone; the others on every thread of
// the block, which must all reach the same barriers.
template <typename STAGE>
struct ra_loop {
    ra_loop_shared &s;
    unsigned char *ctrl;
    ra_u32 nin, nout, route, key_off, stage;
    bool routed;
    const float *params;
    float *state;
    unsigned char *sink_buf;
    // Thread 0's own.
    ra_u64 processed, dropped, errors, traced;
    ra_u64 busy;          // globaltimer ns on batches (account)
    ra_u64 published_tr;  // trace tail last published
    ra_u64 rr;            // results routed one at a time so far (round-robin's turn)
    ra_u64 last_beat;
    ra_u32 iter;
    ra_u32 dirty;         // out-links given results this step, to publish
    unsigned ns;
    // CmdBarrier (barrier_*): the pending barrier (bp_*: arrive once
    // in-link bp_link's head reaches bp_at) and the one waited at (bw_*).
    unsigned char *bp_flags, *bw_flags;
    ra_u32 bp_me, bp_n, bp_link, bw_n, bw_seen;
    ra_u64 bp_gen, bp_at, bw_gen;
    bool bar_pending, bar_waiting;
    // This step's batch, every thread (from s.cur after the barrier).
    ra_link_end *in;
    ra_u32 pitch;
    bool stg;
    // Thread 0's own: the steal links' count (the link ends are s.steals,
    // the kernel their only producer; closed once stopping: attach_steal,
    // steal, close_steal), and how many messages moved to thieves.
    ra_u32 nsteal;
    ra_u64 stolen;
    bool steal_closed;
    // Who shares a batch: this thread's index and the threads in it (the
    // block; the warp loop's lanes, ra_warp.cuh), and sync(): their barrier.
    ra_u32 tid, nthr;
    bool warp;
    bool llout;  // an out-link is flagged: results are made in the staging area (res_slot, ra_ll.cuh)
    __device__ __forceinline__ void sync() { if (warp) ra_warp_sync(nthr); else __syncthreads(); }
    ra_phase ph;  // thread 0's per-phase timers (off unless ArgOffPhase is set)

    __device__ ra_loop(ra_loop_shared &sh, const ra_ring_args &a) : s(sh) {
        ctrl = ra_arg_ptr(a, RA_ARG_OFF_CTRL);
        nin = ra_arg_u32(a, RA_ARG_OFF_NUM_IN);
        nout = ra_arg_u32(a, RA_ARG_OFF_NUM_OUT);
        route = ra_arg_u32(a, RA_ARG_OFF_ROUTE);
        key_off = ra_arg_u32(a, RA_ARG_OFF_KEY_OFFSET);
        routed = route != RA_ROUTE_ONE;
        params = (const float *)ra_arg_ptr(a, RA_ARG_OFF_PARAMS);
        state = (float *)ra_arg_ptr(a, RA_ARG_OFF_STATE);
        sink_buf = ra_arg_ptr(a, RA_ARG_OFF_SINK);
        if (threadIdx.x == 0) bind(a);
        ph.init(a);
        stage = ra_load_relaxed_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_STAGE_ID));  // every thread stamps it
        processed = dropped = errors = traced = published_tr = rr = last_beat = busy = 0;
        iter = 0;
        dirty = 0;
        ns = 0;
        bar_pending = bar_waiting = false;
        in = 0;
        pitch = 0;
        stg = true;
        tid = threadIdx.x; nthr = blockDim.x; warp = false;
        llout = nout < 32 && (ra_arg_u32(a, RA_ARG_OFF_OUT_LL) & ((1u << nout) - 1u)) != 0;
    }

    // bind, thread 0 (before the first barrier): the bound buffers from
    // the argument block into shared memory, where the stage reads them
    // (an array in the loop's own object would put it in local memory).
    __device__ __forceinline__ void bind(const ra_ring_args &a) {
        const ra_u32 nb = ra_arg_u32(a, RA_ARG_OFF_NUM_BUF);
        s.nbufs = nb < RA_MAX_STAGE_BUFFERS ? nb : RA_MAX_STAGE_BUFFERS;
        for (ra_u32 k = 0; k < s.nbufs; k++) {
            s.bufs[k].ptr = ra_arg_ptr(a, RA_ARG_OFF_BUF + 8 * k);
            s.bufs[k].size = a.w[(RA_ARG_OFF_BUF_SIZE + 8 * k) / 8];
        }
    }

    // attach, thread 0: every link checked before the first step; a link no
    // correct peer leaves as it is faults the kernel at once.
    __device__ __forceinline__ void attach(const ra_ring_args &a) {
        s.stop = 0; s.n = 0; s.cur = 0; s.next = 0; s.drain = false; s.sink = nout == 0; s.gaps = 0;
        s.clk = ra_clock_offset(ctrl);
        s.tr.q.base = 0;
        for (ra_u32 k = 0; k < RA_MAX_OUT_LINKS; k++) s.outs[k].q.base = 0;
        for (ra_u32 k = 0; k < RA_MAX_IN_LINKS; k++) s.ins[k].q.base = 0;
        s.life = RA_STATE_LAUNCHED;
        s.ack = ra_load_acquire_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_COMMAND_ACK));
        const ra_u32 in_sys = ra_arg_u32(a, RA_ARG_OFF_IN_SYS), out_sys = ra_arg_u32(a, RA_ARG_OFF_OUT_SYS);
        const ra_u32 in_ll = ra_arg_u32(a, RA_ARG_OFF_IN_LL), out_ll = ra_arg_u32(a, RA_ARG_OFF_OUT_LL);
        bool ok = nin >= 1 && nin <= RA_MAX_IN_LINKS && nout <= RA_MAX_OUT_LINKS && (nout <= 1 || routed) &&
                  route <= RA_ROUTE_PORT && ra_attach(ra_arg_ptr(a, RA_ARG_OFF_TRACE), &s.tr, false, true);
        s.ocap = 0xffffffffu;  // bytes: the least any out-slot holds, so a routed result fits wherever it goes
        for (ra_u32 k = 0; ok && k < nout; k++) {
            ok = ra_attach(ra_arg_ptr(a, RA_ARG_OFF_OUT + 8 * k), &s.outs[k], false, (out_sys >> k) & 1u) &&
                 ra_ll_check(&s.outs[k], (out_ll >> k) & 1u);
            if (ok) s.ocap = min(s.ocap, ra_ll_cap(s.outs[k]));
        }
        for (ra_u32 k = 0; ok && k < nin; k++)
            ok = ra_attach(ra_arg_ptr(a, RA_ARG_OFF_IN + 8 * k), &s.ins[k], true, (in_sys >> k) & 1u) && ra_ll_check(&s.ins[k], (in_ll >> k) & 1u) &&
                 stage_room(k) > 0;
        ok = attach_steal(a) && ok;
        if (!ok) {
            s.life = RA_STATE_FAULTED;
            ra_store_relaxed_sys32((ra_u32 *)(ctrl + RA_CB_OFF_LAST_ERROR), (ra_u32)RA_CODE_CORRUPT_QUEUE);
            s.stop = 1;
        }
        ra_store_release_sys32((ra_u32 *)(ctrl + RA_CB_OFF_STATE), s.life);
    }

    // commands, thread 0: the heartbeat and the clock offset every
    // RA_BEAT_NS (the watchdog's scale is milliseconds), the command word
    // every 8th iteration (a command waits a few µs): words in host memory
    // cost a PCIe round trip to read and a .sys fence to publish. A command
    // moves the lifecycle by ringkernel.Next's table.
    __device__ __forceinline__ void commands() {
        const ra_u32 it = iter++;
        const bool beat = heartbeat(it == 0, &s.clk);
        // Every 8th iteration, or at a beat: a loop whose batches take longer
        // than RA_BEAT_NS reads it every step (a steal waits one batch, not 8).
        command(((it & 7u) == 0 || beat) ? ra_load_acquire_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_COMMAND_SEQ)) : s.ack);
    }

    // heartbeat: a beat, and the clock offset re-read into *clk, once
    // RA_BEAT_NS has passed since the last (or when forced).
    __device__ __forceinline__ bool heartbeat(bool force, ra_u64 *clk) {
        const ra_u64 now = ra_globaltimer();
        if (!force && now - last_beat < RA_BEAT_NS) return false;
        last_beat = now;
        *clk = ra_clock_offset(ctrl);
        ra_store_release_sys((ra_u64 *)(ctrl + RA_CB_OFF_HEARTBEAT), now + *clk);
        return true;
    }

    // command, thread 0: apply command seq q (loaded with an acquire) if not yet acknowledged.
    __device__ __forceinline__ void command(const ra_u32 q) {
        if (q == s.ack) return;
        const ra_u32 c = ra_load_relaxed_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_COMMAND));  // after seq's acquire
        ra_u32 &life = s.life;
        if (c == RA_CMD_ACTIVATE && (life == RA_STATE_LAUNCHED || life == RA_STATE_IDLE)) life = RA_STATE_ACTIVE;
        else if (c == RA_CMD_DEACTIVATE && life == RA_STATE_ACTIVE) life = RA_STATE_IDLE;
        else if (c == RA_CMD_TERMINATE) { life = RA_STATE_TERMINATING; s.drain = false; }
        else if (c == RA_CMD_TERMINATE_DRAIN) { life = RA_STATE_TERMINATING; s.drain = true; }
        else if (c == RA_CMD_BARRIER && life != RA_STATE_TERMINATING) barrier_post();
        s.ack = q;
        if (c == RA_CMD_STEAL && (life == RA_STATE_LAUNCHED || life == RA_STATE_ACTIVE || life == RA_STATE_IDLE)) steal();
        if (life == RA_STATE_TERMINATING) close_steal();  // no steals once stopping: thieves that drain need not wait for us
        ra_store_release_sys32((ra_u32 *)(ctrl + RA_CB_OFF_STATE), life);
        ra_store_release_sys32((ra_u32 *)(ctrl + RA_CB_OFF_COMMAND_ACK), q);
    }

    __device__ __forceinline__ void fault() { ra_fault(ctrl, &s.tr, stage, s.clk, &s.life); }

    // attach_steal, thread 0: the steal links, as their producer; false on
    // one no correct consumer leaves as it is (the kernel faults).
    __device__ __forceinline__ bool attach_steal(const ra_ring_args &a) {
        nsteal = ra_arg_u32(a, RA_ARG_OFF_NUM_STEAL);
        stolen = 0;
        steal_closed = false;
        for (ra_u32 k = 0; k < RA_MAX_STEAL_LINKS; k++) s.steals[k].q.base = 0;
        if (nsteal > RA_MAX_STEAL_LINKS) return false;
        const ra_u32 sys = ra_arg_u32(a, RA_ARG_OFF_STEAL_SYS);
        for (ra_u32 k = 0; k < nsteal; k++)
            if (!ra_attach(ra_arg_ptr(a, RA_ARG_OFF_STEAL + 8 * k), &s.steals[k], false, (sys >> k) & 1u) || !ra_ll_check(&s.steals[k], false)) return false;
        return true;
    }

    // steal, thread 0, on RA_CMD_STEAL (arg: count | link << 32), between
    // batches (every head published): up to count queued messages, each
    // taken from the first in-link that has one, copied whole (header and
    // payload, as they are) into the thief's steal link, until the count,
    // a full steal link or nothing queued. A message the thief's slots
    // cannot hold is dead-lettered (RA_CODE_BAD_RESULT), a corrupt one
    // (RA_CODE_CORRUPT_SLOT). Then, as in flush: the counters (stolen
    // among them), one fence, the steal link's tail and the in-links'
    // heads; the caller acknowledges after, so the host's Steal, reading
    // stolen after its ack, finds the count.
    __device__ __forceinline__ void steal() {
        const ra_u64 arg = ra_load_relaxed_sys((const ra_u64 *)(ctrl + RA_CB_OFF_COMMAND_ARG));  // after seq's acquire
        const ra_u32 n = (ra_u32)arg, to = (ra_u32)(arg >> 32);
        if (to >= nsteal || steal_closed || !s.steals[to].q.base) return;
        if (bar_pending || bar_waiting) return;  // a phase boundary's messages stay with their kernel
        ra_link_end *t = &s.steals[to];
        ra_u32 moved = 0, took = 0;  // took: bit k set, in-link k's head moved
        while (moved < n && !s.stop) {
            const long long fr = ra_free(t, 1);
            if (fr < 0) { fault(); s.stop = 1; break; }
            if (fr == 0) break;  // the thief's link is full: it has enough
            ra_u32 k = 0;
            long long av = 0;
            for (; k < nin; k++) {
                av = ra_avail(&s.ins[k]);
                if (av != 0) break;
            }
            if (k == nin) break;  // nothing queued
            if (av < 0) { fault(); s.stop = 1; break; }
            ra_link_end *src = &s.ins[k];
            const unsigned char *m = ra_q_slot(src->q, src->own);
            const ra_u32 len = ra_slot_len(m);
            int code = 0;
            if (len > src->q.slot_size - RA_SLOT_HEADER_SIZE) code = RA_CODE_CORRUPT_SLOT;
            else if (len > t->q.slot_size - RA_SLOT_HEADER_SIZE) code = RA_CODE_BAD_RESULT;
            if (code) {
                const ra_u64 now = ra_globaltimer() + s.clk;
                if (!ra_record(&s.tr, ctrl, s.ack, RA_REC_DEAD_LETTER, m, stage, now, now, code)) { s.life = RA_STATE_FAULTED; s.stop = 1; break; }
                dropped++;
                if (!ra_not_stage_error(code)) errors++;
                ra_store_relaxed_sys((ra_u64 *)(ctrl + RA_CB_OFF_LAST_ERROR_ID), ra_slot_id(m));
                ra_store_relaxed_sys32((ra_u32 *)(ctrl + RA_CB_OFF_LAST_ERROR), (ra_u32)code);
            } else {
                // Whole words: payloads are 8-byte aligned and slot sizes multiples of 64.
                ra_u64 *d = (ra_u64 *)ra_q_slot(t->q, t->own);
                const ra_u64 *w = (const ra_u64 *)m;
                for (ra_u32 x = 0; x < (RA_SLOT_HEADER_SIZE + len + 7) / 8; x++) d[x] = w[x];
                t->bytes += len;
                t->own++;
                moved++;
                stolen++;
            }
            src->bytes += payload_len(*src, m);
            src->own++;
            took |= 1u << k;
        }
        if (!took) return;
        for (ra_u32 k = 0; k < nin; k++)
            if (took & (1u << k)) store_consumer(&s.ins[k]);
        if (moved) store_producer(t);
        store_counters();
        ra_store_relaxed_sys((ra_u64 *)(ctrl + RA_CB_OFF_STOLEN), stolen);
        bool sys = t->sys;
        for (ra_u32 k = 0; k < nin; k++)
            if (took & (1u << k)) sys |= s.ins[k].sys;
        ra_fence_acq_rel(sys);
        if (moved) ra_store_fenced(ra_q_word(t->q, RA_Q_OFF_TAIL), t->own, t->sys);
        for (ra_u32 k = 0; k < nin; k++) {
            if (!(took & (1u << k))) continue;
            ra_store_fenced(ra_q_word(s.ins[k].q, RA_Q_OFF_HEAD), s.ins[k].own, s.ins[k].sys);
            s.ins[k].pub = s.ins[k].own;
        }
        if (s.tr.own != published_tr) {  // the dead letters' records
            ra_store_release_sys(ra_q_word(s.tr.q, RA_Q_OFF_TAIL), s.tr.own);
            published_tr = s.tr.own;
        }
    }

    // close_steal, thread 0: each steal link closed after its last tail
    // publish (a release), once.
    __device__ __forceinline__ void close_steal() {
        if (steal_closed) return;
        steal_closed = true;
        for (ra_u32 k = 0; k < nsteal && k < RA_MAX_STEAL_LINKS; k++)
            if (s.steals[k].q.base) ra_store_release_sys32((ra_u32 *)(s.steals[k].q.base + RA_Q_OFF_CLOSED), 1);
    }

    // barrier_post, thread 0: CmdBarrier's parameters (read after seq's
    // acquire, as the command word), checked: a flag array this kernel
    // cannot trust, or a participant it is not, is ignored (the host
    // checks before posting). Sim: ringkernel/sim/barrier.go.
    __device__ __forceinline__ void barrier_post() {
        bp_flags = (unsigned char *)ra_load_relaxed_sys((const ra_u64 *)(ctrl + RA_CB_OFF_BARRIER_FLAGS));
        bp_me = ra_load_relaxed_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_BARRIER_INDEX));
        bp_n = ra_load_relaxed_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_BARRIER_COUNT));
        bp_gen = ra_load_relaxed_sys((const ra_u64 *)(ctrl + RA_CB_OFF_BARRIER_GEN));
        bp_at = ra_load_relaxed_sys((const ra_u64 *)(ctrl + RA_CB_OFF_BARRIER_AT));
        bp_link = ra_load_relaxed_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_BARRIER_LINK));
        bar_pending = bp_flags != 0 && bp_me < bp_n && bp_link < nin && ra_barrier_check(bp_flags, bp_n);
    }

    // barrier_held, thread 0, each round of top: waiting at a barrier, one
    // poll of the flag array, and whether to take no message this round;
    // else, a pending barrier whose mark its in-link's head has reached
    // (the batch that reached it is published: bottom ran first) is
    // arrived at (a .sys store-release of its generation) and waited at.
    // Commands and the heartbeat go on meanwhile; a terminate leaves the
    // barrier (a kernel that had not arrived never does).
    __device__ __forceinline__ bool barrier_held() {
        if (!bar_pending && !bar_waiting) return false;
        if (s.life == RA_STATE_TERMINATING || s.life == RA_STATE_FAULTED) { bar_pending = bar_waiting = false; return false; }
        if (bar_waiting) {
            if (!ra_barrier_poll(bw_flags, bw_n, bw_gen, &bw_seen)) return true;
            bar_waiting = false;
        }
        if (bar_pending && s.ins[bp_link].own >= bp_at) {
            publish_head(&s.ins[bp_link]);  // a flagged in-link's lazy head, up to the mark
            ra_barrier_arrive(bp_flags, bp_me, bp_gen);
            bar_pending = false;
            bar_waiting = true;
            bw_flags = bp_flags; bw_n = bp_n; bw_gen = bp_gen; bw_seen = 0;
            return true;
        }
        return false;
    }

    // barrier_room, thread 0: how many messages a batch from in-link k may
    // take: none past a pending barrier's mark on its in-link.
    __device__ __forceinline__ long long barrier_room(ra_u32 k) const {
        if (!bar_pending || k != bp_link) return RA_BATCH;
        return s.ins[k].own >= bp_at ? 0 : (long long)min((ra_u64)RA_BATCH, bp_at - s.ins[k].own);
    }

    // deadLetterQueued, thread 0: terminating without drain, everything
    // queued on every in-link becomes a dead letter (RA_CODE_SHUTDOWN),
    // until each link is empty as its tail now reads (the host closes
    // ingress before it terminates). The records read the slots in place,
    // then head is released over them.
    __device__ __forceinline__ void dead_letter_queued() {
        for (ra_u32 k = 0; k < nin; k++) {
            for (;;) {
                const long long av = ra_avail(&s.ins[k]);
                if (av < 0) { fault(); break; }
                if (av == 0) break;
                ra_u64 i = 0;
                ra_u32 hb[RA_SLOT_HEADER_SIZE / 4];
                for (; i < (ra_u64)av; i++) {
                    if (!ra_record(&s.tr, ctrl, s.ack, RA_REC_DEAD_LETTER, ra_ll_header(s.ins[k], s.ins[k].own + i, hb), stage, 0,
                                   ra_globaltimer() + s.clk, RA_CODE_SHUTDOWN)) break;
                    dropped++;
                }
                consumed_in_place(&s.ins[k], i);
                s.ins[k].own += i;
                store_counters();  // before head's release, as in flush
                ra_store_release(ra_q_word(s.ins[k].q, RA_Q_OFF_HEAD), s.ins[k].own, s.ins[k].sys);
                s.ins[k].pub = s.ins[k].own;
                // The pump stopped: what is left stays queued, the host's to account for.
                if (i < (ra_u64)av) { s.life = RA_STATE_FAULTED; break; }
            }
        }
        if (s.life != RA_STATE_FAULTED) s.life = RA_STATE_TERMINATED;
        s.stop = 1;
    }

    // pick, thread 0: the first in-link with messages, from where the last
    // batch left off (in-links take turns; a batch comes from one link); all
    // closed and drained ends the loop. The batch is cut to the room on
    // every out-link (a routed batch may all go down any one), RA_BATCH,
    // and what the staging area holds.
    __device__ __forceinline__ void pick() {
        bool done = true;
        for (ra_u32 j = 0; j < nin && s.n == 0 && !s.stop; j++) {
            const ra_u32 k = (s.next + j) % nin;
            const long long av = ra_avail(&s.ins[k]);
            if (av < 0) { fault(); s.stop = 1; break; }
            if (av == 0) {
                // closed is set after the last publish: re-read tail after seeing it
                if (!(ra_closed(&s.ins[k]) && ra_avail(&s.ins[k]) == 0)) done = false;
                continue;
            }
            done = false;
            long long fr = barrier_room(k);
            for (ra_u32 o = 0; o < nout && fr > 0; o++) fr = min(fr, ra_free(&s.outs[o], 1));
            if (fr < 0) { fault(); s.stop = 1; break; }
            s.n = min((ra_u32)min(min(av, fr), (long long)RA_BATCH), stage_room(k));
            s.cur = k;
            s.next = (k + 1) % nin;
        }
        if (!s.stop && s.n == 0 && done) { s.life = RA_STATE_TERMINATED; s.stop = 1; }
        if (s.n == 0 && !s.stop) publish_heads();  // nothing to take: the lazy heads, for space (never on a fault)
    }

    // top, thread 0: the part of a step before the block's first barrier:
    // the last batch's publish (bottom), then commands and the pick, polled
    // with backoff until there is a batch or the loop ends, while the other
    // threads wait at the barrier (an idle kernel's other warps issue
    // nothing). stop is read by the other threads only after that barrier,
    // and thread 0 writes it only here, so no thread reads it while thread 0
    // may write it.
    // most: the largest batch to take (the warp loop's idle poll takes a
    // warp's worth), cut before the phase timers count it.
    __device__ __forceinline__ void top(ra_u32 most = RA_BATCH) {
        if (s.n) {
            bottom();  // the last batch, while the other threads wait
            ph.mark(RA_PHASE_PUBLISH);
            s.n = 0;
        }
        if (s.stop) return;  // leave with everyone
        for (;;) {
            ph.start();
            commands();
            s.n = 0;
            if (barrier_held()) { ra_backoff(&ns); continue; }  // at a barrier: no message until all arrive
            const bool take = s.life == RA_STATE_ACTIVE || (s.life == RA_STATE_TERMINATING && s.drain);
            if (s.life == RA_STATE_TERMINATING && !s.drain) dead_letter_queued();
            else if (take) pick();
            if (s.n || s.stop) break;
            ra_backoff(&ns);  // idle: sleep a little, then look at the command word again
        }
        ns = 0;
        s.deq = ra_globaltimer() + s.clk;
        if (s.n > most) s.n = most;
        ph.taken(s.n);
    }

    // A message's bytes (staged, or in place when too large to stage) and
    // its header (staged, or the header copy): only headers are read after
    // head is published.
    __device__ __forceinline__ const unsigned char *slot(ra_u32 i) const {
        return stg ? (const unsigned char *)s.staged + (size_t)i * pitch : ra_q_slot(in->q, in->own + i);
    }
    __device__ __forceinline__ const unsigned char *hdr(ra_u32 i) const {
        return (const unsigned char *)s.staged + (size_t)i * (stg ? pitch : RA_SLOT_HEADER_SIZE);
    }

    // stageIn, every thread: the batch's in-slots into shared memory, all
    // threads at once, 8-byte loads (one round trip over PCIe for a link in
    // host memory); a slot too large to stage has its header copied. Thread
    // 0's acquire of tail and the barrier before this order these loads
    // after the producer's writes.
    __device__ __forceinline__ void stage_in() {
        in = &s.ins[s.cur];
        pitch = ra_stage_pitch(in->q.slot_size);
        stg = pitch <= RA_STAGE_BYTES;
        const ra_u32 n = s.n;
        if (tid == 0) s.gaps = 0;  // the other threads read the last one before the step's first barrier
        if (in->ll) {  // flagged: logical slots, staged whole (ringkernel/cuda refuses bigger ones)
            pitch = ra_stage_pitch(in->q.slot_size / 2);
            stg = true;
            ra_ll_stage_in(in, s.n, (unsigned char *)s.staged, pitch, tid, nthr, [this] { sync(); });
            return;
        }
        const ra_u32 words = stg ? in->q.slot_size / 8 : RA_SLOT_HEADER_SIZE / 8;
        const ra_u32 pw = stg ? pitch / 8 : words;
        for (ra_u32 x = tid; x < n * words; x += nthr) {
            const ra_u32 i = x / words, o = x - i * words;
            s.staged[i * pw + o] = ((const ra_u64 *)ra_q_slot(in->q, in->own + i))[o];
        }
        sync();
    }

    // process, every thread: the stage, one message per thread; a stage
    // with state sees its messages one at a time, in order, on thread 0.
    // Results go straight into outs[0]'s slots (or the sink buffer; with
    // a flagged out-link, res_slot in the staging area).
    __device__ __forceinline__ void process() {
        const ra_u32 n = s.n;
        const bool one = state != 0;
        if (one && tid != 0) return;
        for (ra_u32 i = one ? 0 : tid; i < n; i += one ? 1 : nthr) {
            const unsigned char *h = hdr(i);
            const ra_u32 len = ra_slot_len(h);
            unsigned char *o;
            int cap;
            if (s.sink) { cap = (int)(in->q.slot_size - RA_SLOT_HEADER_SIZE); o = sink_buf + (size_t)i * cap; }
            else { o = out_slot(i) + RA_SLOT_HEADER_SIZE; cap = (int)s.ocap; }
            // Host time as this device estimates it agrees with the enqueue
            // stamp (the host's, or another device's) only to the
            // calibrations' error: where this clock reads behind the stamp,
            // the message's times move later by the gap, so it is never
            // dequeued before it was enqueued and its service time stays one
            // clock's difference.
            const ra_u64 enq = *(const ra_u64 *)(h + RA_SLOT_OFF_ENQUEUED);
            const ra_u64 now = ra_globaltimer() + s.clk;
            const ra_u64 gap = enq > now ? enq - now : 0;
            s.t0[i] = now + gap;
            if (len > ra_ll_cap(*in)) s.res[i] = RA_CODE_CORRUPT_SLOT;
            else {
                int port = 0;
                ra_u32 ot = 0;
                s.res[i] = STAGE::run(params, state, s.bufs, (int)s.nbufs, *(const ra_u32 *)(h + RA_SLOT_OFF_TYPE), slot(i) + RA_SLOT_HEADER_SIZE,
                                      (int)len, &ot, o, cap, &port);
                s.ports[i] = port;
                s.otype[i] = ot;
            }
            s.t1[i] = ra_globaltimer() + s.clk + gap;
            if (s.res[i] < 0) ra_block_or(&s.gaps, 1u);
        }
    }

    // A failed message, thread 0: its dead-letter record, the counts, and
    // the control block's last error (id first, code last; a reader may
    // still pair one message's code with another's id, docs §3.2).
    __device__ __forceinline__ void dead_letter(ra_u32 i) {
        const int code = s.res[i];
        if (!ra_record(&s.tr, ctrl, s.ack, RA_REC_DEAD_LETTER, hdr(i), stage, s.deq, s.t1[i], code)) { s.life = RA_STATE_FAULTED; s.stop = 1; }
        dropped++;
        if (!ra_not_stage_error(code)) errors++;
        ra_store_relaxed_sys((ra_u64 *)(ctrl + RA_CB_OFF_LAST_ERROR_ID), ra_slot_id(hdr(i)));
        ra_store_relaxed_sys32((ra_u32 *)(ctrl + RA_CB_OFF_LAST_ERROR), (ra_u32)code);
    }

    __device__ __forceinline__ void write_out_header(unsigned char *d, ra_u32 i) {
        const unsigned char *h = hdr(i);
        const ra_u32 flags = ra_slot_flags(h);
        ra_write_header(d, ra_slot_id(h), s.otype[i], (ra_u32)s.res[i], flags, stage, (flags & RA_FLAG_SAMPLED) ? s.t1[i] : 0);
    }

    // headers, every thread: the out-slot headers, one thread each, when no
    // dead letter left a gap to close and nothing routes (the usual case);
    // with a flagged out-link, then every result's words, spread over the
    // threads (ra_ll_write_batch), while thread 0 goes on to bottom.
    __device__ __forceinline__ void headers() {
        if (s.gaps || s.sink || routed) return;
        const ra_u64 at = s.outs[0].own;  // read before the barrier: thread 0 moves it after (publish)
        const ra_u32 n = s.n;
        for (ra_u32 i = tid; i < n; i += nthr) write_out_header(out_slot(i), i);
        const unsigned char *r0 = llout ? res_slot(0) : 0;
        sync();  // the headers before thread 0 publishes them (or before their words are written)
        if (llout) ra_ll_write_batch(s.outs[0], at, n, r0, res_pitch(), ra_ll_words(s.ocap), tid, nthr);
    }

    // publishRouted, thread 0: each result to the out-link(s) its route
    // picks, in order per link. A result sits in outs[0]'s slot i; outs[0]'s
    // own results only ever move down to a slot at or below i, and a copy
    // for every other link is taken first, so no result is overwritten
    // before it is read. A dead letter takes no round-robin turn.
    __device__ __forceinline__ void publish_routed() {
        ra_u32 cnt[RA_MAX_OUT_LINKS];
        for (ra_u32 d = 0; d < nout; d++) cnt[d] = 0;
        ra_link_end *outs = s.outs;
        for (ra_u32 i = 0; i < s.n; i++) {
            const unsigned char *src = out_slot(i) + RA_SLOT_HEADER_SIZE;
            ra_u32 dst = 0;
            if (s.res[i] >= 0 && route != RA_ROUTE_ALL) {
                const int c = ra_route_pick(route, nout, rr, src, (ra_u32)s.res[i], key_off, s.ports[i], &dst);
                if (c < 0) s.res[i] = c;
            }
            if (s.res[i] < 0) { dead_letter(i); continue; }
            if (route != RA_ROUTE_ALL) rr++;
            const ra_u32 first = route == RA_ROUTE_ALL ? nout - 1 : dst;
            for (ra_u32 d = first + 1; d-- > 0;) {  // outs[0] last
                if (route != RA_ROUTE_ALL && d != dst) break;
                if (outs[d].ll) ll_put(outs[d], outs[d].own + cnt[d], i);
                else {
                    unsigned char *ds = ra_q_slot(outs[d].q, outs[d].own + cnt[d]);
                    if (ds + RA_SLOT_HEADER_SIZE != src) ra_copy_payload(ds + RA_SLOT_HEADER_SIZE, src, s.res[i]);
                    write_out_header(ds, i);
                }
                cnt[d]++;
                outs[d].bytes += (ra_u32)s.res[i];
            }
            processed++;
        }
        for (ra_u32 d = 0; d < nout; d++) {
            if (!cnt[d]) continue;
            outs[d].own += cnt[d];
            dirty |= 1u << d;
        }
    }

    // publish, thread 0: the results of an unrouted batch; with dead
    // letters, compacted: a record per failed message, later results moved
    // down over the gap, their headers written.
    __device__ __forceinline__ void publish() {
        ra_link_end &out = s.outs[0];
        if (!s.gaps) {
            processed += s.n;
            if (!s.sink && s.n) { out.own += s.n; dirty |= 1u; }
            return;
        }
        ra_u32 j = 0;
        for (ra_u32 i = 0; i < s.n; i++) {
            if (s.res[i] < 0) { dead_letter(i); continue; }
            if (!s.sink && llout) ll_put(out, out.own + j++, i);
            else if (!s.sink) {
                unsigned char *d = ra_q_slot(out.q, out.own + j);
                if (j != i)  // close the gap a dead letter left
                    ra_copy_payload(d + RA_SLOT_HEADER_SIZE, ra_q_slot(out.q, out.own + i) + RA_SLOT_HEADER_SIZE, s.res[i]);
                write_out_header(d, i);
                j++;
            }
            processed++;
        }
        if (!s.sink && j) { out.own += j; dirty |= 1u; }
    }

    __device__ __forceinline__ void store_counters() {
        ra_store_relaxed_sys((ra_u64 *)(ctrl + RA_CB_OFF_PROCESSED), processed);
        ra_store_relaxed_sys((ra_u64 *)(ctrl + RA_CB_OFF_DROPPED), dropped);
        ra_store_relaxed_sys((ra_u64 *)(ctrl + RA_CB_OFF_ERRORS), errors);
        ra_store_relaxed_sys((ra_u64 *)(ctrl + RA_CB_OFF_TRACED), traced);
        ra_store_relaxed_sys((ra_u64 *)(ctrl + RA_CB_OFF_BUSY), busy);
    }

    // ---- the loop's own account: busy time and link bytes ----------------
    // Thread 0. Each link's counters are stored relaxed before the fence or
    // release store that publishes its tail or head, which releases them: a
    // reader that sees the index finds them counted (as the Go producer and
    // consumer store theirs before the index, p2pqueue).

    // The payload bytes of a slot whose header is h, as the Go consumer
    // counts them (a length past the slot counts the slot's payload).
    static __device__ __forceinline__ ra_u64 payload_len(const ra_link_end &e, const unsigned char *h) {
        return min(ra_slot_len(h), ra_ll_cap(e));
    }
    static __device__ __forceinline__ void store_consumer(ra_link_end *e) {
        e->ops++;
        ra_store_relaxed_sys(ra_q_word(e->q, RA_Q_OFF_BYTES_OUT), e->bytes);
        ra_store_relaxed_sys(ra_q_word(e->q, RA_Q_OFF_RELEASES), e->ops);
    }
    static __device__ __forceinline__ void store_producer(ra_link_end *e) {
        e->ops++;
        ra_store_relaxed_sys(ra_q_word(e->q, RA_Q_OFF_BYTES_IN), e->bytes);
        ra_store_relaxed_sys(ra_q_word(e->q, RA_Q_OFF_PUBLISHES), e->ops);
    }

    // consumedInPlace: n slots of e from its head, read where they are,
    // consumed with one head store to come (a drop without drain).
    __device__ __forceinline__ void consumed_in_place(ra_link_end *e, ra_u64 n) {
        if (n == 0) return;
        ra_u32 hb[RA_SLOT_HEADER_SIZE / 4];
        for (ra_u64 i = 0; i < n; i++) e->bytes += payload_len(*e, ra_ll_header(*e, e->own + i, hb));
        store_consumer(e);
    }

    // account, at the start of flush: the batch's busy time, from its take
    // (the end of top, s.deq) to its release, as the sim loop's step
    // counts it; the payload bytes it consumed from the in-link (the staged
    // headers) and published on each out-link given results (an unrouted
    // batch's results on outs[0]: every result not dead-lettered;
    // publish_routed counts each link's as it copies), and every counter
    // stored.
    __device__ __forceinline__ void account() {
        busy += ra_globaltimer() + s.clk - s.deq;
        for (ra_u32 i = 0; i < s.n; i++) in->bytes += payload_len(*in, hdr(i));
        store_consumer(in);
        if ((!routed || s.sink) && (dirty & 1u))
            for (ra_u32 i = 0; i < s.n; i++)
                if (s.res[i] >= 0) s.outs[0].bytes += (ra_u32)s.res[i];
        for (ra_u32 d = 0; d < nout; d++)
            if (dirty & (1u << d)) store_producer(&s.outs[d]);
    }

    // flush, thread 0: the batch's release. The counters first; then one
    // fence, and relaxed stores of every out tail given results and of the
    // in-link's head. The fence makes each of those stores a release of
    // everything before it (PTX §8.8: a fence, then a strong write): the
    // block's result and header writes (ordered to thread 0 by the
    // barriers), every in-slot read, and the counters. So a producer that
    // sees head may overwrite the slots, a consumer that sees a tail finds
    // its results, and a host that reads head and then the counters finds
    // every message below head counted (it may count a batch twice while
    // the next one is in flight; exact once still, §3.2). Nothing reads an
    // in-slot after this (the records read the staged copies).
    __device__ __forceinline__ void flush() {
        account();
        store_counters();
        in->own += s.n;
        // A flagged out-link needs no fence (its words carry their flags)
        // and a flagged in-link's head is lazy (ll_head_due): no fence
        // when neither an indexed link nor an indexed head is published.
        const bool head = !in->ll || ll_head_due(*in);
        bool fence = !in->ll, sys = fence && in->sys;
        for (ra_u32 d = 0; d < nout; d++)
            if ((dirty & (1u << d)) && !s.outs[d].ll) { fence = true; sys |= s.outs[d].sys; }
        if (fence) ra_fence_acq_rel(sys |= head && in->sys);
        for (ra_u32 d = 0; d < nout; d++) {
            if (!(dirty & (1u << d))) continue;
            ra_u64 *t = ra_q_word(s.outs[d].q, RA_Q_OFF_TAIL);
            if (s.outs[d].ll) ra_store_relaxed(t, s.outs[d].own, s.outs[d].sys);  // for observers only
            else ra_store_fenced(t, s.outs[d].own, s.outs[d].sys);
        }
        dirty = 0;
        if (!head) return;
        if (fence) ra_store_fenced(ra_q_word(in->q, RA_Q_OFF_HEAD), in->own, in->sys);
        else ra_store_release(ra_q_word(in->q, RA_Q_OFF_HEAD), in->own, in->sys);  // after the counters
        in->pub = in->own;
    }

    // ---- flagged links (ra_ll.cuh) ------------------------------------
    // ll_head_due: a flagged in-link's head is published for space only:
    // once a quarter of its ring was consumed since the last publish (the
    // producer's cached head then still leaves it three quarters).
    static __device__ __forceinline__ bool ll_head_due(const ra_link_end &e) {
        return e.own - e.pub >= ((ra_u64)e.q.mask + 1) / 4;
    }
    // publish_head, thread 0: e's head if not yet published (a release;
    // its counters were stored before, by the flush that consumed).
    __device__ __forceinline__ void publish_head(ra_link_end *e) {
        if (e->own == e->pub) return;
        ra_store_release(ra_q_word(e->q, RA_Q_OFF_HEAD), e->own, e->sys);
        e->pub = e->own;
    }
    // publish_heads, thread 0: every lazy head, when the loop finds
    // nothing to take (a producer waiting for room gets it).
    __device__ __forceinline__ void publish_heads() {
        for (ra_u32 k = 0; k < nin && k < RA_MAX_IN_LINKS; k++)
            if (s.ins[k].q.base) publish_head(&s.ins[k]);
    }
    // stage_room: how many slots of in-link k a batch may take for the
    // staging area: its staged slots (or their headers, read in place)
    // and, with a flagged out-link, the results after them.
    __device__ __forceinline__ ra_u32 stage_room(ra_u32 k) const {
        const ra_link_end &e = s.ins[k];
        const ra_u32 p = ra_stage_pitch(e.ll ? e.q.slot_size / 2 : e.q.slot_size);
        const ra_u32 ip = p <= RA_STAGE_BYTES ? p : RA_SLOT_HEADER_SIZE;
        if (!llout) return p <= RA_STAGE_BYTES ? RA_STAGE_BYTES / p : RA_BATCH;
        return RA_STAGE_BYTES / (ip + res_pitch());
    }
    // Where result i is made: outs[0]'s slot, or with a flagged out-link
    // the staging area after the batch's staged in-slots (or headers),
    // as a logical slot (header, payload), res_pitch apart.
    __device__ __forceinline__ ra_u32 res_pitch() const { return ra_stage_pitch(s.ocap + RA_SLOT_HEADER_SIZE); }
    __device__ __forceinline__ unsigned char *res_slot(ra_u32 i) const {
        return (unsigned char *)s.staged + (size_t)s.n * (stg ? pitch : RA_SLOT_HEADER_SIZE) + (size_t)i * res_pitch();
    }
    __device__ __forceinline__ unsigned char *out_slot(ra_u32 i) const {
        return llout ? res_slot(i) : ra_q_slot(s.outs[0].q, s.outs[0].own + i);
    }
    // ll_put, thread 0: result i, its header written, into the flagged
    // slot for seq of out (a routed result, or one moved over a gap).
    __device__ __forceinline__ void ll_put(const ra_link_end &out, ra_u64 seq, ra_u32 i) {
        unsigned char *r = res_slot(i);
        write_out_header(r, i);
        ra_ll_write(out, seq, r);
    }

    // records, thread 0: the trace records of sampled messages, after the
    // results are on their way (a sampled message is not held up by its own
    // record), then traced, then the trace tail's release: a host that has
    // seen a record finds it counted.
    __device__ __forceinline__ void records() {
        for (ra_u32 i = 0; i < s.n && !s.stop; i++) {
            const unsigned char *h = hdr(i);
            if (s.res[i] < 0 || !(ra_slot_flags(h) & RA_FLAG_SAMPLED)) continue;
            if (ra_record(&s.tr, ctrl, s.ack, RA_REC_TRACE, h, stage, s.t0[i], s.t1[i], 0)) traced++;
            else { s.life = RA_STATE_FAULTED; s.stop = 1; }
        }
        if (s.tr.own != published_tr) {
            ra_store_relaxed_sys((ra_u64 *)(ctrl + RA_CB_OFF_TRACED), traced);
            ra_store_release_sys(ra_q_word(s.tr.q, RA_Q_OFF_TAIL), s.tr.own);
            published_tr = s.tr.own;
        }
    }

    // bottom, thread 0: the part of a step after the stage, run at the
    // start of the next top (a step always has a batch).
    __device__ __forceinline__ void bottom() {
        if (routed && !s.sink) publish_routed();
        else publish();
        flush();
        records();
    }

    // finish, thread 0: heads not yet published (never on a fault: a
    // corrupt link is left as it was found), the final counters, the
    // out-links closed after their last publish, the trace tail, the state,
    // and the trace ring closed last, so a drained pump means the kernel's
    // account is complete.
    __device__ __forceinline__ void finish() {
        for (ra_u32 k = 0; s.life != RA_STATE_FAULTED && k < nin && k < RA_MAX_IN_LINKS; k++) {
            if (s.ins[k].q.base && s.ins[k].own != s.ins[k].pub) ra_store_release(ra_q_word(s.ins[k].q, RA_Q_OFF_HEAD), s.ins[k].own, s.ins[k].sys);
        }
        store_counters();
        for (ra_u32 d = 0; d < nout && d < RA_MAX_OUT_LINKS; d++)
            if (s.outs[d].q.base) ra_store_release_sys32((ra_u32 *)(s.outs[d].q.base + RA_Q_OFF_CLOSED), 1);
        close_steal();
        if (s.tr.q.base) ra_store_release_sys(ra_q_word(s.tr.q, RA_Q_OFF_TAIL), s.tr.own);
        ra_store_release_sys32((ra_u32 *)(ctrl + RA_CB_OFF_STATE), s.life);
        if (s.tr.q.base) ra_store_release_sys32((ra_u32 *)(s.tr.q.base + RA_Q_OFF_CLOSED), 1);
    }
};

// ra_ring_loop is the persistent loop: one step per batch, every thread of
// the block through the same barriers.
template <typename STAGE>
__device__ void ra_ring_loop(const ra_ring_args &a) {
    RA_SHARED(ra_loop_shared, sh);
    if (ra_arg_u32(a, RA_ARG_OFF_VARIANT) == RA_LOOP_WARP) return ra_warp_loop<STAGE, false>(sh, a);  // ringkernel.LoopWarp
    if (ra_arg_u32(a, RA_ARG_OFF_VARIANT) == RA_LOOP_WARP_PREFETCH) return ra_warp_loop<STAGE, true>(sh, a);
    ra_loop<STAGE> L(sh, a);
    if (threadIdx.x == 0) L.attach(a);
    for (;;) {
        if (threadIdx.x == 0) L.top();  // publishes the last batch, then waits for the next
        __syncthreads();
        if (sh.stop) break;
        L.stage_in();  // ends with a barrier
        RA_PHASE_MARK(L, RA_PHASE_STAGE_IN);
        L.process();
        __syncthreads();
        L.headers();  // ends with a barrier when it writes any
        RA_PHASE_MARK(L, RA_PHASE_COMPUTE);
    }
    if (threadIdx.x == 0) { L.ph.flush(); L.finish(); }
}

// RA_RING_KERNEL defines the persistent ring kernel <name>_ring for a stage,
// RA_PORT_RING_KERNEL for a routing (RA_PORT_STAGE) one, RA_TYPED_RING_KERNEL
// for a typed (RA_TYPED_STAGE) one, RA_BUF_RING_KERNEL for one with bound
// buffers (RA_BUF_STAGE).
#define RA_RING_KERNEL(name) \
    extern "C" __global__ void name##_ring(ra_ring_args a) { ra_ring_loop<ra_plain<name> >(a); }
#define RA_PORT_RING_KERNEL(name) \
    extern "C" __global__ void name##_ring(ra_ring_args a) { ra_ring_loop<ra_ported<name> >(a); }
#define RA_TYPED_RING_KERNEL(name) \
    extern "C" __global__ void name##_ring(ra_ring_args a) { ra_ring_loop<ra_typed<name> >(a); }
#define RA_BUF_RING_KERNEL(name) \
    extern "C" __global__ void name##_ring(ra_ring_args a) { ra_ring_loop<ra_buffered<name> >(a); }

#endif // RINGACTOR_CUH
