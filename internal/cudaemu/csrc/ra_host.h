// ra_host.h: the one shim that lets the system C++ compiler build the device
// code (kernels/cuda/ringactor.cuh and the stage .cu files, the same text
// NVRTC compiles) for the emulated driver and for the ThreadSanitizer
// harness. It is force-included (-include) before that code and defines
// RA_HOST, which selects ringactor.cuh's host seam: C++ atomics at the
// orders the GPU is promised, CLOCK_REALTIME for %globaltimer, and
// nanosleep for __nanosleep.
//
// A launch runs as CPU threads: ra_host_run_grid starts gridDim blocks of
// blockDim threads each (blockDim.x capped at RINGACTOR_EMU_THREADS,
// default 32; the capped count is what the code sees as blockDim.x, so its
// strided loops cover every index). Each thread has its own threadIdx and
// blockIdx; each block has its own shared memory (each RA_SHARED object in
// the block's arena) and its own barrier. __syncthreads is a
// real barrier at which a thread that has returned from the kernel counts
// as arrived, as bar.sync treats an exited warp on sm_70 and later.
// Waiting threads park on a futex, never spin: 32 threads per
// block on several emulated devices must not load a 2-core host.
//
// What the threads share goes through the seam (ringactor.cuh): every
// cross-agent load and store is a C++ atomic at the order its PTX form
// promises, and calls ra_host_seam first (the emulated driver's scope
// checker and jitter; a harness defines its own). Plain loads and stores of
// slot bytes stay plain, so ThreadSanitizer sees exactly the races a GPU
// would have.
#ifndef RA_HOST_H
#define RA_HOST_H

#define RA_HOST 1

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __cplusplus
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#define __global__
#define __device__ inline
#define __host__
#define __forceinline__
// Shared memory is per block: declare it with RA_SHARED(type, name)
// (ringactor.cuh), which the host build places in the block's arena. A bare __shared__ would be a
// per-thread local here, silently wrong with more than one thread.
#define __shared__ _Pragma("GCC error \"__shared__ is not supported by the host build (internal/cudaemu): declare block-shared data with RA_SHARED(type, name)\"")

struct ra_host_dim3 {
    unsigned x, y, z;
};

// Every cross-agent access of the device code calls this first, with its
// address and scope (1 .sys, 0 .gpu). Defined by the emulated driver
// (cudaemu.cpp: scope checker, jitter) or by a harness.
extern "C" void ra_host_seam(const void *p, int sys);

