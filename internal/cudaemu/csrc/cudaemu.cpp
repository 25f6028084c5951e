// cudaemu.cpp: an emulated libcuda. Loaded through RINGACTOR_LIBCUDA exactly
// as the real driver is, it runs the host build of the device code (the
// ring-kernel loop and the built-in stages, compiled from the same sources
// NVRTC compiles, through ra_host.h) on threads, so the Go CUDA backend runs
// end to end on a machine without a GPU. See internal/cudaemu's package doc
// for what it proves and what it cannot.
//
//   - RINGACTOR_EMU_DEVICES devices (default 3), each with
//     RINGACTOR_EMU_SMS SMs (default 8), RINGACTOR_EMU_BLOCKS_PER_SM
//     co-resident blocks per SM (default 4) and RINGACTOR_EMU_MEMORY_MIB of
//     memory (default 4096); RINGACTOR_EMU_PEERS says which pairs have
//     peer access: "all" (default), "none" or pairs like "0-1,1-2".
//   - Device memory and mapped pinned memory are host allocations whose
//     device pointer is the host address; fresh memory is filled with 0xA5,
//     as a GPU's is not zeroed.
//   - cuModuleLoadDataEx takes PTX text and resolves each .entry to its host
//     build (the table the build generates, cudaemu_kernels); PTX with a
//     kernel that has none (a user stage) fails with CUDA_ERROR_INVALID_PTX
//     and says so in the JIT error log.
//   - cuLaunchKernel copies the arguments and runs the kernel's grid on
//     threads of its own: every block, each of blockDim.x threads (capped at
//     RINGACTOR_EMU_THREADS, default 32), with per-block shared memory and a
//     real __syncthreads (ra_host.h). A stream is NOT_READY while a kernel
//     launched on it runs.
//
// The rules a real driver punishes are enforced loudly: the call fails with
// CUDA_ERROR_NOT_PERMITTED (or CUDA_ERROR_INVALID_CONTEXT), one line goes
// to stderr, and a counter the tests read (device attribute 9100) goes up:
//   - any call that needs a context without one current on the thread;
//   - a call that waits for the device while a ring kernel runs in the
//     context: cuCtxSynchronize, cuMemFree, cuMemFreeHost, cuModuleUnload,
//     cuStreamSynchronize or cuEventSynchronize on work that includes a
//     ring kernel still running 1 s later (a kernel told to stop ends
//     well within that), and the synchronous cuMemcpy/cuMemset (legacy
//     stream) while a ring kernel runs on the legacy stream or a blocking
//     stream;
//   - a module load or cuModuleGetFunction while a ring kernel runs in the
//     context (with lazy loading, a real driver may synchronize the
//     context there, which never returns under a persistent kernel).
// A ring kernel is one whose name ends in "_ring", or the clock kernel
// (ra_clock), which also spins until the host tells it to stop.
//
// Scope and placement (counted and reported the same way):
//   - at the launch of a *_ring kernel, every non-null pointer of its
//     ra_ring_args (control block, in-links, out-links, trace ring, params,
//     state, sink; offsets RA_ARG_OFF_* of ringactor_layout.h) must lie in
//     an allocation the launching context may touch: its own device's
//     memory, another device's memory only with peer access to it enabled
//     in the launching context, pinned host memory of the launching
//     context or allocated PORTABLE; an address in no allocation at all is
//     refused too. The launch fails with CUDA_ERROR_NOT_PERMITTED.
//   - ra_host_seam(p, sys), which the host build of the device loop calls
//     before every cross-agent access (queue words, control block,
//     counters; sys 1 for a .sys-scope access, 0 for .gpu): a .gpu-scope
//     access must be to device memory of the kernel's own device, and a
//     word a kernel reaches with .gpu scope must not be touched by a
//     running kernel of another device (on a GPU the other device would
//     not see it, or see it late). Each word is reported once per kernel.
//     The kernel is the Launch in ra_host_tag, which every thread of a
//     launched block has set (null elsewhere: not checked).
//
// Timing modes, read once at cuInit:
//   - RINGACTOR_EMU_COPY_LAG_US: cuMemsetD8 and cuMemcpyHtoD (and
//     cuMemcpyHtoDAsync) to DEVICE memory land that many microseconds
//     after the call, in order, per context, written by a worker thread of
//     the context (the source of an HtoD is copied at the call, as the
//     driver stages pageable memory). As the CUDA driver documents it, the
//     copies are waited for by: cuEventRecord on the legacy stream or a
//     blocking stream (then cuEventSynchronize and cuEventQuery reflect
//     them), cuStreamSynchronize and cuStreamQuery of such a stream,
//     cuMemcpyDtoH in that context (it waits for them first), a launch on
//     the legacy or a blocking stream of that context (the launch call
//     waits for them, so the kernel starts after; a GPU would return at
//     once), cuCtxSynchronize, and cuMemFree (which synchronizes). An
//     event, synchronize or copy on a non-blocking stream waits only for
//     the copies queued on that stream. Nothing else waits: a launch on a
//     non-blocking stream, and anything in ANOTHER context (a kernel of
//     another device that reads this memory through the peer mapping,
//     say), may see the memory before the copies land. Memory of mapped
//     pinned host memory is written at once, as the host writes it.
//   - RINGACTOR_EMU_JITTER=1: ra_host_seam yields the CPU (sched_yield) at
//     every call and sleeps about 1 us every 64th, which widens the
//     interleavings of kernels and host threads.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <sched.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudaemu.h"
#include "ringactor_layout.h"

// ra_host_tag (ra_host.h) is the Launch a kernel thread runs: launch()
// passes it to ra_host_run_grid, which sets it on every thread of the grid
// (null on other threads).

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    NOT_INITIALIZED = 3,
    NO_DEVICE = 100,
    INVALID_DEVICE = 101,
    INVALID_IMAGE = 200,
    INVALID_CONTEXT = 201,
    INVALID_PTX = 218,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
    NOT_READY = 600,
    LAUNCH_OUT_OF_RESOURCES = 701,
    PEER_ACCESS_ALREADY_ENABLED = 704,
    PEER_ACCESS_NOT_ENABLED = 705,
    NOT_PERMITTED = 800,
    NOT_SUPPORTED = 801,
};

namespace {

struct Config {
    int devices = 3, sms = 8, blocks_per_sm = 4;
    long long memory_mib = 4096;
    std::vector<std::vector<bool>> peer;
    long long copy_lag_us = 0;  // RINGACTOR_EMU_COPY_LAG_US
    bool jitter = false;        // RINGACTOR_EMU_JITTER=1
};

int env_int(const char *name, int def, int lo, int hi) {
    const char *s = getenv(name);
    if (!s || !*s) return def;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "cudaemu: %s=%s: want a number from %d to %d; using %d\n", name, s, lo, hi, def);
        return def;
    }
    return (int)v;
}

