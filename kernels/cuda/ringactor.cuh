// ringactor device-side helpers: link-queue access with the memory orders of
// docs/ARCHITECTURE.md §2 (one place per rule), the timer, and the stage signature.
// Plain CUDA C++ plus inline PTX; compiles with NVRTC 11.8 and newer.
#ifndef RINGACTOR_CUH
#define RINGACTOR_CUH

#include "ringactor_layout.h"
#include "ringactor_types.h"

typedef unsigned int ra_u32;
typedef unsigned long long ra_u64;

// ---- memory order -------------------------------------------------------
// Queue words read by another agent (the host or a peer GPU) use .sys scope;
// words only this GPU reads may use .gpu. Publishing is a store-release,
// observing a load-acquire; nothing read-modify-writes across the link.
// Three builds of the same rule: sm_70 and later (PTX acquire/release at
// the scope asked for), earlier GPUs (volatile plus a system fence), and
// the host build of the emulated driver (RA_HOST, internal/cudaemu: C++
// acquire/release, which the Go side's sync/atomic pairs with).
#if defined(RA_HOST)
__device__ __forceinline__ ra_u64 ra_load_acquire_sys(const ra_u64 *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
__device__ __forceinline__ void ra_store_release_sys(ra_u64 *p, ra_u64 v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
__device__ __forceinline__ ra_u32 ra_load_acquire_sys32(const ra_u32 *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
__device__ __forceinline__ void ra_store_release_sys32(ra_u32 *p, ra_u32 v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
#define ra_load_acquire_gpu ra_load_acquire_sys
#define ra_store_release_gpu ra_store_release_sys
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
#endif

// Scope by who else reads the word: sys when the host or a peer GPU does.
__device__ __forceinline__ ra_u64 ra_load_acquire(const ra_u64 *p, bool sys) {
    return sys ? ra_load_acquire_sys(p) : ra_load_acquire_gpu(p);
}
__device__ __forceinline__ void ra_store_release(ra_u64 *p, ra_u64 v, bool sys) {
    if (sys) ra_store_release_sys(p, v); else ra_store_release_gpu(p, v);
}

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
    return *(const volatile ra_u64 *)(ctrl + RA_CB_OFF_CLOCK_OFFSET);
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
    bool sys;
};

__device__ __forceinline__ bool ra_attach(unsigned char *base, ra_link_end *e, bool consumer, bool sys) {
    if (base == 0) return false;
    if (*(const volatile ra_u32 *)(base + RA_Q_OFF_MAGIC) != RA_Q_MAGIC) return false;
    ra_u32 cap = *(const volatile ra_u32 *)(base + RA_Q_OFF_CAPACITY);
    ra_u32 ss = *(const volatile ra_u32 *)(base + RA_Q_OFF_SLOT_SIZE);
    if (cap < RA_MIN_CAPACITY || cap > RA_MAX_CAPACITY || (cap & (cap - 1)) || ss < RA_MIN_SLOT_SIZE || ss % RA_SLOT_ALIGN) return false;
    e->q.base = base; e->q.mask = cap - 1; e->q.slot_size = ss; e->sys = sys;
    ra_u64 t = ra_load_acquire_sys(ra_q_word(e->q, RA_Q_OFF_TAIL));
    ra_u64 h = ra_load_acquire_sys(ra_q_word(e->q, RA_Q_OFF_HEAD));
    if (t - h > cap) return false;
    e->own = consumer ? h : t;
    e->pub = e->own;
    e->other = h;  // the consumer's tail cache starts empty, the producer's head cache exact
    return true;
}

// Slots published and not yet consumed; re-reads tail only when empty.
// Returns -1 on a tail no correct producer writes.
__device__ __forceinline__ long long ra_avail(ra_link_end *in) {
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
// (a corrupt head) or when the host posts a new command (seq moves past
// ack) while it waits: a stopped pump must not make the kernel unkillable.
// The caller faults.
__device__ bool ra_record(ra_link_end *tr, const unsigned char *ctrl, ra_u32 ack, ra_u32 kind, const unsigned char *msg,
                          ra_u32 stage, ra_u64 deq, ra_u64 done, int code) {
    unsigned ns = 0;
    for (;;) {
        long long fr = ra_free(tr, 1);
        if (fr < 0) return false;
        if (fr >= 1) break;
        ra_store_release(ra_q_word(tr->q, RA_Q_OFF_TAIL), tr->own, true);
        if (ra_load_acquire_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_COMMAND_SEQ)) != ack) return false;
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
    *(volatile int *)(ctrl + RA_CB_OFF_LAST_ERROR) = RA_CODE_CORRUPT_QUEUE;
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

// The loop calls its stage through one of these, in the typed signature
// (bytes in, bytes out): a float32 stage takes float vectors only and
// gives them, and a plain one always chooses port 0.
__device__ __forceinline__ int ra_float_result(int r, int cap_floats) {
    return r < 0 ? r : (r > cap_floats ? RA_CODE_BAD_RESULT : r * 4);
}
template <ra_stage_fn F> struct ra_plain {
    static __device__ __forceinline__ int run(const float *p, float *s, ra_u32 in_type, const unsigned char *in, int len,
                                              ra_u32 *out_type, unsigned char *o, int cap, int *port) {
        *port = 0;
        *out_type = RA_TYPE_FLOATS;
        if (in_type != RA_TYPE_FLOATS) return RA_CODE_WRONG_TYPE;
        if (len % 4) return RA_CODE_NOT_FLOATS;
        return ra_float_result(F(p, s, (const float *)in, len / 4, (float *)o, cap / 4), cap / 4);
    }
};
template <ra_port_stage_fn F> struct ra_ported {
    static __device__ __forceinline__ int run(const float *p, float *s, ra_u32 in_type, const unsigned char *in, int len,
                                              ra_u32 *out_type, unsigned char *o, int cap, int *port) {
        *port = 0;
        *out_type = RA_TYPE_FLOATS;
        if (in_type != RA_TYPE_FLOATS) return RA_CODE_WRONG_TYPE;
        if (len % 4) return RA_CODE_NOT_FLOATS;
        return ra_float_result(F(p, s, (const float *)in, len / 4, (float *)o, cap / 4, port), cap / 4);
    }
};
template <ra_typed_stage_fn F> struct ra_typed {
    static __device__ __forceinline__ int run(const float *p, float *s, ra_u32 in_type, const unsigned char *in, int len,
                                              ra_u32 *out_type, unsigned char *o, int cap, int *port) {
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

template <typename STAGE>
__device__ void ra_ring_loop(const ra_ring_args &a) {
    __shared__ ra_link_end ins[RA_MAX_IN_LINKS], outs[RA_MAX_OUT_LINKS], tr;
    __shared__ ra_u32 life, ack, n, stop, cur, next, ocap;
    __shared__ bool drain, sink;
    __shared__ ra_u64 deq, clk;
    __shared__ int res[RA_BATCH];
    __shared__ ra_u64 t0[RA_BATCH], t1[RA_BATCH];
    __shared__ ra_u64 staged[RA_STAGE_BYTES / 8];
    __shared__ int ports[RA_BATCH];     // the port each message's stage call chose
    __shared__ ra_u32 otype[RA_BATCH];  // each result's type id
    __shared__ bool gaps;
    unsigned char *ctrl = ra_arg_ptr(a, RA_ARG_OFF_CTRL);
    // Out-links: results go down outs[0] unless the stage routes
    // (ra_route_pick); a routed result is written into outs[0]'s slot
    // first, as scratch, and copied to where its route sends it.
    const ra_u32 nout = ra_arg_u32(a, RA_ARG_OFF_NUM_OUT);
    const ra_u32 route = ra_arg_u32(a, RA_ARG_OFF_ROUTE);
    const ra_u32 key_off = ra_arg_u32(a, RA_ARG_OFF_KEY_OFFSET);
    const bool routed = route != RA_ROUTE_ONE;
    ra_link_end &out = outs[0];
    const float *params = (const float *)ra_arg_ptr(a, RA_ARG_OFF_PARAMS);
    float *state = (float *)ra_arg_ptr(a, RA_ARG_OFF_STATE);
    unsigned char *sink_buf = ra_arg_ptr(a, RA_ARG_OFF_SINK);
    ra_u32 nin = ra_arg_u32(a, RA_ARG_OFF_NUM_IN);
    ra_u32 in_sys = ra_arg_u32(a, RA_ARG_OFF_IN_SYS);
    ra_u32 *cmd = (ra_u32 *)(ctrl + RA_CB_OFF_COMMAND);
    ra_u32 *seq = (ra_u32 *)(ctrl + RA_CB_OFF_COMMAND_SEQ);
    ra_u32 stage = *(const volatile ra_u32 *)(ctrl + RA_CB_OFF_STAGE_ID);
    ra_u64 processed = 0, dropped = 0, errors = 0, traced = 0;
    ra_u64 published_tr = 0;  // trace tail last published
    ra_u64 rr = 0;            // results routed one at a time so far (round-robin's turn)
    ra_u32 iter = 0;
    ra_u64 last_beat = 0;
    unsigned ns = 0;
    if (threadIdx.x == 0) {
        stop = 0; n = 0; cur = 0; next = 0; drain = false; sink = nout == 0;
        clk = ra_clock_offset(ctrl);
        tr.q.base = 0;
        for (ra_u32 k = 0; k < RA_MAX_OUT_LINKS; k++) outs[k].q.base = 0;
        for (ra_u32 k = 0; k < RA_MAX_IN_LINKS; k++) ins[k].q.base = 0;
        life = RA_STATE_LAUNCHED;
        ack = ra_load_acquire_sys32((const ra_u32 *)(ctrl + RA_CB_OFF_COMMAND_ACK));
        const ra_u32 out_sys = ra_arg_u32(a, RA_ARG_OFF_OUT_SYS);
        bool ok = nin >= 1 && nin <= RA_MAX_IN_LINKS && nout <= RA_MAX_OUT_LINKS && (nout <= 1 || routed) &&
                  route <= RA_ROUTE_PORT && ra_attach(ra_arg_ptr(a, RA_ARG_OFF_TRACE), &tr, false, true);
        ocap = 0xffffffffu;  // bytes: the least any out-slot holds, so a routed result fits wherever it goes
        for (ra_u32 k = 0; ok && k < nout; k++) {
            ok = ra_attach(ra_arg_ptr(a, RA_ARG_OFF_OUT + 8 * k), &outs[k], false, (out_sys >> k) & 1u);
            if (ok) ocap = min(ocap, outs[k].q.slot_size - RA_SLOT_HEADER_SIZE);
        }
        for (ra_u32 k = 0; ok && k < nin; k++) ok = ra_attach(ra_arg_ptr(a, RA_ARG_OFF_IN + 8 * k), &ins[k], true, (in_sys >> k) & 1u);
        if (!ok) {
            life = RA_STATE_FAULTED;
            *(int *)(ctrl + RA_CB_OFF_LAST_ERROR) = RA_CODE_CORRUPT_QUEUE;
            stop = 1;
        }
        ra_store_release_sys32((ra_u32 *)(ctrl + RA_CB_OFF_STATE), life);
    }
    __syncthreads();
    // Every thread leaves through the `if (stop) break` after a barrier, so
    // no warp reads stop while thread 0 may write it.
    for (;;) {
        if (stop) break;
        if (threadIdx.x == 0) {
            // Words in host memory cost a PCIe round trip to read and a
            // .sys fence to publish: the heartbeat and the clock offset
            // every RA_BEAT_NS (the watchdog's scale is milliseconds), the
            // command word every 8th iteration (a command waits a few us).
            ra_u32 it = iter++;
            ra_u64 now = ra_globaltimer();
            if (it == 0 || now - last_beat >= RA_BEAT_NS) {
                last_beat = now;
                clk = ra_clock_offset(ctrl);
                ra_store_release_sys((ra_u64 *)(ctrl + RA_CB_OFF_HEARTBEAT), now + clk);
            }
            ra_u32 s = (it & 7u) == 0 ? ra_load_acquire_sys32(seq) : ack;
            // Commands: the lifecycle table of ringkernel.Next.
            if (s != ack) {
                ra_u32 c = *(volatile ra_u32 *)cmd;
                if (c == RA_CMD_ACTIVATE && (life == RA_STATE_LAUNCHED || life == RA_STATE_IDLE)) life = RA_STATE_ACTIVE;
                else if (c == RA_CMD_DEACTIVATE && life == RA_STATE_ACTIVE) life = RA_STATE_IDLE;
                else if (c == RA_CMD_TERMINATE) { life = RA_STATE_TERMINATING; drain = false; }
                else if (c == RA_CMD_TERMINATE_DRAIN) { life = RA_STATE_TERMINATING; drain = true; }
                ack = s;
                ra_store_release_sys32((ra_u32 *)(ctrl + RA_CB_OFF_STATE), life);
                ra_store_release_sys32((ra_u32 *)(ctrl + RA_CB_OFF_COMMAND_ACK), s);
            }
            n = 0;
            bool take = life == RA_STATE_ACTIVE || (life == RA_STATE_TERMINATING && drain);
            if (life == RA_STATE_TERMINATING && !drain) {
                // Dead-letter what is queued on every in-link, then stop.
                for (ra_u32 k = 0; k < nin; k++) {
                    // Until the link is empty as its tail now reads (ra_avail
                    // re-reads it once the cached count is used up): the
                    // host closes ingress before it terminates.
                    for (;;) {
                        long long av = ra_avail(&ins[k]);
                        if (av < 0) { ra_fault(ctrl, &tr, stage, clk, &life); break; }
                        if (av == 0) break;
                        ra_u64 i = 0;
                        for (; i < (ra_u64)av; i++) {
                            if (!ra_record(&tr, ctrl, ack, RA_REC_DEAD_LETTER, ra_q_slot(ins[k].q, ins[k].own + i), stage, 0, ra_globaltimer() + clk, RA_CODE_SHUTDOWN)) break;
                            dropped++;
                        }
                        ins[k].own += i;
                        ra_store_release(ra_q_word(ins[k].q, RA_Q_OFF_HEAD), ins[k].own, ins[k].sys);
                        // The pump stopped: what is left stays queued, the host's to account for.
                        if (i < (ra_u64)av) { life = RA_STATE_FAULTED; break; }
                    }
                }
                if (life != RA_STATE_FAULTED) life = RA_STATE_TERMINATED;
                stop = 1;
            } else if (take) {
                // The first in-link with messages, from where the last batch
                // left off; all closed and drained ends the loop.
                bool done = true;
                for (ra_u32 j = 0; j < nin && n == 0 && !stop; j++) {
                    ra_u32 k = (next + j) % nin;
                    long long av = ra_avail(&ins[k]);
                    if (av < 0) { ra_fault(ctrl, &tr, stage, clk, &life); stop = 1; break; }
                    if (av == 0) {
                        // closed is set after the last publish: re-read tail after seeing it
                        if (!(ra_closed(&ins[k]) && ra_avail(&ins[k]) == 0)) done = false;
                        continue;
                    }
                    done = false;
                    // Room for the whole batch on every out-link: a routed
                    // batch may send all of it down any one.
                    long long fr = RA_BATCH;
                    for (ra_u32 o = 0; o < nout && fr > 0; o++) fr = min(fr, ra_free(&outs[o], 1));
                    if (fr < 0) { ra_fault(ctrl, &tr, stage, clk, &life); stop = 1; break; }
                    n = (ra_u32)min(min(av, fr), (long long)RA_BATCH);
                    if (ra_stage_pitch(ins[k].q.slot_size) <= RA_STAGE_BYTES) n = min(n, RA_STAGE_BYTES / ra_stage_pitch(ins[k].q.slot_size));
                    cur = k;
                    next = (k + 1) % nin;
                }
                if (!stop && n == 0 && done) { life = RA_STATE_TERMINATED; stop = 1; }
            }
            deq = ra_globaltimer() + clk;
        }
        __syncthreads();
        if (stop) break;
        ra_link_end *in = &ins[cur];
        // In-slots into shared memory, all threads at once; the batch was
        // cut to fit, so this is all or nothing. Thread 0's acquire of tail
        // and the barrier above order these loads after the producer's
        // writes.
        const ra_u32 pitch = ra_stage_pitch(in->q.slot_size);
        const bool stg = pitch <= RA_STAGE_BYTES;
        if (stg && n) {
            ra_u32 words = in->q.slot_size / 8, pw = pitch / 8;
            for (ra_u32 x = threadIdx.x; x < n * words; x += blockDim.x) {
                ra_u32 i = x / words, o = x - i * words;
                staged[i * pw + o] = ((const ra_u64 *)ra_q_slot(in->q, in->own + i))[o];
            }
            __syncthreads();
        }
#define RA_IN_SLOT(i) (stg ? (const unsigned char *)staged + (size_t)(i) * pitch : ra_q_slot(in->q, in->own + (i)))
        // The stage: one message per thread. A stage with state sees its
        // messages one at a time, in order, on thread 0.
        const bool one = state != 0;
        if (!one || threadIdx.x == 0) {
            for (ra_u32 i = one ? 0 : threadIdx.x; i < n; i += one ? 1 : blockDim.x) {
                const unsigned char *m = RA_IN_SLOT(i);
                ra_u32 len = ra_slot_len(m);
                unsigned char *o; int cap;
                if (sink) { cap = (int)(in->q.slot_size - RA_SLOT_HEADER_SIZE); o = sink_buf + (size_t)i * cap; }
                else { o = ra_q_slot(out.q, out.own + i) + RA_SLOT_HEADER_SIZE; cap = (int)ocap; }
                // Host time as this device estimates it agrees with the
                // enqueue stamp (the host's, or another device's) only to
                // the calibrations' error: where this clock reads behind
                // the stamp, the message's times move later by the gap,
                // so it is never dequeued before it was enqueued and its
                // service time stays one clock's difference.
                const ra_u64 enq = *(const ra_u64 *)(m + RA_SLOT_OFF_ENQUEUED);
                const ra_u64 now = ra_globaltimer() + clk;
                const ra_u64 gap = enq > now ? enq - now : 0;
                t0[i] = now + gap;
                if (len > in->q.slot_size - RA_SLOT_HEADER_SIZE) res[i] = RA_CODE_CORRUPT_SLOT;
                else {
                    int port = 0;
                    ra_u32 ot = 0;
                    res[i] = STAGE::run(params, state, *(const ra_u32 *)(m + RA_SLOT_OFF_TYPE), m + RA_SLOT_HEADER_SIZE, (int)len, &ot, o, cap, &port);
                    ports[i] = port;
                    otype[i] = ot;
                }
                t1[i] = ra_globaltimer() + clk + gap;
            }
        }
        __syncthreads();
        // Out-slot headers, one thread each, when no dead letter left a gap
        // to close (the usual case); otherwise thread 0 compacts below.
        if (threadIdx.x == 0) {
            bool g = false;
            for (ra_u32 i = 0; i < n; i++) g |= res[i] < 0;
            gaps = g;
        }
        __syncthreads();
        if (!gaps && !sink && !routed) {
            for (ra_u32 i = threadIdx.x; i < n; i += blockDim.x) {
                const unsigned char *m = RA_IN_SLOT(i);
                ra_u32 flags = ra_slot_flags(m);
                ra_write_header(ra_q_slot(out.q, out.own + i), ra_slot_id(m), otype[i], (ra_u32)res[i], flags, stage,
                                (flags & RA_FLAG_SAMPLED) ? t1[i] : 0);
            }
            __syncthreads();  // the headers before thread 0 publishes them
        }
        bool sys_fenced = false;  // thread 0: a .sys release done this step
        if (threadIdx.x == 0 && routed && !sink) {
            // Each result to the out-link(s) its route picks, in order per
            // link. A result sits in outs[0]'s slot i; outs[0]'s own
            // results only ever move down to a slot at or below i, and a
            // copy for every other link is taken first, so no result is
            // overwritten before it is read.
            ra_u32 cnt[RA_MAX_OUT_LINKS];
            for (ra_u32 d = 0; d < nout; d++) cnt[d] = 0;
            for (ra_u32 i = 0; i < n; i++) {
                const unsigned char *m = RA_IN_SLOT(i);
                const unsigned char *src = ra_q_slot(out.q, out.own + i) + RA_SLOT_HEADER_SIZE;
                ra_u32 dst = 0;
                if (res[i] >= 0 && route != RA_ROUTE_ALL) {
                    int c = ra_route_pick(route, nout, rr, src, (ra_u32)res[i], key_off, ports[i], &dst);
                    if (c < 0) res[i] = c;
                }
                if (res[i] < 0) {
                    if (!ra_record(&tr, ctrl, ack, RA_REC_DEAD_LETTER, m, stage, deq, t1[i], res[i])) { life = RA_STATE_FAULTED; stop = 1; }
                    dropped++;
                    if (!ra_not_stage_error(res[i])) errors++;
                    *(int *)(ctrl + RA_CB_OFF_LAST_ERROR) = res[i];
                    *(ra_u64 *)(ctrl + RA_CB_OFF_LAST_ERROR_ID) = ra_slot_id(m);
                    continue;
                }
                if (route != RA_ROUTE_ALL) rr++;
                const ra_u32 flags = ra_slot_flags(m);
                const ra_u32 first = route == RA_ROUTE_ALL ? nout - 1 : dst;
                for (ra_u32 d = first + 1; d-- > 0;) {  // outs[0] last
                    if (route != RA_ROUTE_ALL && d != dst) break;
                    unsigned char *ds = ra_q_slot(outs[d].q, outs[d].own + cnt[d]);
                    if (!(d == 0 && cnt[0] == i)) ra_copy_payload(ds + RA_SLOT_HEADER_SIZE, src, res[i]);
                    ra_write_header(ds, ra_slot_id(m), otype[i], (ra_u32)res[i], flags, stage, (flags & RA_FLAG_SAMPLED) ? t1[i] : 0);
                    cnt[d]++;
                }
                processed++;
            }
            for (ra_u32 d = 0; d < nout; d++) {
                if (!cnt[d]) continue;
                outs[d].own += cnt[d];
                ra_store_release(ra_q_word(outs[d].q, RA_Q_OFF_TAIL), outs[d].own, outs[d].sys);  // the slots above first
                sys_fenced |= outs[d].sys;
            }
        } else if (threadIdx.x == 0 && !gaps) {
            processed += n;
            if (!sink && n) {
                out.own += n;
                ra_store_release(ra_q_word(out.q, RA_Q_OFF_TAIL), out.own, out.sys);  // every thread's slots above first
                sys_fenced = out.sys;
            }
        } else if (threadIdx.x == 0) {
            ra_u32 j = 0;
            for (ra_u32 i = 0; i < n; i++) {
                const unsigned char *m = RA_IN_SLOT(i);
                if (res[i] < 0) {
                    if (!ra_record(&tr, ctrl, ack, RA_REC_DEAD_LETTER, m, stage, deq, t1[i], res[i])) { life = RA_STATE_FAULTED; stop = 1; }
                    dropped++;
                    if (!ra_not_stage_error(res[i])) errors++;
                    *(int *)(ctrl + RA_CB_OFF_LAST_ERROR) = res[i];
                    *(ra_u64 *)(ctrl + RA_CB_OFF_LAST_ERROR_ID) = ra_slot_id(m);
                    continue;
                }
                ra_u32 flags = ra_slot_flags(m);
                if (!sink) {
                    unsigned char *d = ra_q_slot(out.q, out.own + j);
                    if (j != i)  // close the gap a dead letter left
                        ra_copy_payload(d + RA_SLOT_HEADER_SIZE, ra_q_slot(out.q, out.own + i) + RA_SLOT_HEADER_SIZE, res[i]);
                    ra_write_header(d, ra_slot_id(m), otype[i], (ra_u32)res[i], flags, stage, (flags & RA_FLAG_SAMPLED) ? t1[i] : 0);
                    j++;
                }
                processed++;
            }
            if (!sink && j) {
                out.own += j;
                ra_store_release(ra_q_word(out.q, RA_Q_OFF_TAIL), out.own, out.sys);  // the slots above first
                sys_fenced = out.sys;
            }
        }
        if (threadIdx.x == 0) {
            // Trace records after the results are on their way: a sampled
            // message is not held up by its own record.
            for (ra_u32 i = 0; i < n && !stop; i++) {
                const unsigned char *m = RA_IN_SLOT(i);
                if (res[i] < 0 || !(ra_slot_flags(m) & RA_FLAG_SAMPLED)) continue;
                if (ra_record(&tr, ctrl, ack, RA_REC_TRACE, m, stage, t0[i], t1[i], 0)) traced++;
                else { life = RA_STATE_FAULTED; stop = 1; }
            }
            // Head, then the counters, then the trace tail: a host that
            // has seen a dead letter finds it counted (the trace pump reads
            // the tail, then the records), and a host reading the counters
            // and the link together sees each message once.
            if (n) {
                in->own += n;
                // Done reading the slots. The out-link's .sys release just
                // above already ordered those reads before anything later,
                // so then a plain store publishes head as well as a second
                // fence would.
                if (sys_fenced) *(volatile ra_u64 *)ra_q_word(in->q, RA_Q_OFF_HEAD) = in->own;
                else ra_store_release(ra_q_word(in->q, RA_Q_OFF_HEAD), in->own, in->sys);
                in->pub = in->own;
                ns = 0;
                *(volatile ra_u64 *)(ctrl + RA_CB_OFF_PROCESSED) = processed;
                *(volatile ra_u64 *)(ctrl + RA_CB_OFF_DROPPED) = dropped;
                *(volatile ra_u64 *)(ctrl + RA_CB_OFF_ERRORS) = errors;
                *(volatile ra_u64 *)(ctrl + RA_CB_OFF_TRACED) = traced;
                if (tr.own != published_tr) {
                    ra_store_release_sys(ra_q_word(tr.q, RA_Q_OFF_TAIL), tr.own);
                    published_tr = tr.own;
                }
            } else {
                ra_backoff(&ns);  // idle: sleep a little, then look at the command word again
            }
        }
        __syncthreads();
#undef RA_IN_SLOT
    }
    if (threadIdx.x == 0) {
        // Heads not yet published (never on a fault: a corrupt link is
        // left as it was found).
        for (ra_u32 k = 0; life != RA_STATE_FAULTED && k < nin && k < RA_MAX_IN_LINKS; k++) {
            if (ins[k].q.base && ins[k].own != ins[k].pub) ra_store_release(ra_q_word(ins[k].q, RA_Q_OFF_HEAD), ins[k].own, ins[k].sys);
        }
        // Close the out-link after its last publish and the trace ring last,
        // so a drained pump means the kernel's account is complete.
        *(volatile ra_u64 *)(ctrl + RA_CB_OFF_PROCESSED) = processed;
        *(volatile ra_u64 *)(ctrl + RA_CB_OFF_DROPPED) = dropped;
        *(volatile ra_u64 *)(ctrl + RA_CB_OFF_ERRORS) = errors;
        *(volatile ra_u64 *)(ctrl + RA_CB_OFF_TRACED) = traced;
        for (ra_u32 d = 0; d < nout && d < RA_MAX_OUT_LINKS; d++)
            if (outs[d].q.base) ra_store_release_sys32((ra_u32 *)(outs[d].q.base + RA_Q_OFF_CLOSED), 1);
        if (tr.q.base) ra_store_release_sys(ra_q_word(tr.q, RA_Q_OFF_TAIL), tr.own);
        ra_store_release_sys32((ra_u32 *)(ctrl + RA_CB_OFF_STATE), life);
        if (tr.q.base) ra_store_release_sys32((ra_u32 *)(tr.q.base + RA_Q_OFF_CLOSED), 1);
    }
}

// RA_RING_KERNEL defines the persistent ring kernel <name>_ring for a stage,
// RA_PORT_RING_KERNEL for a routing (RA_PORT_STAGE) one, RA_TYPED_RING_KERNEL
// for a typed (RA_TYPED_STAGE) one.
#define RA_RING_KERNEL(name) \
    extern "C" __global__ void name##_ring(ra_ring_args a) { ra_ring_loop<ra_plain<name> >(a); }
#define RA_PORT_RING_KERNEL(name) \
    extern "C" __global__ void name##_ring(ra_ring_args a) { ra_ring_loop<ra_ported<name> >(a); }
#define RA_TYPED_RING_KERNEL(name) \
    extern "C" __global__ void name##_ring(ra_ring_args a) { ra_ring_loop<ra_typed<name> >(a); }

#endif // RINGACTOR_CUH