// ---- the cost ledger -----------------------------------------------------
// What a ring kernel's loop spends on its critical path, counted in the host
// build by the seams (ringactor.cuh calls ra_host_op and ra_host_fence
// there), __syncthreads and the idle backoff, into the ledger of the
// launch the thread runs for (ra_host_led: the emulated driver allocates
// one per *_ring launch and fills in the addresses below; null elsewhere,
// as in the ThreadSanitizer harness: nothing is counted). Only thread 0
// touches links and the control block, so the counters have one writer
// (atomics, stored with release: a reader on another thread may read them
// live, and one that has seen a count sees the counts made before it).
//
// A load is classified by its word (a link's tail, head or closed flag;
// the control block's command words or clock offset; anything else) and
// its scope. Loads are held per polling round: a round that ends in the
// idle backoff (ra_host_sleep_ns) adds them to the idle bank, a round that
// ends at thread 0's next __syncthreads (a batch, or the loop's end) to
// the work bank, so the work bank is what a message waits for.
// internal/gpubench/ledger.go mirrors RA_HOST_LEDGER_* by name and order.
enum {
    // loads, work bank (add RA_HOST_LEDGER_IDLE for the idle bank)
    RA_HOST_LEDGER_TAIL,    // an in-link's tail (ld.acquire: the ingress poll)
    RA_HOST_LEDGER_HEAD,    // an out-link's head (ld.acquire: room to publish)
    RA_HOST_LEDGER_CLOSED,  // a link's closed flag
    RA_HOST_LEDGER_CMD,     // the command seq, command and argument
    RA_HOST_LEDGER_CLOCK,   // the clock offset
    RA_HOST_LEDGER_OTHER,   // any other word (attach, barrier flags, stage id)
    RA_HOST_LEDGER_LD_SYS,  // all of the above at .sys scope
    RA_HOST_LEDGER_LD_GPU,  // all of the above at .gpu scope
    RA_HOST_LEDGER_IDLE,    // the same eight, idle bank
    // stores and fences
    RA_HOST_LEDGER_FENCE_SYS = 2 * RA_HOST_LEDGER_IDLE,  // fence.acq_rel.sys
    RA_HOST_LEDGER_FENCE_GPU,   // fence.acq_rel.gpu
    RA_HOST_LEDGER_REL_SYS,     // st.release.sys
    RA_HOST_LEDGER_REL_GPU,     // st.release.gpu
    RA_HOST_LEDGER_FENCED_SYS,  // st.relaxed.sys after a fence (a fenced release)
    RA_HOST_LEDGER_FENCED_GPU,  // st.relaxed.gpu after a fence
    RA_HOST_LEDGER_RLX_SYS,     // st.relaxed.sys (counters, last error)
    RA_HOST_LEDGER_BEATS,       // heartbeat stores (st.release.sys)
    // the block and the backoff
    RA_HOST_LEDGER_BARRIERS,  // __syncthreads reached by thread 0
    RA_HOST_LEDGER_SLEEPS,    // __nanosleep calls (idle backoff, trace ring full)
    RA_HOST_LEDGER_SLEEP_NS,  // ns they asked for
    // the loop's own counts, from its stores
    RA_HOST_LEDGER_BATCHES,   // in-link releases stored (one per batch taken)
    RA_HOST_LEDGER_MESSAGES,  // the last processed count stored
    RA_HOST_LEDGER_N,
};
// The seams' operations (ra_host_op).
enum { RA_HOST_LD_ACQ, RA_HOST_LD_RLX, RA_HOST_ST_REL, RA_HOST_ST_RLX, RA_HOST_ST_FENCED };
#define RA_HOST_LEDGER_MAX_LINKS 24
struct ra_host_ledger {
    // Filled by whoever allocates it, before the launch: the words to
    // classify by (link bases; the offsets of ringactor_layout.h).
    uintptr_t ctrl = 0, links[RA_HOST_LEDGER_MAX_LINKS] = {};
    unsigned nin = 0, nlinks = 0;  // links[0, nin) are in-links, then out-links
    unsigned off_tail = 0, off_head = 0, off_closed = 0, off_releases = 0, off_slots = 0;  // a link's header: [base, base + off_slots)
    unsigned off_cmd = 0, off_cmd_seq = 0, off_cmd_arg = 0, off_clock = 0, off_beat = 0, off_processed = 0;
    std::atomic<unsigned long long> c[RA_HOST_LEDGER_N] = {};
    unsigned long long round[RA_HOST_LEDGER_IDLE] = {};  // this polling round's loads (thread 0)
    // add: one writer, so a load and a store; a release, so a reader that
    // acquires a count sees every count the loop made before it.
    void add(int i, unsigned long long v = 1) { c[i].store(c[i].load(std::memory_order_relaxed) + v, std::memory_order_release); }
    // fold ends a polling round: its loads to the idle or the work bank.
    void fold(bool idle) {
        for (int i = 0; i < RA_HOST_LEDGER_IDLE; i++)
            if (round[i]) add(i + (idle ? RA_HOST_LEDGER_IDLE : 0), round[i]), round[i] = 0;
    }
};

// The block a thread belongs to: its barrier and its shared arena.
#define RA_HOST_SHARED_BYTES (64 * 1024)
#define RA_HOST_SHARED_OBJECTS 16
struct ra_host_block {
    unsigned size = 1;  // threads in the block
    // Low 32 bits: threads arrived at the current barrier; high 32 bits:
    // threads returned from the kernel, which count as arrived.
    std::atomic<unsigned long long> count{0};
    std::atomic<unsigned> gen{0};  // barriers passed; waiters park on it
    std::mutex shared_mu;          // the arena's table
    unsigned nshared = 0;
    const void *shared_key[RA_HOST_SHARED_OBJECTS];
    size_t shared_off[RA_HOST_SHARED_OBJECTS], shared_used = 0;
    alignas(64) unsigned char shared[RA_HOST_SHARED_BYTES];
};

#ifndef RA_HOST_MODULE
inline thread_local ra_host_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0};
inline thread_local ra_host_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
inline thread_local ra_host_block *ra_host_blk = nullptr;
// The launch a thread runs for (the emulated driver's Launch*): set on
// every thread of the grid from the launching thread's value.
inline thread_local void *ra_host_tag = nullptr;
// The cost ledger a thread counts into (null: none), set like ra_host_tag.
inline thread_local ra_host_ledger *ra_host_led = nullptr;
#else
// A user module (RA_HOST_MODULE): a user op's source, which the emulated
// driver builds into a library of its own (cudaemu.cpp's
// cudaemu_module_source) linked against the driver. The driver starts
// the grid's threads and sets these, so the module uses the driver's
// variables, not copies of its own.
extern thread_local ra_host_dim3 threadIdx, blockIdx, blockDim, gridDim;
extern thread_local ra_host_block *ra_host_blk;
extern thread_local void *ra_host_tag;
extern thread_local ra_host_ledger *ra_host_led;
#endif