Config load_config() {
    Config c;
    c.devices = env_int("RINGACTOR_EMU_DEVICES", 3, 1, 64);
    c.sms = env_int("RINGACTOR_EMU_SMS", 8, 1, 1024);
    c.blocks_per_sm = env_int("RINGACTOR_EMU_BLOCKS_PER_SM", 4, 1, 64);
    c.memory_mib = env_int("RINGACTOR_EMU_MEMORY_MIB", 4096, 1, 1 << 20);
    c.copy_lag_us = env_int("RINGACTOR_EMU_COPY_LAG_US", 0, 0, 10000000);
    c.jitter = env_int("RINGACTOR_EMU_JITTER", 0, 0, 1) == 1;
    const char *p = getenv("RINGACTOR_EMU_PEERS");
    std::string peers = p && *p ? p : "all";
    c.peer.assign(c.devices, std::vector<bool>(c.devices, false));
    if (peers == "all") {
        for (int a = 0; a < c.devices; a++)
            for (int b = 0; b < c.devices; b++) c.peer[a][b] = a != b;
    } else if (peers != "none") {
        const char *s = peers.c_str();
        while (*s) {
            int a, b, n = 0;
            if (sscanf(s, "%d-%d%n", &a, &b, &n) != 2 || a < 0 || b < 0 || a >= c.devices || b >= c.devices || a == b) {
                fprintf(stderr, "cudaemu: RINGACTOR_EMU_PEERS=%s: want all, none or pairs like 0-1,2-3 of devices below %d\n", peers.c_str(), c.devices);
                break;
            }
            c.peer[a][b] = c.peer[b][a] = true;
            s += n;
            if (*s == ',') s++;
        }
    }
    return c;
}

struct Context;

struct Launch {
    const cudaemu_kernel *k;
    Context *ctx;
    unsigned long long id = 0;  // unique in the process (the scope checker's record of who touched a word)
    bool blocking;  // on the legacy stream or a blocking stream
    std::vector<std::vector<unsigned char>> args;
    std::atomic<bool> done{false};
    unsigned long long end_ns = 0;
    ra_host_dim3 grid{1, 1, 1}, block{1, 1, 1};  // the launch's shape (ra_host_run_grid caps the threads)
};

struct Stream;

// A copy or memset to device memory that lands later
// (RINGACTOR_EMU_COPY_LAG_US): data holds the source, copied at the call;
// empty, it is a memset of byte.
struct CopyOp {
    unsigned long long seq;
    std::chrono::steady_clock::time_point due;
    void *dst;
    size_t n;
    int byte;
    std::vector<unsigned char> data;
};

struct Context {
    int dev;
    int refs = 0;
    unsigned peers = 0;  // bit d: peer access to device d enabled
    Stream *legacy = nullptr;
    // The lagging copy engine: copies queued in order (seq 1, 2, ...),
    // landed by a worker thread; cmu guards these and every copy ticket.
    std::mutex cmu;
    std::condition_variable ccv;
    std::deque<CopyOp> copies;
    unsigned long long submitted = 0, landed = 0;
    unsigned long long blocking_seq = 0;  // the last one queued on the legacy or a blocking stream
    bool worker = false;
};

struct Stream {
    Context *ctx;
    unsigned flags;  // 1: CU_STREAM_NON_BLOCKING
    std::vector<std::shared_ptr<Launch>> launches;
    unsigned long long copy_seq = 0;  // a non-blocking stream: the last lagging copy queued on it
};

struct Event {
    std::vector<std::shared_ptr<Launch>> pending;
    unsigned long long at_ns = 0;
    bool recorded = false;
    Context *copy_ctx = nullptr;  // the lagging copies the record waits for: up to copy_ticket there
    unsigned long long copy_ticket = 0;
};

struct Module {
    Context *ctx;
    std::map<std::string, const cudaemu_kernel *> fns;
};

struct Function {
    const cudaemu_kernel *k;
};

std::mutex mu;
bool initialized;
Config cfg;
// Never destroyed: a context's copy worker may wait on its condition
// variable while the process exits, and destroying one with a waiter
// blocks exit for ever.
std::vector<std::unique_ptr<Context>> &ctxs = *new std::vector<std::unique_ptr<Context>>;
thread_local Context *current;
struct DevAlloc {
    size_t size;
    int dev;
};
struct HostAlloc {
    size_t size;
    unsigned flags;  // cuMemHostAlloc's: 1 PORTABLE, 2 DEVICEMAP, 4 WRITECOMBINED
    Context *ctx;    // the context it was allocated in
};
std::map<uintptr_t, DevAlloc> dev_allocs;    // ptr -> size, device
std::map<uintptr_t, HostAlloc> host_allocs;  // ptr -> size, flags, context
std::vector<long long> used;                             // bytes allocated per device
std::set<Stream *> streams;
std::set<Event *> events;
std::set<Module *> modules;
std::vector<std::shared_ptr<Launch>> all_launches;
std::atomic<long long> violations{0};
unsigned long long next_launch_id = 1;  // guarded by mu

// The scope checker's record, per word a kernel reached through
// ra_host_seam: which running kernels (by Launch id) touched it, from which
// device, and whether with .gpu scope. Guarded by mu.
struct Toucher {
    unsigned long long launch;
    int dev;
    bool gpu;
};
std::unordered_map<uintptr_t, std::vector<Toucher>> touched;
std::set<std::tuple<uintptr_t, unsigned long long, unsigned long long>> scope_reported;  // (word, kernels) reported

unsigned long long now_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

// is_ring: a kernel that runs until the host tells it to stop: a ring
// kernel, or the clock kernel waiting for the host's flag.
bool is_ring(const cudaemu_kernel *k) {
    size_t n = strlen(k->name);
    return (n > 5 && strcmp(k->name + n - 5, "_ring") == 0) || strcmp(k->name, "ra_clock") == 0;
}

bool alive(const std::shared_ptr<Launch> &l) { return !l->done.load(std::memory_order_acquire); }

// Forgets finished launches. Holds mu.
void reap() {
    for (auto it = all_launches.begin(); it != all_launches.end();) {
        if (!alive(*it)) {
            it = all_launches.erase(it);
        } else {
            ++it;
        }
    }
    for (Stream *s : streams) {
        auto &v = s->launches;
        for (auto it = v.begin(); it != v.end();) it = alive(*it) ? it + 1 : v.erase(it);
    }
}

// Ring kernels running in ctx (or, with blocking_only, on its legacy stream
// or a blocking stream), streams destroyed since included: a kernel
// outlives its stream's handle. names gets their names. Holds mu.
int running_rings(Context *ctx, bool blocking_only, std::string *names = nullptr) {
    int n = 0;
    for (auto &l : all_launches) {
        if (l->ctx != ctx || (blocking_only && !l->blocking) || !alive(l) || !is_ring(l->k)) continue;
        n++;
        if (names) {
            if (!names->empty()) *names += ", ";
            *names += l->k->name;
        }
    }
    return n;
}

CUresult violate(const char *call, const char *why, int dev,
                 const char *tail = "a real driver would wait for ever or fail here") {
    violations.fetch_add(1);
    fprintf(stderr, "cudaemu: RULE VIOLATION: %s %s on device %d (%s)\n", call, why, dev, tail);
    return NOT_PERMITTED;
}