// ra_host_op: what the host build's seams call before each cross-agent
// access (op RA_HOST_*; v the value a store writes): the driver's
// ra_host_seam, then the ledger.
inline void ra_host_op(const void *p, int sys, int op, unsigned long long v) {
    ra_host_seam(p, sys);
    ra_host_ledger *L = ra_host_led;
    if (L == nullptr) return;
    const uintptr_t a = (uintptr_t)p;
    int link = -1;
    unsigned off = 0;
    for (unsigned i = 0; i < L->nlinks; i++)
        if (a >= L->links[i] && a < L->links[i] + L->off_slots) link = (int)i, off = (unsigned)(a - L->links[i]);
    if (op == RA_HOST_LD_ACQ || op == RA_HOST_LD_RLX) {
        int k = RA_HOST_LEDGER_OTHER;
        if (link >= 0) {
            if (off == L->off_tail && (unsigned)link < L->nin) k = RA_HOST_LEDGER_TAIL;
            else if (off == L->off_head && (unsigned)link >= L->nin) k = RA_HOST_LEDGER_HEAD;
            else if (off == L->off_closed) k = RA_HOST_LEDGER_CLOSED;
        } else if (a == L->ctrl + L->off_cmd || a == L->ctrl + L->off_cmd_seq || a == L->ctrl + L->off_cmd_arg) {
            k = RA_HOST_LEDGER_CMD;
        } else if (a == L->ctrl + L->off_clock) {
            k = RA_HOST_LEDGER_CLOCK;
        }
        L->round[k]++;
        L->round[sys ? RA_HOST_LEDGER_LD_SYS : RA_HOST_LEDGER_LD_GPU]++;
        return;
    }
    if (op == RA_HOST_ST_REL) L->add(sys ? RA_HOST_LEDGER_REL_SYS : RA_HOST_LEDGER_REL_GPU);
    else if (op == RA_HOST_ST_FENCED) L->add(sys ? RA_HOST_LEDGER_FENCED_SYS : RA_HOST_LEDGER_FENCED_GPU);
    else if (sys) L->add(RA_HOST_LEDGER_RLX_SYS);
    if (link >= 0 && (unsigned)link < L->nin && off == L->off_releases) L->add(RA_HOST_LEDGER_BATCHES);
    else if (L->ctrl && a == L->ctrl + L->off_beat) L->add(RA_HOST_LEDGER_BEATS);
    else if (L->ctrl && a == L->ctrl + L->off_processed) L->c[RA_HOST_LEDGER_MESSAGES].store(v, std::memory_order_relaxed);
}

// ra_host_fence: what the host build's ra_fence_acq_rel calls (the
// ledger's count; the fence itself is the caller's).
inline void ra_host_fence(bool sys) {
    if (ra_host_ledger *L = ra_host_led) L->add(sys ? RA_HOST_LEDGER_FENCE_SYS : RA_HOST_LEDGER_FENCE_GPU);
}