// The allocation that holds address a, or the map's end. Holds mu.
std::map<uintptr_t, DevAlloc>::iterator dev_alloc_of(uintptr_t a) {
    auto it = dev_allocs.upper_bound(a);
    if (it == dev_allocs.begin()) return dev_allocs.end();
    --it;
    return a < it->first + it->second.size ? it : dev_allocs.end();
}

std::map<uintptr_t, HostAlloc>::iterator host_alloc_of(uintptr_t a) {
    auto it = host_allocs.upper_bound(a);
    if (it == host_allocs.begin()) return host_allocs.end();
    --it;
    return a < it->first + it->second.size ? it : host_allocs.end();
}

// ---- The lagging copy engine (RINGACTOR_EMU_COPY_LAG_US).

void copy_worker(Context *c) {
    std::unique_lock<std::mutex> lk(c->cmu);
    for (;;) {
        c->ccv.wait(lk, [c] { return !c->copies.empty(); });
        CopyOp op = std::move(c->copies.front());
        c->copies.pop_front();
        lk.unlock();
        std::this_thread::sleep_until(op.due);
        if (op.data.empty()) {
            memset(op.dst, op.byte, op.n);
        } else {
            memcpy(op.dst, op.data.data(), op.n);
        }
        lk.lock();
        c->landed = op.seq;
        c->ccv.notify_all();
    }
}

// lag_copy queues a copy (src) or memset (byte) of n bytes to dst on
// stream st of its context, when the lag is on and dst is device memory;
// it reports whether it did (else the caller writes at once). Holds mu.
bool lag_copy(Stream *st, void *dst, const void *src, int byte, size_t n) {
    if (cfg.copy_lag_us <= 0 || dev_alloc_of((uintptr_t)dst) == dev_allocs.end()) return false;
    Context *c = st->ctx;
    std::lock_guard<std::mutex> g(c->cmu);
    CopyOp op{++c->submitted, std::chrono::steady_clock::now() + std::chrono::microseconds(cfg.copy_lag_us), dst, n, byte, {}};
    if (src != nullptr) op.data.assign((const unsigned char *)src, (const unsigned char *)src + n);
    if (st->flags & 1) {
        st->copy_seq = op.seq;
    } else {
        c->blocking_seq = op.seq;
    }
    c->copies.push_back(std::move(op));
    if (!c->worker) {
        c->worker = true;
        std::thread(copy_worker, c).detach();  // lives as long as the process
    }
    c->ccv.notify_all();
    return true;
}

// copy_ticket: the lagging copies that work queued on st now is ordered
// after: those on a non-blocking stream itself, else those on the legacy
// and blocking streams of its context. Holds mu.
unsigned long long copy_ticket(Stream *st) {
    std::lock_guard<std::mutex> g(st->ctx->cmu);
    return (st->flags & 1) ? st->copy_seq : st->ctx->blocking_seq;
}

bool copies_landed(Context *c, unsigned long long ticket) {
    std::lock_guard<std::mutex> g(c->cmu);
    return c->landed >= ticket;
}

// wait_copies waits (mu not held) until c's copies up to ticket landed.
void wait_copies(Context *c, unsigned long long ticket) {
    if (c == nullptr || ticket == 0) return;
    std::unique_lock<std::mutex> lk(c->cmu);
    c->ccv.wait(lk, [c, ticket] { return c->landed >= ticket; });
}

void wait_all_copies(Context *c) {
    unsigned long long t;
    {
        std::lock_guard<std::mutex> g(c->cmu);
        t = c->submitted;
    }
    wait_copies(c, t);
}


// need_ctx: initialized, and a context current on this thread.
CUresult need_ctx(const char *call) {
    if (!initialized) return NOT_INITIALIZED;
    if (current == nullptr || current->refs <= 0) {
        violations.fetch_add(1);
        fprintf(stderr, "cudaemu: RULE VIOLATION: %s without a current context\n", call);
        return INVALID_CONTEXT;
    }
    return SUCCESS;
}

// no_rings: the call waits for the whole context (or loads code into it),
// which never returns while a ring kernel spins there. Holds mu.
CUresult no_rings(const char *call) {
    reap();
    std::string names;
    int n = running_rings(current, false, &names);
    if (n == 0) return SUCCESS;
    std::string why = "while " + std::to_string(n) + " ring kernel(s) run in the context (" + names + ")";
    return violate(call, why.c_str(), current->dev);
}

Stream *stream_of(void *s) {
    if (s == nullptr) {
        if (current->legacy == nullptr) {
            current->legacy = new Stream{current, 0, {}};
            streams.insert(current->legacy);
        }
        return current->legacy;
    }
    Stream *st = (Stream *)s;
    return streams.count(st) ? st : nullptr;
}

// What work recorded on st now includes: its own launches, and for the
// legacy stream those of every blocking stream of the context. Holds mu.
std::vector<std::shared_ptr<Launch>> pending_on(Stream *st) {
    std::vector<std::shared_ptr<Launch>> v;
    for (Stream *s : streams) {
        if (s != st && !(st == st->ctx->legacy && s->ctx == st->ctx && !(s->flags & 1))) continue;
        for (auto &l : s->launches)
            if (alive(l)) v.push_back(l);
    }
    return v;
}

// wait_for: waits (mu not held) until the launches have ended, or, when
// bound_ms > 0, gives up after that long: it reports whether they ended.
bool wait_for(const std::vector<std::shared_ptr<Launch>> &v, int bound_ms = 0) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(bound_ms);
    for (auto &l : v) {
        while (alive(l)) {
            if (bound_ms > 0 && std::chrono::steady_clock::now() > until) return false;
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }
    return true;
}

// A stream or event synchronize behind a ring kernel is fine on a real GPU
// once the host has told the kernel to stop (it ends soon after); one that
// is still waiting after this long would wait for ever.
const int sync_bound_ms = 1000;

bool any_ring(const std::vector<std::shared_ptr<Launch>> &v) {
    for (auto &l : v)
        if (is_ring(l->k)) return true;
    return false;
}

CUresult check_dev(CUdevice d) {
    if (!initialized) return NOT_INITIALIZED;
    return d < 0 || d >= cfg.devices ? INVALID_DEVICE : SUCCESS;
}

void *alloc_filled(size_t n) {
    void *p = nullptr;
    if (posix_memalign(&p, 4096, n ? n : 1) != 0) return nullptr;
    memset(p, 0xA5, n);
    return p;
}

void put_log(void *buf, size_t size, const char *msg) {
    if (buf != nullptr && size > 0) snprintf((char *)buf, size, "%s", msg);
}

}  // namespace