// Ends the current barrier if c (the count after this thread's change)
// says every thread has arrived or exited: the arrivals go back to 0,
// then the generation moves (a release, which every waiter acquires) and
// the waiters are woken.
inline void ra_host_release_if_all(ra_host_block *b, unsigned long long c) {
    const unsigned arrived = (unsigned)c, exited = (unsigned)(c >> 32);
    if (arrived == 0 || arrived + exited < b->size) return;
    b->count.fetch_sub(arrived, std::memory_order_relaxed);
    b->gen.fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, (unsigned *)&b->gen, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// __syncthreads: arrive, then park on the generation until the last
// thread moves it (a futex: no spinning, no lock to re-take on wake-up).
inline void __syncthreads() {
    if (ra_host_ledger *L = ra_host_led; L != nullptr && threadIdx.x == 0) L->fold(false), L->add(RA_HOST_LEDGER_BARRIERS);
    ra_host_block *b = ra_host_blk;
    if (b == nullptr || b->size == 1) return;
    const unsigned g = b->gen.load(std::memory_order_acquire);
    const unsigned long long c = b->count.fetch_add(1, std::memory_order_acq_rel) + 1;
    if ((unsigned)c + (unsigned)(c >> 32) >= b->size) {
        ra_host_release_if_all(b, c);
        return;
    }
    while (b->gen.load(std::memory_order_acquire) == g)
        syscall(SYS_futex, (unsigned *)&b->gen, FUTEX_WAIT_PRIVATE, g, nullptr, nullptr, 0);
}

// A thread returned from the kernel: it counts as arrived at every later
// barrier of its block, as an exited warp does at bar.sync (sm_70+).
inline void ra_host_exit_block(ra_host_block *b) {
    const unsigned long long c = b->count.fetch_add(1ull << 32, std::memory_order_acq_rel) + (1ull << 32);
    ra_host_release_if_all(b, c);
}

// The block's shared memory: the object a RA_SHARED declaration names
// (key: a static of that declaration), placed in the block's arena the
// first time any thread of the block reaches it, the same object for
// every thread of the block after that.
template <class T>
inline T &ra_host_shared(const void *key) {
    ra_host_block *b = ra_host_blk;
    std::lock_guard<std::mutex> g(b->shared_mu);
    for (unsigned i = 0; i < b->nshared; i++)
        if (b->shared_key[i] == key) return *(T *)(b->shared + b->shared_off[i]);
    const size_t off = (b->shared_used + 63) & ~(size_t)63;
    if (b->nshared == RA_HOST_SHARED_OBJECTS || off + sizeof(T) > RA_HOST_SHARED_BYTES) abort();  // a GPU would refuse the launch
    b->shared_key[b->nshared] = key;
    b->shared_off[b->nshared++] = off;
    b->shared_used = off + sizeof(T);
    return *(T *)(b->shared + off);
}

// Threads per block the host build runs: RINGACTOR_EMU_THREADS (1 to
// 1024), default 32. A launch of more threads runs this many, and its code
// sees blockDim.x this large.
inline unsigned ra_host_thread_cap() {
    static const unsigned cap = [] {
        const char *s = getenv("RINGACTOR_EMU_THREADS");
        long v = s && *s ? strtol(s, 0, 10) : 32;
        return (unsigned)(v < 1 ? 1 : v > 1024 ? 1024 : v);
    }();
    return cap;
}

// ra_host_run_grid runs fn(params) as a grid: every thread of every block,
// concurrently, the calling thread as block 0's thread 0, and returns when
// all have returned. A block of more than one dimension runs as one thread
// (the device code here is one-dimensional).
typedef void (*ra_host_kernel)(void **params);
inline void ra_host_run_grid(ra_host_dim3 grid, ra_host_dim3 block, ra_host_kernel fn, void **params, void *tag) {
    unsigned threads = block.y == 1 && block.z == 1 ? block.x : 1;
    if (threads > ra_host_thread_cap()) threads = ra_host_thread_cap();
    if (threads == 0) threads = 1;
    const unsigned nblocks = grid.x * grid.y * grid.z;
    const ra_host_dim3 gdim = grid, bdim = {threads, 1, 1};
    std::vector<std::unique_ptr<ra_host_block> > blocks;
    for (unsigned b = 0; b < nblocks; b++) {
        blocks.emplace_back(new ra_host_block);
        blocks.back()->size = threads;
    }
    ra_host_ledger *const led = ra_host_led;  // the launching thread's, as the tag
    auto body = [=](ra_host_block *blk, unsigned b, unsigned t) {
        threadIdx = {t, 0, 0};
        blockIdx = {b % gdim.x, (b / gdim.x) % gdim.y, b / (gdim.x * gdim.y)};
        blockDim = bdim;
        gridDim = gdim;
        ra_host_blk = blk;
        ra_host_tag = tag;
        ra_host_led = led;
        fn(params);
        ra_host_exit_block(blk);
        ra_host_blk = nullptr;
    };
    std::vector<std::thread> ts;
    for (unsigned b = 0; b < nblocks; b++)
        for (unsigned t = 0; t < threads; t++)
            if (b || t) ts.emplace_back(body, blocks[b].get(), b, t);
    body(blocks[0].get(), 0, 0);
    for (auto &t : ts) t.join();
    threadIdx = {0, 0, 0};
    blockIdx = {0, 0, 0};
    blockDim = {1, 1, 1};
    gridDim = {1, 1, 1};
}

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

// ra_host_ledger_fold ends a polling round of a loop without a block
// barrier per batch (the warp loop, ra_warp.cuh): lane 0, once a step has
// polled, idle when it found nothing.
inline void ra_host_ledger_fold(bool idle) {
    if (ra_host_ledger *L = ra_host_led) L->fold(idle);
}

// __nanosleep: the kernel's backoff between polls. The OS rounds a short
// sleep up (timer slack, tens of microseconds), which keeps idle emulated
// kernels from eating a small machine's cores.
inline void ra_host_sleep_ns(unsigned ns) {
    if (ra_host_ledger *L = ra_host_led) L->fold(true), L->add(RA_HOST_LEDGER_SLEEPS), L->add(RA_HOST_LEDGER_SLEEP_NS, ns);
    struct timespec ts = {0, (long)ns};
    nanosleep(&ts, 0);
}
#endif  // __cplusplus

#endif  // RA_HOST_H