// ra_clock: ringkernel/cuda's hand-written clock kernel (clockPTX there),
// rendered in C++: for k = 0..n-1 it waits until the host's flag word
// reaches k+1, then stores the clock into out[k]; a flag of 0xffffffff
// ends it early.
//
// RINGACTOR_EMU_CLOCK_LAG_NS (read at each launch) makes it wait that long
// after seeing the flag before it reads the clock: an answer late on the
// way back, as a loaded GPU or bus may give, which biases the host's
// ping-pong estimate of the offset by about half the lag.
//
// RINGACTOR_EMU_CLOCK_DELAY_NS (read at each launch) makes every answer
// that much late, half before the kernel reads the clock and half after:
// a slow round trip, as a busy host or GPU gives, that leaves the estimate
// unbiased (the lag above is the biased one). It sleeps, so a long delay
// costs no CPU.
static void sleep_ns(long long ns) {
    if (ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

extern "C" void cudaemu_ra_clock(void **p) {
    unsigned *flag = *(unsigned **)p[0];
    unsigned long long *out = *(unsigned long long **)p[1];
    unsigned n = *(unsigned *)p[2];
    const char *lag_env = getenv("RINGACTOR_EMU_CLOCK_LAG_NS");
    long long lag = lag_env ? atoll(lag_env) : 0;
    const char *delay_env = getenv("RINGACTOR_EMU_CLOCK_DELAY_NS");
    long long delay = delay_env ? atoll(delay_env) : 0;
    for (unsigned k = 0; k < n; k++) {
        for (;;) {
            unsigned f = __atomic_load_n(flag, __ATOMIC_RELAXED);
            if (f == 0xffffffffu) return;
            if (f >= k + 1) break;
            std::this_thread::yield();
        }
        sleep_ns(delay / 2);
        if (lag > 0) {
            unsigned long long until = now_ns() + (unsigned long long)lag;
            while (now_ns() < until) std::this_thread::yield();
        }
        unsigned long long t = now_ns();
        sleep_ns(delay - delay / 2);
        __atomic_store_n(&out[k], t, __ATOMIC_RELAXED);
    }
}

extern "C" {

CUresult cuInit(unsigned flags) {
    if (flags != 0) return INVALID_VALUE;
    std::lock_guard<std::mutex> g(mu);
    if (!initialized) {
        cfg = load_config();
        for (int d = 0; d < cfg.devices; d++) ctxs.emplace_back(new Context{d});
        used.assign(cfg.devices, 0);
        initialized = true;
    }
    return SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
    if (v == nullptr) return INVALID_VALUE;
    *v = 12080;
    return SUCCESS;
}

static const struct {
    int code;
    const char *name, *text;
} errs[] = {
    {SUCCESS, "CUDA_SUCCESS", "no error"},
    {INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
    {NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted (cudaemu: a call a real driver would hang or fail on; see stderr)"},
    {NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

static CUresult error_text(CUresult r, const char **s, bool name) {
    for (auto &e : errs) {
        if (e.code == r) {
            *s = name ? e.name : e.text;
            return SUCCESS;
        }
    }
    *s = nullptr;
    return INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult r, const char **s) { return error_text(r, s, true); }
CUresult cuGetErrorString(CUresult r, const char **s) { return error_text(r, s, false); }

CUresult cuDeviceGetCount(int *n) {
    if (!initialized) return NOT_INITIALIZED;
    *n = cfg.devices;
    return SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (CUresult r = check_dev(ordinal)) return r;
    *d = ordinal;
    return SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    if (CUresult r = check_dev(d)) return r;
    if (name == nullptr || len <= 0) return INVALID_VALUE;
    snprintf(name, (size_t)len, "ringactor emulated GPU %d", d);
    return SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *n, CUdevice d) {
    if (CUresult r = check_dev(d)) return r;
    *n = (size_t)cfg.memory_mib << 20;
    return SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    if (CUresult r = check_dev(d)) return r;
    switch (attr) {
    case 1: *v = 1024; return SUCCESS;              // max threads per block
    case 16: *v = cfg.sms; return SUCCESS;          // SMs
    case 17: *v = 0; return SUCCESS;                // no exec timeout
    case 19: *v = 1; return SUCCESS;                // can map host memory
    case 33: *v = 0x10 + d; return SUCCESS;         // PCI bus
    case 34: *v = 0; return SUCCESS;                // PCI device
    case 39: *v = 2048; return SUCCESS;             // max threads per SM
    case 41: *v = 1; return SUCCESS;                // unified addressing
    case 50: *v = 0; return SUCCESS;                // PCI domain
    case 75: *v = 9; return SUCCESS;                // compute capability 9.0
    case 76: *v = 0; return SUCCESS;
    case 86: *v = 0; return SUCCESS;                // no host-native atomics: the queue needs none
    case 88: *v = 0; return SUCCESS;
    case 89: *v = 0; return SUCCESS;
    case 95: *v = 1; return SUCCESS;                // cooperative launch
    case 9100: *v = (int)violations.load(); return SUCCESS;  // rule violations so far
    case 9101: {                                    // ring kernels running on d
        std::lock_guard<std::mutex> g(mu);
        reap();
        *v = running_rings(ctxs[d].get(), false);
        return SUCCESS;
    }
    }
    *v = 0;
    return SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *v, CUdevice d, CUdevice peer) {
    if (CUresult r = check_dev(d)) return r;
    if (CUresult r = check_dev(peer)) return r;
    *v = cfg.peer[d][peer] ? 1 : 0;
    return SUCCESS;
}

CUresult cuDeviceGetP2PAttribute(int *v, int attr, CUdevice src, CUdevice dst) {
    if (CUresult r = check_dev(src)) return r;
    if (CUresult r = check_dev(dst)) return r;
    if (src == dst) return INVALID_DEVICE;
    bool p = cfg.peer[src][dst];
    switch (attr) {
    case 1: *v = p ? 1 : 0; return SUCCESS;  // performance rank
    case 2: *v = p ? 1 : 0; return SUCCESS;  // access supported
    case 3: *v = 0; return SUCCESS;          // native atomics: none, the queue needs none
    case 4: *v = 0; return SUCCESS;
    }
    return INVALID_VALUE;
}

CUresult cuDevicePrimaryCtxRetain(void **c, CUdevice d) {
    if (CUresult r = check_dev(d)) return r;
    std::lock_guard<std::mutex> g(mu);
    ctxs[d]->refs++;
    *c = ctxs[d].get();
    return SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    if (CUresult r = check_dev(d)) return r;
    std::lock_guard<std::mutex> g(mu);
    if (ctxs[d]->refs <= 0) return INVALID_CONTEXT;
    ctxs[d]->refs--;
    return SUCCESS;
}

CUresult cuCtxSetCurrent(void *c) {
    if (!initialized) return NOT_INITIALIZED;
    if (c == nullptr) {
        current = nullptr;
        return SUCCESS;
    }
    std::lock_guard<std::mutex> g(mu);
    for (auto &x : ctxs) {
        if (x.get() == c) {
            if (x->refs <= 0) return INVALID_CONTEXT;
            current = x.get();
            return SUCCESS;
        }
    }
    return INVALID_CONTEXT;
}

CUresult cuCtxSynchronize(void) {
    if (CUresult r = need_ctx("cuCtxSynchronize")) return r;
    std::vector<std::shared_ptr<Launch>> v;
    {
        std::lock_guard<std::mutex> g(mu);
        if (CUresult r = no_rings("cuCtxSynchronize")) return r;
        for (Stream *s : streams)
            if (s->ctx == current)
                for (auto &l : s->launches) v.push_back(l);
    }
    wait_all_copies(current);
    wait_for(v);
    return SUCCESS;
}

CUresult cuCtxEnablePeerAccess(void *peer, unsigned flags) {
    if (CUresult r = need_ctx("cuCtxEnablePeerAccess")) return r;
    if (flags != 0) return INVALID_VALUE;
    std::lock_guard<std::mutex> g(mu);
    Context *p = nullptr;
    for (auto &x : ctxs)
        if (x.get() == peer) p = x.get();
    if (p == nullptr || p == current) return INVALID_VALUE;
    if (!cfg.peer[current->dev][p->dev]) return INVALID_DEVICE;
    if (current->peers & (1u << p->dev)) return PEER_ACCESS_ALREADY_ENABLED;
    current->peers |= 1u << p->dev;
    return SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    if (CUresult r = need_ctx("cuMemAlloc")) return r;
    if (p == nullptr || n == 0) return INVALID_VALUE;
    std::lock_guard<std::mutex> g(mu);
    int d = current->dev;
    if (used[d] + (long long)n > (cfg.memory_mib << 20)) return OUT_OF_MEMORY;
    void *m = alloc_filled(n);
    if (m == nullptr) return OUT_OF_MEMORY;
    used[d] += (long long)n;
    dev_allocs[(uintptr_t)m] = DevAlloc{n, d};
    *p = (CUdeviceptr)(uintptr_t)m;
    return SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    if (CUresult r = need_ctx("cuMemFree")) return r;
    {
        std::lock_guard<std::mutex> g(mu);
        if (CUresult r = no_rings("cuMemFree")) return r;
    }
    // cuMemFree synchronizes: no lagging copy (of any context) may land
    // in the memory once it is freed.
    for (auto &c : ctxs) wait_all_copies(c.get());
    std::lock_guard<std::mutex> g(mu);
    auto it = dev_allocs.find((uintptr_t)p);
    if (it == dev_allocs.end()) return INVALID_VALUE;
    used[it->second.dev] -= (long long)it->second.size;
    for (auto t = touched.begin(); t != touched.end();)
        t = t->first >= it->first && t->first < it->first + it->second.size ? touched.erase(t) : std::next(t);
    free((void *)it->first);
    dev_allocs.erase(it);
    return SUCCESS;
}

static bool valid_range(uintptr_t p, size_t n) {
    auto it = dev_alloc_of(p);
    if (it != dev_allocs.end()) return p + n <= it->first + it->second.size;
    auto h = host_alloc_of(p);
    return h != host_allocs.end() && p + n <= h->first + h->second.size;
}

// sync_copy: the synchronous copies and memset run on the legacy stream,
// which waits for every blocking stream's work.
static CUresult sync_copy(const char *call, uintptr_t dev, size_t n) {
    std::lock_guard<std::mutex> g(mu);
    reap();
    std::string names;
    if (int k = running_rings(current, true, &names)) {
        std::string why = "(legacy stream) while " + std::to_string(k) + " ring kernel(s) run on the legacy or a blocking stream (" + names + ")";
        return violate(call, why.c_str(), current->dev);
    }
    return valid_range(dev, n) ? SUCCESS : INVALID_VALUE;
}

// lag_on_legacy queues the copy on the current context's legacy stream
// when the copy engine lags (see lag_copy).
static bool lag_on_legacy(void *dst, const void *src, int byte, size_t n) {
    if (cfg.copy_lag_us <= 0) return false;
    std::lock_guard<std::mutex> g(mu);
    return lag_copy(stream_of(nullptr), dst, src, byte, n);
}

CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char b, size_t n) {
    if (CUresult r = need_ctx("cuMemsetD8")) return r;
    if (CUresult r = sync_copy("cuMemsetD8", (uintptr_t)p, n)) return r;
    if (lag_on_legacy((void *)(uintptr_t)p, nullptr, b, n)) return SUCCESS;  // asynchronous to the host for device memory
    memset((void *)(uintptr_t)p, b, n);
    return SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    if (CUresult r = need_ctx("cuMemcpyHtoD")) return r;
    if (CUresult r = sync_copy("cuMemcpyHtoD", (uintptr_t)dst, n)) return r;
    if (lag_on_legacy((void *)(uintptr_t)dst, src, 0, n)) return SUCCESS;  // returns once the source is staged
    memcpy((void *)(uintptr_t)dst, src, n);
    return SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    if (CUresult r = need_ctx("cuMemcpyDtoH")) return r;
    if (CUresult r = sync_copy("cuMemcpyDtoH", (uintptr_t)src, n)) return r;
    wait_all_copies(current);  // the legacy stream's earlier copies land first
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return SUCCESS;
}

// Async copies run at once: the emulator's streams order kernels only, and
// a copy queued behind a running ring kernel would never run on a GPU
// either (the backend queues its copies on the legacy stream, before any
// kernel).
static CUresult copy_async(const char *call, void *dst, const void *src, size_t n, void *stream, uintptr_t dev) {
    if (CUresult r = need_ctx(call)) return r;
    bool to_device = dev == (uintptr_t)dst;
    unsigned long long ticket = 0;
    {
        std::lock_guard<std::mutex> g(mu);
        Stream *st = stream_of(stream);
        if (st == nullptr) return INVALID_HANDLE;
        reap();
        for (auto &l : pending_on(st))
            if (is_ring(l->k)) return violate(call, "queued behind a running ring kernel on its stream", current->dev);
        if (!valid_range(dev, n)) return INVALID_VALUE;
        if (to_device && lag_copy(st, dst, src, 0, n)) return SUCCESS;
        if (!to_device) ticket = copy_ticket(st);
    }
    wait_copies(current, ticket);  // a DtoH runs after the copies queued before it on its stream
    memcpy(dst, src, n);
    return SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream) {
    return copy_async("cuMemcpyHtoDAsync", (void *)(uintptr_t)dst, src, n, stream, (uintptr_t)dst);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream) {
    return copy_async("cuMemcpyDtoHAsync", dst, (const void *)(uintptr_t)src, n, stream, (uintptr_t)src);
}

CUresult cuMemHostAlloc(void **pp, size_t n, unsigned flags) {
    if (CUresult r = need_ctx("cuMemHostAlloc")) return r;
    if (pp == nullptr || n == 0 || (flags & ~7u)) return INVALID_VALUE;
    void *m = alloc_filled(n);
    if (m == nullptr) return OUT_OF_MEMORY;
    std::lock_guard<std::mutex> g(mu);
    host_allocs[(uintptr_t)m] = {n, flags, current};
    *pp = m;
    return SUCCESS;
}

CUresult cuMemFreeHost(void *p) {
    if (CUresult r = need_ctx("cuMemFreeHost")) return r;
    std::lock_guard<std::mutex> g(mu);
    if (CUresult r = no_rings("cuMemFreeHost")) return r;
    auto it = host_allocs.find((uintptr_t)p);
    if (it == host_allocs.end()) return INVALID_VALUE;
    free(p);
    host_allocs.erase(it);
    return SUCCESS;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags) {
    if (CUresult r = need_ctx("cuMemHostGetDevicePointer")) return r;
    if (d == nullptr || flags != 0) return INVALID_VALUE;
    std::lock_guard<std::mutex> g(mu);
    auto it = host_allocs.find((uintptr_t)p);
    if (it == host_allocs.end() || !(it->second.flags & 2)) return INVALID_VALUE;  // CU_MEMHOSTALLOC_DEVICEMAP
    *d = (CUdeviceptr)(uintptr_t)p;
    return SUCCESS;
}

// entries lists the .entry names of a PTX text.
static std::vector<std::string> entries(const char *ptx) {
    std::vector<std::string> v;
    for (const char *s = strstr(ptx, ".entry"); s; s = strstr(s + 6, ".entry")) {
        const char *p = s + 6;
        while (*p == ' ' || *p == '\t') p++;
        const char *q = p;
        while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_' || *q == '$') q++;
        if (q > p) v.emplace_back(p, q);
    }
    return v;
}

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals) {
    if (CUresult r = need_ctx("cuModuleLoadDataEx")) return r;
    if (mod == nullptr || image == nullptr || (n > 0 && (opts == nullptr || vals == nullptr))) return INVALID_VALUE;
    void *errlog = nullptr, *infolog = nullptr;
    size_t errsize = 0, infosize = 0;
    for (unsigned i = 0; i < n; i++) {
        switch (opts[i]) {
        case 3: infolog = vals[i]; break;                      // CU_JIT_INFO_LOG_BUFFER
        case 4: infosize = (size_t)(uintptr_t)vals[i]; break;  // its size
        case 5: errlog = vals[i]; break;                       // CU_JIT_ERROR_LOG_BUFFER
        case 6: errsize = (size_t)(uintptr_t)vals[i]; break;   // its size
        }
    }
    std::lock_guard<std::mutex> g(mu);
    if (CUresult r = no_rings("cuModuleLoadDataEx")) return r;
    const char *s = (const char *)image;
    if (strncmp(s, "\x7f" "ELF", 4) == 0) {
        put_log(errlog, errsize, "cudaemu: a cubin image; the emulator takes PTX text only");
        return INVALID_IMAGE;
    }
    if (strstr(s, ".version") == nullptr || strstr(s, ".target") == nullptr) {
        put_log(errlog, errsize, "cudaemu: not PTX text (no .version or .target)");
        return INVALID_PTX;
    }
    std::unique_ptr<Module> m(new Module{current, {}});
    for (auto &name : entries(s)) {
        const cudaemu_kernel *k = nullptr;
        for (const cudaemu_kernel *t = cudaemu_kernels; t->name; t++)
            if (name == t->name) k = t;
        if (k == nullptr) {
            std::string msg = "cudaemu: kernel " + name +
                              " has no host build: the emulator runs the built-in ops' kernels and ra_clock only (a user stage needs a GPU)";
            put_log(errlog, errsize, msg.c_str());
            return INVALID_PTX;
        }
        m->fns[name] = k;
    }
    put_log(infolog, infosize, "cudaemu: resolved to host builds");
    *mod = m.get();
    modules.insert(m.release());
    return SUCCESS;
}

CUresult cuModuleUnload(void *mod) {
    if (CUresult r = need_ctx("cuModuleUnload")) return r;
    std::lock_guard<std::mutex> g(mu);
    if (CUresult r = no_rings("cuModuleUnload")) return r;
    Module *m = (Module *)mod;
    if (!modules.erase(m)) return INVALID_HANDLE;
    delete m;
    return SUCCESS;
}

CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
    if (CUresult r = need_ctx("cuModuleGetFunction")) return r;
    std::lock_guard<std::mutex> g(mu);
    if (CUresult r = no_rings("cuModuleGetFunction")) return r;
    Module *m = (Module *)mod;
    if (!modules.count(m) || f == nullptr || name == nullptr) return INVALID_HANDLE;
    auto it = m->fns.find(name);
    if (it == m->fns.end()) return NOT_FOUND;
    *f = new Function{it->second};  // functions live as long as the process, as handles may
    return SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int block, size_t smem) {
    if (CUresult r = need_ctx("cuOccupancyMaxActiveBlocksPerMultiprocessor")) return r;
    if (n == nullptr || f == nullptr || block <= 0 || block > 1024) return INVALID_VALUE;
    *n = smem > 228 * 1024 ? 0 : cfg.blocks_per_sm;
    return SUCCESS;
}

// check_ring_args: the placement rules for a *_ring kernel's ra_ring_args
// (see the header comment); each pointer that breaks one counts one
// violation. Holds mu.
static CUresult check_ring_args(const char *call, const Launch *l) {
    const cudaemu_kernel *k = l->k;
    size_t n = strlen(k->name);
    if (n <= 5 || strcmp(k->name + n - 5, "_ring") != 0 || k->nparams != 1 || l->args[0].size() < RA_ARG_SIZE) return SUCCESS;
    const unsigned char *a = l->args[0].data();
    auto u64 = [a](unsigned off) {
        unsigned long long v;
        memcpy(&v, a + off, 8);
        return v;
    };
    auto u32 = [a](unsigned off) {
        unsigned v;
        memcpy(&v, a + off, 4);
        return v;
    };
    std::vector<std::pair<std::string, unsigned long long>> ptrs = {
        {"control block", u64(RA_ARG_OFF_CTRL)}, {"trace ring", u64(RA_ARG_OFF_TRACE)},
        {"params", u64(RA_ARG_OFF_PARAMS)},      {"state", u64(RA_ARG_OFF_STATE)},
        {"sink", u64(RA_ARG_OFF_SINK)},
    };
    unsigned nin = u32(RA_ARG_OFF_NUM_IN), nout = u32(RA_ARG_OFF_NUM_OUT);
    for (unsigned i = 0; i < nin && i < RA_MAX_IN_LINKS; i++) ptrs.push_back({"in-link " + std::to_string(i), u64(RA_ARG_OFF_IN + 8 * i)});
    for (unsigned i = 0; i < nout && i < RA_MAX_OUT_LINKS; i++) ptrs.push_back({"out-link " + std::to_string(i), u64(RA_ARG_OFF_OUT + 8 * i)});
    Context *c = l->ctx;
    CUresult res = SUCCESS;
    char buf[512];
    for (auto &pp : ptrs) {
        uintptr_t p = (uintptr_t)pp.second;
        if (p == 0) continue;
        const char *what = pp.first.c_str();
        auto d = dev_alloc_of(p);
        if (d != dev_allocs.end()) {
            int od = d->second.dev;
            if (od == c->dev || (c->peers & (1u << od))) continue;
            snprintf(buf, sizeof buf, "of %s: its %s at %#lx is device memory of device %d, and peer access to device %d is not enabled in the launching context",
                     k->name, what, (unsigned long)p, od, od);
        } else {
            auto h = host_alloc_of(p);
            if (h != host_allocs.end()) {
                if ((h->second.flags & 1) || h->second.ctx == c) continue;
                snprintf(buf, sizeof buf, "of %s: its %s at %#lx is pinned host memory of device %d's context, allocated without CU_MEMHOSTALLOC_PORTABLE",
                         k->name, what, (unsigned long)p, h->second.ctx ? h->second.ctx->dev : -1);
            } else {
                snprintf(buf, sizeof buf, "of %s: its %s at %#lx is in no allocation of the driver", k->name, what, (unsigned long)p);
            }
        }
        res = violate(call, buf, c->dev, "a real GPU would fault on the access");
    }
    return res;
}

static CUresult launch(const char *call, void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shared, void *stream, void **params, void **extra) {
    if (CUresult r = need_ctx(call)) return r;
    Function *fn = (Function *)f;
    if (fn == nullptr || extra != nullptr || (fn->k->nparams > 0 && params == nullptr)) return INVALID_VALUE;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || (unsigned long long)bx * by * bz > 1024) return INVALID_VALUE;
    if (shared > 228 * 1024) return LAUNCH_OUT_OF_RESOURCES;
    auto l = std::make_shared<Launch>();
    l->k = fn->k;
    l->ctx = current;
    l->grid = {gx, gy, gz};
    l->block = {bx, by, bz};
    for (int i = 0; i < fn->k->nparams; i++) {
        const unsigned char *p = (const unsigned char *)params[i];
        l->args.emplace_back(p, p + fn->k->param_size[i]);
    }
    if (cfg.copy_lag_us > 0) {
        // A kernel on the legacy or a blocking stream starts after the
        // copies queued there: the call waits for them (a GPU's would not).
        unsigned long long ticket = 0;
        {
            std::lock_guard<std::mutex> g(mu);
            Stream *st = stream_of(stream);
            if (st == nullptr) return INVALID_HANDLE;
            if (!(st->flags & 1)) ticket = copy_ticket(st);
        }
        wait_copies(current, ticket);
    }
    std::lock_guard<std::mutex> g(mu);
    Stream *st = stream_of(stream);
    if (st == nullptr) return INVALID_HANDLE;
    reap();
    if (CUresult r = check_ring_args(call, l.get())) return r;
    l->id = next_launch_id++;
    l->blocking = !(st->flags & 1);
    st->launches.push_back(l);
    all_launches.push_back(l);
    // The thread holds its launch; detached, so a process may exit with
    // kernels still spinning, as it may with a GPU's.
    std::thread([l] {
        std::vector<void *> ps;
        for (auto &a : l->args) ps.push_back(a.data());
        ra_host_run_grid(l->grid, l->block, l->k->run, ps.data(), l.get());
        l->end_ns = now_ns();
        l->done.store(true, std::memory_order_release);
    }).detach();
    return SUCCESS;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        void *stream, void **params, void **extra) {
    return launch("cuLaunchKernel", f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

CUresult cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                   unsigned shared, void *stream, void **params) {
    return launch("cuLaunchCooperativeKernel", f, gx, gy, gz, bx, by, bz, shared, stream, params, nullptr);
}

CUresult cuStreamCreate(void **s, unsigned flags) {
    if (CUresult r = need_ctx("cuStreamCreate")) return r;
    if (s == nullptr || flags > 1) return INVALID_VALUE;
    std::lock_guard<std::mutex> g(mu);
    Stream *st = new Stream{current, flags, {}};
    streams.insert(st);
    *s = st;
    return SUCCESS;
}

CUresult cuStreamQuery(void *s) {
    if (CUresult r = need_ctx("cuStreamQuery")) return r;
    std::lock_guard<std::mutex> g(mu);
    Stream *st = stream_of(s);
    if (st == nullptr) return INVALID_HANDLE;
    reap();
    if (!copies_landed(st->ctx, copy_ticket(st))) return NOT_READY;
    return pending_on(st).empty() ? SUCCESS : NOT_READY;
}

CUresult cuStreamSynchronize(void *s) {
    if (CUresult r = need_ctx("cuStreamSynchronize")) return r;
    std::vector<std::shared_ptr<Launch>> v;
    Context *cc;
    unsigned long long ticket;
    {
        std::lock_guard<std::mutex> g(mu);
        Stream *st = stream_of(s);
        if (st == nullptr) return INVALID_HANDLE;
        reap();
        v = pending_on(st);
        cc = st->ctx;
        ticket = copy_ticket(st);
    }
    wait_copies(cc, ticket);
    if (!wait_for(v, any_ring(v) ? sync_bound_ms : 0))
        return violate("cuStreamSynchronize", "on a stream whose ring kernel kept running for 1 s", current->dev);
    return SUCCESS;
}

CUresult cuStreamDestroy_v2(void *s) {
    if (CUresult r = need_ctx("cuStreamDestroy")) return r;
    std::lock_guard<std::mutex> g(mu);
    Stream *st = (Stream *)s;
    if (st == nullptr || st == current->legacy || !streams.count(st)) return INVALID_HANDLE;
    // As on a GPU, work queued on it still runs; its launches stay reaped
    // through all_launches.
    streams.erase(st);
    delete st;
    return SUCCESS;
}

CUresult cuEventCreate(void **e, unsigned flags) {
    if (CUresult r = need_ctx("cuEventCreate")) return r;
    if (e == nullptr || flags > 15) return INVALID_VALUE;
    std::lock_guard<std::mutex> g(mu);
    Event *ev = new Event;
    events.insert(ev);
    *e = ev;
    return SUCCESS;
}

CUresult cuEventRecord(void *e, void *s) {
    if (CUresult r = need_ctx("cuEventRecord")) return r;
    std::lock_guard<std::mutex> g(mu);
    Event *ev = (Event *)e;
    Stream *st = stream_of(s);
    if (!events.count(ev) || st == nullptr) return INVALID_HANDLE;
    reap();
    ev->pending = pending_on(st);
    ev->at_ns = now_ns();
    ev->recorded = true;
    ev->copy_ctx = st->ctx;
    ev->copy_ticket = copy_ticket(st);
    return SUCCESS;
}

CUresult cuEventQuery(void *e) {
    if (CUresult r = need_ctx("cuEventQuery")) return r;
    std::lock_guard<std::mutex> g(mu);
    Event *ev = (Event *)e;
    if (!events.count(ev)) return INVALID_HANDLE;
    if (ev->copy_ctx != nullptr && !copies_landed(ev->copy_ctx, ev->copy_ticket)) return NOT_READY;
    for (auto &l : ev->pending)
        if (alive(l)) return NOT_READY;
    return SUCCESS;
}

CUresult cuEventSynchronize(void *e) {
    if (CUresult r = need_ctx("cuEventSynchronize")) return r;
    std::vector<std::shared_ptr<Launch>> v;
    Context *cc;
    unsigned long long ticket;
    {
        std::lock_guard<std::mutex> g(mu);
        Event *ev = (Event *)e;
        if (!events.count(ev)) return INVALID_HANDLE;
        reap();
        for (auto &l : ev->pending)
            if (alive(l)) v.push_back(l);
        cc = ev->copy_ctx;
        ticket = ev->copy_ticket;
    }
    wait_copies(cc, ticket);
    if (!wait_for(v, any_ring(v) ? sync_bound_ms : 0))
        return violate("cuEventSynchronize", "on an event behind a ring kernel that kept running for 1 s", current->dev);
    return SUCCESS;
}

// An event completes when the work before it has: its time is the later of
// its record and the end of that work.
static unsigned long long event_time(Event *ev) {
    unsigned long long t = ev->at_ns;
    for (auto &l : ev->pending)
        if (l->end_ns > t) t = l->end_ns;
    return t;
}

CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
    if (CUresult r = need_ctx("cuEventElapsedTime")) return r;
    std::lock_guard<std::mutex> g(mu);
    Event *a = (Event *)start, *b = (Event *)end;
    if (!events.count(a) || !events.count(b) || ms == nullptr) return INVALID_HANDLE;
    for (Event *ev : {a, b}) {
        if (!ev->recorded) return INVALID_HANDLE;
        if (ev->copy_ctx != nullptr && !copies_landed(ev->copy_ctx, ev->copy_ticket)) return NOT_READY;
        for (auto &l : ev->pending)
            if (alive(l)) return NOT_READY;
    }
    *ms = (float)((double)((long long)event_time(b) - (long long)event_time(a)) / 1e6);
    return SUCCESS;
}

CUresult cuEventDestroy_v2(void *e) {
    if (CUresult r = need_ctx("cuEventDestroy")) return r;
    std::lock_guard<std::mutex> g(mu);
    Event *ev = (Event *)e;
    if (!events.erase(ev)) return INVALID_HANDLE;
    delete ev;
    return SUCCESS;
}

}  // extern "C"

// ---- The scope checker's hook (see the header comment).

namespace {

// The words this kernel thread has reported through the seam, by scope,
// so that each is checked once per kernel (the loop reaches the same few
// words millions of times).
thread_local const Launch *seam_launch;
thread_local std::unordered_set<uintptr_t> seam_seen[2];

void jitter_step() {
    static thread_local unsigned n;
    if (++n % 64 == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(1));
    } else {
        sched_yield();
    }
}

bool launch_alive(unsigned long long id) {
    for (auto &l : all_launches)
        if (l->id == id) return alive(l);
    return false;
}

// scope_report counts one violation per word and kernel (a, 0), or per
// word and pair of kernels (a, b). Holds mu.
void scope_report(uintptr_t w, unsigned long long a, unsigned long long b, const Launch *l, const char *why) {
    if (!scope_reported.insert({w, std::min(a, b), std::max(a, b)}).second) return;
    std::string msg = std::string("of ") + l->k->name + ": " + why;
    violate("ra_host_seam", msg.c_str(), l->ctx->dev, "on a GPU the access is not ordered for the other side");
}

// seam_check records that kernel l touched word w with the scope given,
// and checks the rules. Holds mu.
void seam_check(const Launch *l, uintptr_t w, bool gpu) {
    int kdev = l->ctx->dev;
    char buf[256];
    auto d = dev_alloc_of(w);
    if (gpu && (d == dev_allocs.end() || d->second.dev != kdev)) {
        if (d == dev_allocs.end()) {
            snprintf(buf, sizeof buf, "a .gpu-scope access to %#lx, which is not device memory (.sys is needed)", (unsigned long)w);
        } else {
            snprintf(buf, sizeof buf, "a .gpu-scope access to %#lx, device memory of device %d, from a kernel on device %d (.sys is needed)",
                     (unsigned long)w, d->second.dev, kdev);
        }
        scope_report(w, l->id, 0, l, buf);
    }
    if (d == dev_allocs.end()) return;
    auto &v = touched[w];
    for (auto it = v.begin(); it != v.end();) it = launch_alive(it->launch) ? std::next(it) : v.erase(it);
    bool mine = false;
    for (auto &t : v) {
        if (t.launch == l->id) {
            t.gpu |= gpu;
            mine = true;
        }
    }
    if (!mine) v.push_back({l->id, kdev, gpu});
    for (auto &a : v) {
        for (auto &b : v) {
            if (a.gpu && b.dev != a.dev && (a.launch == l->id || b.launch == l->id)) {
                snprintf(buf, sizeof buf, "word %#lx of device %d's memory is reached with .gpu scope by a kernel of device %d while a kernel of device %d touches it too (.sys is needed)",
                         (unsigned long)w, d->second.dev, a.dev, b.dev);
                scope_report(w, a.launch, b.launch, l, buf);
                return;
            }
        }
    }
}

}  // namespace

extern "C" {

// ra_host_seam: the host build of the device loop calls it just before
// every cross-agent access, sys 1 for a .sys-scope one and 0 for .gpu.
void ra_host_seam(const void *p, int sys) {
    if (cfg.jitter) jitter_step();
    const Launch *l = (const Launch *)ra_host_tag;
    if (l == nullptr) return;
    if (seam_launch != l) {
        seam_launch = l;
        seam_seen[0].clear();
        seam_seen[1].clear();
    }
    uintptr_t w = (uintptr_t)p;
    if (!seam_seen[sys ? 1 : 0].insert(w).second) return;
    std::lock_guard<std::mutex> g(mu);
    seam_check(l, w, sys == 0);
}

// cudaemu_test_seam lets a test (testdata/scope.c) drive the hook as a
// kernel thread would: kernel names a pretend kernel on device dev (made
// at its first use, running until cudaemu_test_seam_end), whose thread
// then calls ra_host_seam(p, sys). It returns the violations counted.
static const cudaemu_kernel test_seam_kernel = {"cudaemu_test_seam", 0, {0}, nullptr};
static std::map<int, std::shared_ptr<Launch>> test_seam_launches;

long long cudaemu_test_seam(int kernel, int dev, const void *p, int sys) {
    std::shared_ptr<Launch> l;
    {
        std::lock_guard<std::mutex> g(mu);
        if (!initialized || dev < 0 || dev >= cfg.devices) return -1;
        auto &t = test_seam_launches[kernel];
        if (!t) {
            t = std::make_shared<Launch>();
            t->k = &test_seam_kernel;
            t->ctx = ctxs[dev].get();
            t->id = next_launch_id++;
            all_launches.push_back(t);
        }
        l = t;
    }
    long long before = violations.load();
    std::thread([&] {
        ra_host_tag = (void *)l.get();
        ra_host_seam(p, sys);
    }).join();
    return violations.load() - before;
}

void cudaemu_test_seam_end(int kernel) {
    std::lock_guard<std::mutex> g(mu);
    auto it = test_seam_launches.find(kernel);
    if (it == test_seam_launches.end()) return;
    it->second->done.store(true, std::memory_order_release);
    test_seam_launches.erase(it);
}

}  // extern "C"
