// cudaemu.cpp: an emulated libcuda. Loaded through RINGACTOR_LIBCUDA exactly
// as the real driver is, it runs the host build of the device code (the
// ring-kernel loop and the built-in stages, compiled from the same sources
// NVRTC compiles, through ra_host.h) on threads, so the Go CUDA backend runs
// end to end on a machine without a GPU. It is also the stand-in libcuda of
// the cuda package's own tests of the binding (internal/cudaemu.BuildVariant
// builds the variants they load). See internal/cudaemu's package doc for
// what it proves and what it cannot.
//
//   - RINGACTOR_EMU_DEVICES devices (default 3), each with
//     RINGACTOR_EMU_SMS SMs (default 8), RINGACTOR_EMU_BLOCKS_PER_SM
//     co-resident blocks per SM (default 4), RINGACTOR_EMU_MEMORY_MIB of
//     memory (default 4096) and compute capability RINGACTOR_EMU_CC
//     (default 9.0); SMS, MEMORY_MIB and CC take one value for every
//     device or one per device ("4,2": device 0 has 4 SMs, device 1 2).
//     RINGACTOR_EMU_PEERS says which pairs have peer access: "all"
//     (default), "none" or pairs like "0-1,1-2". RINGACTOR_EMU_MANAGED=0
//     takes managed memory away (attributes 83 and 89 answer 0,
//     cuMemAllocManaged CUDA_ERROR_NOT_SUPPORTED); by default every device
//     has it, concurrent access included. All are read once, at the first
//     cuInit.
//   - RINGACTOR_EMU_INIT_RESULT, read at every cuInit: a result other than
//     0 cuInit fails with (100, CUDA_ERROR_NO_DEVICE: a driver that cannot
//     start).
//   - cuDeviceGetAttribute answers the attributes a driver has that the Go
//     side reads, and CUDA_ERROR_INVALID_VALUE for any other, as the driver
//     does. Attributes no real driver has: 9100, the rule violations so far;
//     9101, ring kernels running on the device; 9001 to 9019, the record of
//     what reached the driver (struct Record: the last launch's shape, host
//     allocation and stream flags, counts of launches, async copies, graphs),
//     which the binding's tests read; 9999 answers 12345, a result the
//     driver has no name for.
//   - Device memory and mapped pinned memory are host allocations whose
//     device pointer is the host address; fresh memory is filled with 0xA5,
//     as a GPU's is not zeroed. cuMemFree and cuMemFreeHost synchronize:
//     they wait for the kernels still running in the context (and refuse,
//     below, when one is a ring kernel).
//   - cuModuleLoadDataEx takes PTX text and resolves each .entry to its host
//     build (the table the build generates, cudaemu_kernels: the built-in
//     ops' kernels, ra_clock and the test kernels ra_test_*). A user op's
//     PTX resolves to the host build of its CUDA source, which
//     cudaemu_module_source (an entry point no real driver has; see the
//     end of this file) was given first. PTX with a kernel that has no host
//     build fails with CUDA_ERROR_INVALID_PTX and says so in the JIT error
//     log.
//   - cuLaunchKernel copies the arguments and runs the kernel's grid on
//     threads of its own: every block, each of blockDim.x threads (capped at
//     RINGACTOR_EMU_THREADS, default 32), with per-block shared memory and a
//     real __syncthreads (ra_host.h); a *_ring kernel counts its costs into
//     a ledger of its own (ra_host_ledger), which cudaemu_ledger reads
//     (another entry point no real driver has). A stream is NOT_READY while a kernel
//     launched on it runs. A cooperative launch of more blocks than
//     RINGACTOR_EMU_BLOCKS_PER_SM times the device's SMs fails with
//     CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE.
//   - Graphs: a stream capturing (cuStreamBeginCapture_v2) records its
//     launches, async copies and graph launches as nodes instead of running
//     them (a ring kernel or an event record cannot be captured here:
//     CUDA_ERROR_NOT_SUPPORTED, said on stderr); a synchronize or query of
//     it fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the
//     capture, which cuStreamEndCapture then reports. cuGraphLaunch runs an
//     instantiated graph's nodes in order on a thread of its own, a launch
//     on the stream like a kernel's, each copy re-reading its source. The
//     copy engine's lag (below) does not apply to a graph's copies.
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
//     ra_ring_args (control block, in-links, out-links, steal links, trace
//     ring, params, state, sink, bound buffers (first and last byte);
//     offsets RA_ARG_OFF_* of ringactor_layout.h) must lie in
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

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
    JIT_COMPILER_NOT_FOUND = 221,
    INVALID_SOURCE = 300,
    OPERATING_SYSTEM = 304,
    INVALID_HANDLE = 400,
    ILLEGAL_STATE = 401,
    NOT_FOUND = 500,
    NOT_READY = 600,
    LAUNCH_OUT_OF_RESOURCES = 701,
    PEER_ACCESS_ALREADY_ENABLED = 704,
    PEER_ACCESS_NOT_ENABLED = 705,
    COOPERATIVE_LAUNCH_TOO_LARGE = 720,
    NOT_PERMITTED = 800,
    NOT_SUPPORTED = 801,
    STREAM_CAPTURE_UNSUPPORTED = 900,
    STREAM_CAPTURE_INVALIDATED = 901,
    UNNAMED_RESULT = 12345,  // a code the driver has no name for (device attribute 9999)
};

namespace {

struct Config {
    int devices = 3, blocks_per_sm = 4;
    std::vector<int> sms;                 // per device
    std::vector<long long> memory_mib;    // per device
    std::vector<int> cc_major, cc_minor;  // per device
    std::vector<std::vector<bool>> peer;
    long long copy_lag_us = 0;  // RINGACTOR_EMU_COPY_LAG_US
    bool jitter = false;        // RINGACTOR_EMU_JITTER=1
    bool managed = true;        // RINGACTOR_EMU_MANAGED (0: none)
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

// env_list reads a per-device setting: one value for every device, or a
// comma-separated value per device ("4,2": device 0 has 4, device 1 2).
// parse reads one value at s, advancing it, and reports whether it could.
template <class T, class Parse>
std::vector<T> env_list(const char *name, int devices, T def, const char *want, Parse parse) {
    std::vector<T> v;
    const char *s = getenv(name);
    if (!s || !*s) return std::vector<T>(devices, def);
    for (const char *p = s;;) {
        T x;
        if (!parse(p, x)) break;
        v.push_back(x);
        if (*p == 0) {
            if (v.size() == 1) return std::vector<T>(devices, v[0]);
            if ((int)v.size() == devices) return v;
            break;
        }
        if (*p++ != ',') break;
    }
    fprintf(stderr, "cudaemu: %s=%s: want %s, one for every device or one per device (%d), comma-separated; using the default\n", name, s, want, devices);
    return std::vector<T>(devices, def);
}

// env_ints is env_list of whole numbers from lo to hi.
std::vector<long long> env_ints(const char *name, int devices, long long def, long long lo, long long hi) {
    char want[64];
    snprintf(want, sizeof want, "a number from %lld to %lld", lo, hi);
    return env_list<long long>(name, devices, def, want, [lo, hi](const char *&p, long long &x) {
        char *end;
        x = strtoll(p, &end, 10);
        if (end == p || x < lo || x > hi) return false;
        p = end;
        return true;
    });
}

Config load_config() {
    Config c;
    c.devices = env_int("RINGACTOR_EMU_DEVICES", 3, 1, 64);
    for (long long x : env_ints("RINGACTOR_EMU_SMS", c.devices, 8, 1, 1024)) c.sms.push_back((int)x);
    c.blocks_per_sm = env_int("RINGACTOR_EMU_BLOCKS_PER_SM", 4, 1, 64);
    c.memory_mib = env_ints("RINGACTOR_EMU_MEMORY_MIB", c.devices, 4096, 1, 1 << 20);
    for (auto cc : env_list<std::pair<int, int>>("RINGACTOR_EMU_CC", c.devices, {9, 0}, "a compute capability such as 9.0",
                                                  [](const char *&p, std::pair<int, int> &x) {
                                                      int n = 0;
                                                      if (sscanf(p, "%d.%d%n", &x.first, &x.second, &n) != 2 || n == 0 || x.first < 1 ||
                                                          x.first > 99 || x.second < 0 || x.second > 9)
                                                          return false;
                                                      p += n;
                                                      return true;
                                                  })) {
        c.cc_major.push_back(cc.first);
        c.cc_minor.push_back(cc.second);
    }
    c.copy_lag_us = env_int("RINGACTOR_EMU_COPY_LAG_US", 0, 0, 10000000);
    c.jitter = env_int("RINGACTOR_EMU_JITTER", 0, 0, 1) == 1;
    c.managed = env_int("RINGACTOR_EMU_MANAGED", 1, 0, 1) == 1;
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

// A node of a captured graph: a kernel launch (k, its shape and copied
// arguments) or, k null, an async copy of n bytes from src to dst.
struct Node {
    const cudaemu_kernel *k = nullptr;
    ra_host_dim3 grid{1, 1, 1}, block{1, 1, 1};
    std::vector<std::vector<unsigned char>> args;
    void *dst = nullptr;
    const void *src = nullptr;
    size_t n = 0;
};

// A graph (CUgraph), captured from a stream, and an instantiated one
// (CUgraphExec), which holds a copy of the nodes: a graph may go once
// instantiated, and a launch holds the nodes it runs.
struct Graph {
    Context *ctx;
    std::vector<Node> nodes;
};
struct Exec {
    Context *ctx;
    std::shared_ptr<const std::vector<Node>> nodes;
};

struct Launch {
    const cudaemu_kernel *k;  // a graph launch's is graph_kernel
    Context *ctx;
    unsigned long long id = 0;  // unique in the process (the scope checker's record of who touched a word)
    bool blocking;  // on the legacy stream or a blocking stream
    std::vector<std::vector<unsigned char>> args;
    std::atomic<bool> done{false};
    unsigned long long end_ns = 0;
    ra_host_dim3 grid{1, 1, 1}, block{1, 1, 1};  // the launch's shape (ra_host_run_grid caps the threads)
    std::shared_ptr<const std::vector<Node>> graph;  // a graph launch's nodes, run in order
    bool threaded = false;  // it runs on a thread of its own (not cudaemu_test_seam's pretend kernel)
    std::shared_ptr<ra_host_ledger> ledger;  // a *_ring kernel's cost ledger (ledger_for), else null
};

// What a graph launch's Launch names as its kernel.
const cudaemu_kernel graph_kernel = {"cuGraphLaunch", 0, {0}, nullptr};

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
    Graph *capture = nullptr;         // while capturing (cuStreamBeginCapture_v2): what is recorded
    bool invalidated = false;         // the capture met a call that may not be captured
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
std::set<Graph *> graphs;
std::set<Exec *> execs;
std::vector<std::shared_ptr<Launch>> all_launches;
std::atomic<long long> violations{0};
unsigned long long next_launch_id = 1;  // guarded by mu

// What the cuda package's tests of the binding read back as device
// attributes 9001 to 9019 (no real driver has them; see cuDeviceGetAttribute),
// for the whole process. Guarded by mu.
struct Record {
    long long host_flags = -1;                                       // 9001: cuMemHostAlloc's last flags
    unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0}, shared = 0;  // 9002-9008: the last launch's shape
    int coop = -1, stream_nonzero = -1;                              // 9009, 9010: and how it was launched
    long long launches = 0;                                          // 9012: launches run (not captured)
    int stream_flags = -1;                                           // 9013: cuStreamCreate's last flags
    int capture_mode = -1;                                           // 9014: cuStreamBeginCapture_v2's last mode
    long long graph_launches = 0;                                    // 9015: cuGraphLaunch, run (not captured)
    long long live_graphs = 0;                                       // 9016: graphs and execs not destroyed
    int instantiate = -1;                                            // 9017: 1 cuGraphInstantiateWithFlags, 2 _v2
    int exec_nodes = -1;                                             // 9018: the last instantiated graph's nodes
    long long async_copies = 0;                                      // 9019: async copies run (not captured)
} rec;

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

// user_module: the host build of a user module's PTX text, if
// cudaemu_module_source built one (the end of this file).
bool user_module(const char *ptx, std::map<std::string, const cudaemu_kernel *> &fns);

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

// The kernels of the cuda package's test modules (hand-written PTX with
// these .entry names; gpu_test.go's real-GPU module has the first two):
// ra_test_store stores its second argument, a u64, at the address in its
// first; ra_test_nop does nothing; ra_test_wait returns once the u32 at
// the address in its argument is not 0, so a test holds a stream busy as
// long as it likes; ra_test_args stores what the driver received of its
// arguments 1 to 7 (u64, s64, u32, s32, f32, f64, u64: sizes 8 8 4 4 4 8
// 8), each in 8 bytes (its bytes, zero above), at the address in its first.
extern "C" void cudaemu_test_store(void **p) {
    unsigned long long *dst = *(unsigned long long **)p[0];
    __atomic_store_n(dst, *(const unsigned long long *)p[1], __ATOMIC_RELAXED);
}

extern "C" void cudaemu_test_nop(void **) {}

extern "C" void cudaemu_test_wait(void **p) {
    const unsigned *flag = *(const unsigned **)p[0];
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

extern "C" void cudaemu_test_args(void **p) {
    if (threadIdx.x != 0 || blockIdx.x != 0 || blockIdx.y != 0 || blockIdx.z != 0) return;
    static const unsigned size[7] = {8, 8, 4, 4, 4, 8, 8};
    unsigned long long *out = *(unsigned long long **)p[0];
    for (int i = 0; i < 7; i++) {
        unsigned long long v = 0;
        memcpy(&v, p[i + 1], size[i]);
        out[i] = v;
    }
}

extern "C" {

CUresult cuInit(unsigned flags) {
    // RINGACTOR_EMU_INIT_RESULT, read at every call: a driver that cannot
    // start answers with it (100, CUDA_ERROR_NO_DEVICE, say).
    const char *fail = getenv("RINGACTOR_EMU_INIT_RESULT");
    if (fail != nullptr && atoi(fail) != 0) return atoi(fail);
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
    {JIT_COMPILER_NOT_FOUND, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"},
    {INVALID_SOURCE, "CUDA_ERROR_INVALID_SOURCE", "device kernel source is invalid"},
    {OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
    {INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
    {COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
    {NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted (cudaemu: a call a real driver would hang or fail on; see stderr)"},
    {NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
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
    *n = (size_t)cfg.memory_mib[d] << 20;
    return SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    if (CUresult r = check_dev(d)) return r;
    if (v == nullptr) return INVALID_VALUE;
    if (attr > 9000 && attr < 9100) {  // the tests' record (Record), 9999: an unnamed result
        std::lock_guard<std::mutex> g(mu);
        switch (attr) {
        case 9001: *v = (int)rec.host_flags; return SUCCESS;
        case 9002: case 9003: case 9004: *v = (int)rec.grid[attr - 9002]; return SUCCESS;
        case 9005: case 9006: case 9007: *v = (int)rec.block[attr - 9005]; return SUCCESS;
        case 9008: *v = (int)rec.shared; return SUCCESS;
        case 9009: *v = rec.coop; return SUCCESS;
        case 9010: *v = rec.stream_nonzero; return SUCCESS;
        case 9011: *v = (int)dev_allocs.size(); return SUCCESS;  // live device allocations
        case 9012: *v = (int)rec.launches; return SUCCESS;
        case 9013: *v = rec.stream_flags; return SUCCESS;
        case 9014: *v = rec.capture_mode; return SUCCESS;
        case 9015: *v = (int)rec.graph_launches; return SUCCESS;
        case 9016: *v = (int)rec.live_graphs; return SUCCESS;
        case 9017: *v = rec.instantiate; return SUCCESS;
        case 9018: *v = rec.exec_nodes; return SUCCESS;
        case 9019: *v = (int)rec.async_copies; return SUCCESS;
        }
        return INVALID_VALUE;
    }
    switch (attr) {
    case 1: *v = 1024; return SUCCESS;              // max threads per block
    case 16: *v = cfg.sms[d]; return SUCCESS;       // SMs
    case 17: *v = 0; return SUCCESS;                // no exec timeout
    case 19: *v = 1; return SUCCESS;                // can map host memory
    case 33: *v = 0x10 + d; return SUCCESS;         // PCI bus
    case 34: *v = 0; return SUCCESS;                // PCI device
    case 39: *v = 2048; return SUCCESS;             // max threads per SM
    case 41: *v = 1; return SUCCESS;                // unified addressing
    case 50: *v = 0; return SUCCESS;                // PCI domain
    case 75: *v = cfg.cc_major[d]; return SUCCESS;  // compute capability (RINGACTOR_EMU_CC)
    case 76: *v = cfg.cc_minor[d]; return SUCCESS;
    case 83: *v = cfg.managed; return SUCCESS;      // managed memory (RINGACTOR_EMU_MANAGED)
    case 86: *v = 0; return SUCCESS;                // no host-native atomics: the queue needs none
    case 88: *v = 0; return SUCCESS;
    case 89: *v = cfg.managed; return SUCCESS;      // concurrent managed access: host memory is always shared
    case 95: *v = 1; return SUCCESS;                // cooperative launch
    case 9100: *v = (int)violations.load(); return SUCCESS;  // rule violations so far
    case 9101: {                                    // ring kernels running on d
        std::lock_guard<std::mutex> g(mu);
        reap();
        *v = running_rings(ctxs[d].get(), false);
        return SUCCESS;
    }
    case 9999: return UNNAMED_RESULT;  // lets a test see a result the driver has no name for
    }
    return INVALID_VALUE;  // as the driver answers an attribute it does not know
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

// The name before CUDA 11.0, which drivers still export (a variant built
// without the _v2 name is a driver of that age).
CUresult cuDevicePrimaryCtxRelease(CUdevice d) { return cuDevicePrimaryCtxRelease_v2(d); }

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

// mem_alloc is cuMemAlloc_v2 and cuMemAllocManaged: host memory counted
// against the current context's device, and recorded as its allocation
// (so copies, launches' pointer checks and cuMemFree take it).
static CUresult mem_alloc(const char *call, CUdeviceptr *p, size_t n) {
    if (CUresult r = need_ctx(call)) return r;
    if (p == nullptr || n == 0) return INVALID_VALUE;
    std::lock_guard<std::mutex> g(mu);
    int d = current->dev;
    if (used[d] + (long long)n > (cfg.memory_mib[d] << 20)) return OUT_OF_MEMORY;
    void *m = alloc_filled(n);
    if (m == nullptr) return OUT_OF_MEMORY;
    used[d] += (long long)n;
    dev_allocs[(uintptr_t)m] = DevAlloc{n, d};
    *p = (CUdeviceptr)(uintptr_t)m;
    return SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return mem_alloc("cuMemAlloc", p, n); }

// cuMemAllocManaged: the emulator's device memory is host memory already,
// so managed memory is the same allocation; flags must be
// CU_MEM_ATTACH_GLOBAL (1) or CU_MEM_ATTACH_HOST (2), as the driver asks.
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags) {
    if (!initialized) return NOT_INITIALIZED;
    if (!cfg.managed) return NOT_SUPPORTED;
    if (flags != 1 && flags != 2) return INVALID_VALUE;
    return mem_alloc("cuMemAllocManaged", p, n);
}

// context_work: the launches (kernels, graph launches) still running in
// the current context, which a call that synchronizes it waits for (after
// no_rings has refused it if one is a ring kernel). Holds mu.
static std::vector<std::shared_ptr<Launch>> context_work() {
    std::vector<std::shared_ptr<Launch>> v;
    for (auto &l : all_launches)
        if (l->ctx == current && l->threaded && alive(l)) v.push_back(l);
    return v;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    if (CUresult r = need_ctx("cuMemFree")) return r;
    std::vector<std::shared_ptr<Launch>> work;
    {
        std::lock_guard<std::mutex> g(mu);
        if (CUresult r = no_rings("cuMemFree")) return r;
        work = context_work();
    }
    // cuMemFree synchronizes: no kernel of the context still runs, and no
    // lagging copy (of any context) may land in the memory once it is freed.
    wait_for(work);
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

// Async copies run in the call, once the kernels queued before them on
// their stream have ended (the call blocks where a GPU would queue the
// copy); a copy queued behind a running ring kernel would never run on a
// GPU either (the backend queues its copies on the legacy stream, before
// any kernel).
static CUresult copy_async(const char *call, void *dst, const void *src, size_t n, void *stream, uintptr_t dev) {
    if (CUresult r = need_ctx(call)) return r;
    bool to_device = dev == (uintptr_t)dst;
    unsigned long long ticket = 0;
    std::vector<std::shared_ptr<Launch>> before;  // kernels queued on the stream: the copy runs after them
    {
        std::lock_guard<std::mutex> g(mu);
        Stream *st = stream_of(stream);
        if (st == nullptr) return INVALID_HANDLE;
        if (st->capture != nullptr) {  // a node of the graph; a graph launch copies at once
            if (!valid_range(dev, n)) return INVALID_VALUE;
            Node node;
            node.dst = dst;
            node.src = src;
            node.n = n;
            st->capture->nodes.push_back(node);
            return SUCCESS;
        }
        reap();
        for (auto &l : pending_on(st))
            if (is_ring(l->k)) return violate(call, "queued behind a running ring kernel on its stream", current->dev);
        if (!valid_range(dev, n)) return INVALID_VALUE;
        rec.async_copies++;
        if (to_device && lag_copy(st, dst, src, 0, n)) return SUCCESS;
        if (!to_device) ticket = copy_ticket(st);
        before = pending_on(st);
    }
    wait_copies(current, ticket);  // a DtoH runs after the copies queued before it on its stream
    wait_for(before);              // and after the kernels (none of them a ring kernel: refused above)
    memcpy(dst, src, n);
    return SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream) {
    return copy_async("cuMemcpyHtoDAsync", (void *)(uintptr_t)dst, src, n, stream, (uintptr_t)dst);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream) {
    return copy_async("cuMemcpyDtoHAsync", dst, (const void *)(uintptr_t)src, n, stream, (uintptr_t)src);
}

// copy_device: cuMemcpyDtoDAsync and cuMemcpyPeerAsync. Both ranges
// must be device memory (of the current context for a DtoD; dst of the
// current context and src of sctx for a peer copy), and a peer copy needs
// peer access enabled between the two contexts, one way or the other (the
// driver would stage a copy without it; the backend decides staging
// itself, by p2pqueue.PathOf, so an unplanned one is a bug). Like the other
// async copies it runs at once, after the lagging copies queued before it
// on its stream and those of the source's context (device memory the
// source's context filled, late).
static CUresult copy_device(const char *call, uintptr_t dst, uintptr_t src, Context *sctx, size_t n, void *stream) {
    if (CUresult r = need_ctx(call)) return r;
    unsigned long long ticket = 0;
    {
        std::lock_guard<std::mutex> g(mu);
        Stream *st = stream_of(stream);
        if (st == nullptr) return INVALID_HANDLE;
        if (st->capture != nullptr) return violate(call, "captured into a graph (the emulator captures host copies only)", current->dev);
        reap();
        for (auto &l : pending_on(st))
            if (is_ring(l->k)) return violate(call, "queued behind a running ring kernel on its stream", current->dev);
        auto d = dev_alloc_of(dst), s = dev_alloc_of(src);
        if (d == dev_allocs.end() || s == dev_allocs.end() || dst + n > d->first + d->second.size || src + n > s->first + s->second.size)
            return INVALID_VALUE;
        int sdev = sctx ? sctx->dev : current->dev;
        if (d->second.dev != current->dev || s->second.dev != sdev) return INVALID_VALUE;
        if (sctx != nullptr && sctx != current && !(current->peers & (1u << sdev)) && !(sctx->peers & (1u << current->dev))) {
            std::string why = "a peer copy from device " + std::to_string(sdev) + " without peer access enabled between the two";
            return violate(call, why.c_str(), current->dev);
        }
        rec.async_copies++;
        ticket = copy_ticket(st);
    }
    wait_copies(current, ticket);
    if (sctx != nullptr && sctx != current) wait_all_copies(sctx);
    memmove((void *)dst, (const void *)src, n);
    return SUCCESS;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *stream) {
    return copy_device("cuMemcpyDtoDAsync", (uintptr_t)dst, (uintptr_t)src, nullptr, n, stream);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n, void *stream) {
    Context *dc = nullptr, *sc = nullptr;
    {
        std::lock_guard<std::mutex> g(mu);
        for (auto &x : ctxs) {
            if (x.get() == dctx) dc = x.get();
            if (x.get() == sctx) sc = x.get();
        }
    }
    if (dc == nullptr || sc == nullptr) return INVALID_CONTEXT;
    if (dc != current) return violate("cuMemcpyPeerAsync", "the destination context is not the current one (the backend issues a peer copy from the destination's context)", dc->dev);
    return copy_device("cuMemcpyPeerAsync", (uintptr_t)dst, (uintptr_t)src, sc, n, stream);
}

CUresult cuMemHostAlloc(void **pp, size_t n, unsigned flags) {
    if (CUresult r = need_ctx("cuMemHostAlloc")) return r;
    if (pp == nullptr || n == 0 || (flags & ~7u)) return INVALID_VALUE;
    void *m = alloc_filled(n);
    if (m == nullptr) return OUT_OF_MEMORY;
    std::lock_guard<std::mutex> g(mu);
    host_allocs[(uintptr_t)m] = {n, flags, current};
    rec.host_flags = flags;
    *pp = m;
    return SUCCESS;
}

CUresult cuMemFreeHost(void *p) {
    if (CUresult r = need_ctx("cuMemFreeHost")) return r;
    std::vector<std::shared_ptr<Launch>> work;
    {
        std::lock_guard<std::mutex> g(mu);
        if (CUresult r = no_rings("cuMemFreeHost")) return r;
        work = context_work();
    }
    wait_for(work);  // it synchronizes too
    std::lock_guard<std::mutex> g(mu);
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
    if (user_module(s, m->fns)) {
        put_log(infolog, infosize, "cudaemu: resolved to the host build of its source");
        *mod = m.get();
        modules.insert(m.release());
        return SUCCESS;
    }
    for (auto &name : entries(s)) {
        const cudaemu_kernel *k = nullptr;
        for (const cudaemu_kernel *t = cudaemu_kernels; t->name; t++)
            if (name == t->name) k = t;
        if (k == nullptr) {
            std::string msg = "cudaemu: kernel " + name +
                              " has no host build: the emulator runs the built-in ops' kernels, ra_clock and the kernels of a PTX text whose CUDA source it was given first "
                              "(cudaemu_module_source; ringkernel/cuda gives a user op's)";
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
    unsigned nin = u32(RA_ARG_OFF_NUM_IN), nout = u32(RA_ARG_OFF_NUM_OUT), nsteal = u32(RA_ARG_OFF_NUM_STEAL);
    for (unsigned i = 0; i < nin && i < RA_MAX_IN_LINKS; i++) ptrs.push_back({"in-link " + std::to_string(i), u64(RA_ARG_OFF_IN + 8 * i)});
    for (unsigned i = 0; i < nout && i < RA_MAX_OUT_LINKS; i++) ptrs.push_back({"out-link " + std::to_string(i), u64(RA_ARG_OFF_OUT + 8 * i)});
    for (unsigned i = 0; i < nsteal && i < RA_MAX_STEAL_LINKS; i++) ptrs.push_back({"steal link " + std::to_string(i), u64(RA_ARG_OFF_STEAL + 8 * i)});
    // A bound buffer (Stage.Buffers): its first and its last byte.
    for (unsigned i = 0, nbuf = u32(RA_ARG_OFF_NUM_BUF); i < nbuf && i < RA_MAX_STAGE_BUFFERS; i++) {
        unsigned long long p = u64(RA_ARG_OFF_BUF + 8 * i), size = u64(RA_ARG_OFF_BUF_SIZE + 8 * i);
        ptrs.push_back({"bound buffer " + std::to_string(i), p});
        if (p != 0 && size > 1) ptrs.push_back({"bound buffer " + std::to_string(i) + "'s last byte", p + size - 1});
    }
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

// ---- The cost ledger (ra_host.h): one per *_ring launch, kept after the
// kernel ends (the last RA_LEDGER_KEEP launches), read by
// cudaemu_ledger. Ids are the launches' (next_launch_id).
#define RA_LEDGER_KEEP 1024
struct LedgerEntry {
    unsigned long long id;
    std::string name;
    std::shared_ptr<ra_host_ledger> l;
};
static std::mutex ledger_mu;
static std::deque<LedgerEntry> ledgers;  // guarded by ledger_mu, by id

// ledger_for gives a *_ring launch its ledger: the control block and the
// links of its ra_ring_args, and the offsets to classify words by. Holds
// mu (l->id is assigned by start, next).
static void ledger_for(Launch *l) {
    const cudaemu_kernel *k = l->k;
    size_t n = strlen(k->name);
    if (n <= 5 || strcmp(k->name + n - 5, "_ring") != 0 || k->nparams != 1 || l->args[0].size() < RA_ARG_SIZE) return;
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
    auto L = std::make_shared<ra_host_ledger>();
    L->ctrl = (uintptr_t)u64(RA_ARG_OFF_CTRL);
    unsigned nin = std::min(u32(RA_ARG_OFF_NUM_IN), (unsigned)RA_MAX_IN_LINKS), nout = std::min(u32(RA_ARG_OFF_NUM_OUT), (unsigned)RA_MAX_OUT_LINKS);
    for (unsigned i = 0; i < nin; i++) L->links[L->nlinks++] = (uintptr_t)u64(RA_ARG_OFF_IN + 8 * i);
    L->nin = L->nlinks;
    for (unsigned i = 0; i < nout; i++) L->links[L->nlinks++] = (uintptr_t)u64(RA_ARG_OFF_OUT + 8 * i);
    L->off_tail = RA_Q_OFF_TAIL, L->off_head = RA_Q_OFF_HEAD, L->off_closed = RA_Q_OFF_CLOSED;
    L->off_releases = RA_Q_OFF_RELEASES, L->off_slots = RA_Q_OFF_SLOTS;
    L->off_cmd = RA_CB_OFF_COMMAND, L->off_cmd_seq = RA_CB_OFF_COMMAND_SEQ, L->off_cmd_arg = RA_CB_OFF_COMMAND_ARG;
    L->off_clock = RA_CB_OFF_CLOCK_OFFSET, L->off_beat = RA_CB_OFF_HEARTBEAT, L->off_processed = RA_CB_OFF_PROCESSED;
    l->ledger = L;
    std::lock_guard<std::mutex> g(ledger_mu);
    ledgers.push_back({next_launch_id, k->name, L});
    while (ledgers.size() > RA_LEDGER_KEEP) ledgers.pop_front();
}

// run_graph runs a graph launch's nodes in order on its thread: each
// kernel as its grid (with copies of its arguments of its own), each copy
// at once.
static void run_graph(Launch *l) {
    for (const Node &n : *l->graph) {
        if (n.k == nullptr) {
            if (n.n > 0) memcpy(n.dst, n.src, n.n);
            continue;
        }
        std::vector<std::vector<unsigned char>> args = n.args;
        std::vector<void *> ps;
        for (auto &a : args) ps.push_back(a.data());
        ra_host_run_grid(n.grid, n.block, n.k->run, ps.data(), l);
    }
}

// start registers l on st and runs it on a thread of its own. Holds mu.
static void start(const std::shared_ptr<Launch> &l, Stream *st) {
    l->id = next_launch_id++;
    l->blocking = !(st->flags & 1);
    l->threaded = true;
    st->launches.push_back(l);
    all_launches.push_back(l);
    // The thread holds its launch; detached, so a process may exit with
    // kernels still spinning, as it may with a GPU's.
    std::thread([l] {
        if (l->graph) {
            run_graph(l.get());
        } else {
            std::vector<void *> ps;
            for (auto &a : l->args) ps.push_back(a.data());
            ra_host_led = l->ledger.get();  // ra_host_run_grid sets it on every thread
            ra_host_run_grid(l->grid, l->block, l->k->run, ps.data(), l.get());
            ra_host_led = nullptr;
        }
        l->end_ns = now_ns();
        l->done.store(true, std::memory_order_release);
    }).detach();
}

// wait_stream_copies: with the copy engine lagging, work on the legacy or
// a blocking stream starts after the copies queued there: the call waits
// for them (a GPU's would not).
static CUresult wait_stream_copies(void *stream) {
    if (cfg.copy_lag_us <= 0) return SUCCESS;
    unsigned long long ticket = 0;
    {
        std::lock_guard<std::mutex> g(mu);
        Stream *st = stream_of(stream);
        if (st == nullptr) return INVALID_HANDLE;
        if (st->capture != nullptr) return SUCCESS;
        if (!(st->flags & 1)) ticket = copy_ticket(st);
    }
    wait_copies(current, ticket);
    return SUCCESS;
}

// not_captured: a call the emulator cannot record into a graph, on a
// capturing stream; it says so on stderr (a real driver could record it).
static CUresult not_captured(const char *call, const char *what) {
    fprintf(stderr, "cudaemu: %s: %s cannot be captured into a graph by the emulator (CUDA_ERROR_NOT_SUPPORTED)\n", call, what);
    return NOT_SUPPORTED;
}

static CUresult launch(const char *call, bool coop, void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    if (CUresult r = need_ctx(call)) return r;
    Function *fn = (Function *)f;
    if (fn == nullptr || extra != nullptr || (fn->k->nparams > 0 && params == nullptr)) return INVALID_VALUE;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || (unsigned long long)bx * by * bz > 1024) return INVALID_VALUE;
    if (shared > 228 * 1024) return LAUNCH_OUT_OF_RESOURCES;
    // A cooperative grid must be co-resident: at most the occupancy
    // (RINGACTOR_EMU_BLOCKS_PER_SM) times the device's SMs.
    if (coop && (unsigned long long)gx * gy * gz > (unsigned long long)cfg.blocks_per_sm * cfg.sms[current->dev])
        return COOPERATIVE_LAUNCH_TOO_LARGE;
    auto l = std::make_shared<Launch>();
    l->k = fn->k;
    l->ctx = current;
    l->grid = {gx, gy, gz};
    l->block = {bx, by, bz};
    for (int i = 0; i < fn->k->nparams; i++) {
        const unsigned char *p = (const unsigned char *)params[i];
        l->args.emplace_back(p, p + fn->k->param_size[i]);
    }
    if (CUresult r = wait_stream_copies(stream)) return r;
    std::lock_guard<std::mutex> g(mu);
    Stream *st = stream_of(stream);
    if (st == nullptr) return INVALID_HANDLE;
    if (st->capture != nullptr) {
        if (is_ring(l->k)) return not_captured(call, l->k->name);
        Node n;
        n.k = l->k;
        n.grid = l->grid;
        n.block = l->block;
        n.args = std::move(l->args);
        st->capture->nodes.push_back(std::move(n));
        return SUCCESS;
    }
    reap();
    if (CUresult r = check_ring_args(call, l.get())) return r;
    ledger_for(l.get());
    rec.grid[0] = gx, rec.grid[1] = gy, rec.grid[2] = gz;
    rec.block[0] = bx, rec.block[1] = by, rec.block[2] = bz;
    rec.shared = shared;
    rec.coop = coop;
    rec.stream_nonzero = stream != nullptr;
    rec.launches++;
    start(l, st);
    return SUCCESS;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        void *stream, void **params, void **extra) {
    return launch("cuLaunchKernel", false, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

CUresult cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                   unsigned shared, void *stream, void **params) {
    return launch("cuLaunchCooperativeKernel", true, f, gx, gy, gz, bx, by, bz, shared, stream, params, nullptr);
}

CUresult cuStreamCreate(void **s, unsigned flags) {
    if (CUresult r = need_ctx("cuStreamCreate")) return r;
    if (s == nullptr || flags > 1) return INVALID_VALUE;
    std::lock_guard<std::mutex> g(mu);
    Stream *st = new Stream{current, flags, {}};
    streams.insert(st);
    rec.stream_flags = (int)flags;
    *s = st;
    return SUCCESS;
}

// capturing: a synchronize or query of a capturing stream fails and
// invalidates the capture, as the driver's does. Holds mu.
static CUresult capturing(Stream *st) {
    if (st->capture == nullptr) return SUCCESS;
    st->invalidated = true;
    return STREAM_CAPTURE_UNSUPPORTED;
}

CUresult cuStreamQuery(void *s) {
    if (CUresult r = need_ctx("cuStreamQuery")) return r;
    std::lock_guard<std::mutex> g(mu);
    Stream *st = stream_of(s);
    if (st == nullptr) return INVALID_HANDLE;
    if (CUresult r = capturing(st)) return r;
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
        if (CUresult r = capturing(st)) return r;
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
    delete st->capture;
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
    if (st->capture != nullptr) return not_captured("cuEventRecord", "an event record");
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

// ---- Graphs: stream capture, instantiation, launch (see the header comment).

CUresult cuStreamBeginCapture_v2(void *s, int mode) {
    if (CUresult r = need_ctx("cuStreamBeginCapture")) return r;
    std::lock_guard<std::mutex> g(mu);
    Stream *st = (Stream *)s;
    if (st == nullptr || mode < 0 || mode > 2) return INVALID_VALUE;  // the legacy stream cannot capture
    if (!streams.count(st)) return INVALID_HANDLE;
    if (st->capture != nullptr) return ILLEGAL_STATE;
    st->capture = new Graph{st->ctx, {}};
    st->invalidated = false;
    rec.capture_mode = mode;
    return SUCCESS;
}

CUresult cuStreamEndCapture(void *s, void **graph) {
    if (CUresult r = need_ctx("cuStreamEndCapture")) return r;
    std::lock_guard<std::mutex> g(mu);
    Stream *st = (Stream *)s;
    if (st == nullptr || graph == nullptr) return INVALID_VALUE;
    if (!streams.count(st)) return INVALID_HANDLE;
    if (st->capture == nullptr) return ILLEGAL_STATE;
    Graph *gr = st->capture;
    st->capture = nullptr;
    if (st->invalidated) {
        delete gr;
        *graph = nullptr;
        return STREAM_CAPTURE_INVALIDATED;
    }
    graphs.insert(gr);
    rec.live_graphs++;
    *graph = gr;
    return SUCCESS;
}

static CUresult instantiate(const char *call, void **exec, void *graph, int how) {
    if (CUresult r = need_ctx(call)) return r;
    std::lock_guard<std::mutex> g(mu);
    Graph *gr = (Graph *)graph;
    if (exec == nullptr || !graphs.count(gr)) return INVALID_VALUE;
    Exec *x = new Exec{gr->ctx, std::make_shared<const std::vector<Node>>(gr->nodes)};
    execs.insert(x);
    rec.live_graphs++;
    rec.instantiate = how;
    rec.exec_nodes = (int)gr->nodes.size();
    *exec = x;
    return SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
    if (flags != 0) return INVALID_VALUE;
    return instantiate("cuGraphInstantiateWithFlags", exec, graph, 1);
}

// CUDA 11.0's form, with an error node and a log.
CUresult cuGraphInstantiate_v2(void **exec, void *graph, void **err_node, char *log, size_t log_size) {
    if (err_node != nullptr) *err_node = nullptr;
    CUresult r = instantiate("cuGraphInstantiate_v2", exec, graph, 2);
    put_log(log, log_size, r == SUCCESS ? "" : "cudaemu: not a graph of this driver");
    return r;
}

CUresult cuGraphLaunch(void *exec, void *stream) {
    if (CUresult r = need_ctx("cuGraphLaunch")) return r;
    if (CUresult r = wait_stream_copies(stream)) return r;
    std::lock_guard<std::mutex> g(mu);
    Exec *x = (Exec *)exec;
    if (!execs.count(x)) return INVALID_HANDLE;
    Stream *st = stream_of(stream);
    if (st == nullptr) return INVALID_HANDLE;
    if (x->ctx != current) return INVALID_CONTEXT;
    if (st->capture != nullptr) {  // captured: its nodes join the capture
        st->capture->nodes.insert(st->capture->nodes.end(), x->nodes->begin(), x->nodes->end());
        return SUCCESS;
    }
    reap();
    auto l = std::make_shared<Launch>();
    l->k = &graph_kernel;
    l->ctx = current;
    l->graph = x->nodes;
    rec.graph_launches++;
    start(l, st);
    return SUCCESS;
}

CUresult cuGraphExecDestroy(void *exec) {
    if (CUresult r = need_ctx("cuGraphExecDestroy")) return r;
    std::lock_guard<std::mutex> g(mu);
    Exec *x = (Exec *)exec;
    if (!execs.erase(x)) return INVALID_VALUE;
    delete x;  // a launch still running holds the nodes
    rec.live_graphs--;
    return SUCCESS;
}

CUresult cuGraphDestroy(void *graph) {
    if (CUresult r = need_ctx("cuGraphDestroy")) return r;
    std::lock_guard<std::mutex> g(mu);
    Graph *gr = (Graph *)graph;
    if (!graphs.erase(gr)) return INVALID_VALUE;
    delete gr;
    rec.live_graphs--;
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

// cudaemu_ledger_mark is the id the next launch will have: the ledgers
// of the launches after a mark are those with an id at or above it.
unsigned long long cudaemu_ledger_mark(void) {
    std::lock_guard<std::mutex> g(mu);
    return next_launch_id;
}

// cudaemu_ledger copies the ledger of the i-th *_ring launch (in launch
// order) whose id is at or above from: up to n counters into out (in
// RA_HOST_LEDGER_* order), its kernel's name into name (NUL-terminated,
// cap bytes) and its id into *id. It returns RA_HOST_LEDGER_N, or -1 when
// there is no such launch. A running kernel's counters are read live
// (acquire loads: a later call sees every count made before one this call
// saw).
int cudaemu_ledger(unsigned long long from, int i, char *name, int cap, unsigned long long *id, unsigned long long *out, int n) {
    std::lock_guard<std::mutex> g(ledger_mu);
    for (auto &e : ledgers) {
        if (e.id < from || i-- > 0) continue;
        if (name && cap > 0) snprintf(name, (size_t)cap, "%s", e.name.c_str());
        if (id) *id = e.id;
        for (int k = 0; k < n && k < RA_HOST_LEDGER_N; k++) out[k] = e.l->c[k].load(std::memory_order_acquire);
        return RA_HOST_LEDGER_N;
    }
    return -1;
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

// ---- User modules: a user op's CUDA source, built for the host.
//
// cudaemu_module_source(ptx, name, code, n, header_names, header_texts,
// log, log_size) takes the CUDA C++ the PTX text ptx was compiled from (a
// user op's ring-kernel program, kernels.RingSource: the file name, its
// code and the n headers it includes by name) and builds it for the host
// as the built-in kernels are built: the C++ compiler, their flags
// (cudaemu_cxx_flags), the same shim (cudaemu_shim_ra_host_h,
// force-included), plus RA_HOST_MODULE (the module uses this driver's
// thread indices, block and launch tag) and -fvisibility=hidden, into a
// shared library linked against this driver (its ra_host_seam and those
// variables). A later cuModuleLoadDataEx of the same PTX text resolves its
// .entry names to that build. No real driver has this entry point:
// package cuda/hostbuild looks for it with dlsym (Supported) and
// ringkernel/cuda calls it before loading a user op's PTX.
//   - Ring kernels only: every .entry of the PTX must end in _ring
//     (RA_RING_KERNEL, RA_PORT_RING_KERNEL, RA_TYPED_RING_KERNEL), whose
//     one parameter is the ra_ring_args; any other kernel is refused
//     (CUDA_ERROR_NOT_SUPPORTED), as its parameters are unknown here.
//   - The compiler is $CXX, else c++, g++ or clang++ from PATH; with none,
//     CUDA_ERROR_JIT_COMPILER_NOT_FOUND. A compile error is
//     CUDA_ERROR_INVALID_SOURCE with the compiler's messages in log (file
//     names as given, at most 40 lines).
//   - Builds are cached in RINGACTOR_EMU_MODULE_DIR, else modules/ beside
//     this library, else $TMPDIR/ringactor-cudaemu-UID: a library is
//     named by a hash of its key (the compiler, flags, this driver's path,
//     the entries and every file) and reused when the key file beside it
//     holds the same key, so another test process or run compiles nothing;
//     within the process, a key built once is not looked up again.
//     Builds run one at a time, never under the driver's lock.

namespace {

typedef std::map<std::string, const cudaemu_kernel *> Fns;
std::mutex user_mu;                                 // the two maps; taken after mu, never before
std::map<std::string, std::shared_ptr<Fns>> user_by_ptx;  // PTX text -> the kernels of its host build
std::map<std::string, std::shared_ptr<Fns>> user_by_key;  // build key -> its loaded kernels
std::mutex user_build_mu;                           // one build at a time

const char *const reserved_files[] = {"ra_host.h", "cudaemu.h", "cudaemu_module.cpp", "module.so", "build.log"};

// file_name_ok: a plain file name (the files are written into one directory).
bool file_name_ok(const std::string &s) {
    if (s.empty() || s.size() > 200 || s[0] == '.') return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.')) return false;
    for (const char *r : reserved_files)
        if (s == r) return false;
    return true;
}

bool ends_with(const std::string &s, const char *suffix) {
    size_t n = strlen(suffix);
    return s.size() > n && s.compare(s.size() - n, n, suffix) == 0;
}

// key_hash is two 64-bit FNV-1a hashes of s, 32 hex digits: a file name
// only (the key file beside the library is compared in full).
std::string key_hash(const std::string &s) {
    unsigned long long a = 14695981039346656037ull, b = 1099511628211ull * 31;
    for (unsigned char c : s) {
        a = (a ^ c) * 1099511628211ull;
        b = (b ^ c) * 1099511628211ull + 0x9e3779b97f4a7c15ull;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%016llx%016llx", a, b);
    return buf;
}

bool read_file(const std::string &path, std::string &out) {
    FILE *f = fopen(path.c_str(), "rb");
    if (f == nullptr) return false;
    out.clear();
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    bool ok = !ferror(f);
    fclose(f);
    return ok;
}

bool write_file(const std::string &path, const std::string &text) {
    FILE *f = fopen(path.c_str(), "wb");
    if (f == nullptr) return false;
    bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
    return fclose(f) == 0 && ok;
}

// self_path is this library's file, absolute: a user module links it.
std::string self_path() {
    Dl_info info;
    if (dladdr((void *)&key_hash, &info) == 0 || info.dli_fname == nullptr) return "";
    char buf[PATH_MAX];
    if (realpath(info.dli_fname, buf) == nullptr) return "";
    return buf;
}

// module_dir is the cache directory (see the section's comment), made if
// needed; "" when none is writable.
std::string module_dir(const std::string &self) {
    std::vector<std::string> cand;
    const char *e = getenv("RINGACTOR_EMU_MODULE_DIR");
    if (e != nullptr && *e) {
        cand.push_back(e);
    } else {
        size_t slash = self.rfind('/');
        if (slash != std::string::npos) cand.push_back(self.substr(0, slash) + "/modules");
        const char *t = getenv("TMPDIR");
        cand.push_back(std::string(t && *t ? t : "/tmp") + "/ringactor-cudaemu-" + std::to_string((unsigned long)getuid()));
    }
    for (auto &d : cand) {
        if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) continue;
        if (access(d.c_str(), W_OK | X_OK) == 0) return d;
    }
    return "";
}

// run_compiler runs argv (argv[0] looked up in PATH) with its output in
// log_path: the exit status, or -1 with *spawn_err set when it could not
// start.
int run_compiler(std::vector<std::string> argv, const std::string &log_path, int *spawn_err) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<char *> av;
    for (auto &a : argv) av.push_back(&a[0]);
    av.push_back(nullptr);
    pid_t pid;
    int r = posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0) {
        *spawn_err = r;
        return -1;
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            *spawn_err = errno;
            return -1;
        }
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

// trim_log makes the compiler's output readable: the build directory's
// prefix taken off file names, at most 40 lines.
std::string trim_log(std::string out, const std::string &dir) {
    const std::string prefix = dir + "/";
    for (size_t i; (i = out.find(prefix)) != std::string::npos;) out.erase(i, prefix.size());
    std::string kept;
    int lines = 0, more = 0;
    for (size_t at = 0; at < out.size();) {
        size_t nl = out.find('\n', at);
        if (nl == std::string::npos) nl = out.size();
        if (lines < 40) {
            kept.append(out, at, nl - at);
            kept += '\n';
            lines++;
        } else {
            more++;
        }
        at = nl + 1;
    }
    if (more > 0) kept += "... (" + std::to_string(more) + " more lines)\n";
    return kept;
}

// remove_dir removes the build directory and the files written in it.
void remove_dir(const std::string &dir, const std::vector<std::string> &files) {
    for (auto &f : files) unlink((dir + "/" + f).c_str());
    rmdir(dir.c_str());
}

// load_module opens a built library and reads its table; "" on success,
// else what went wrong.
std::string load_module(const std::string &lib, const std::vector<std::string> &entries, Fns &fns) {
    void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return std::string("dlopen: ") + dlerror();
    auto *t = (const cudaemu_kernel *)dlsym(h, "cudaemu_module_kernels");
    if (t == nullptr) return "no table cudaemu_module_kernels in " + lib;
    for (; t->name; t++) fns[t->name] = t;  // the library stays loaded: modules keep its kernels
    for (auto &e : entries)
        if (!fns.count(e)) return "kernel " + e + " is not in " + lib;
    return "";
}

bool user_module(const char *ptx, Fns &fns) {
    std::lock_guard<std::mutex> g(user_mu);
    auto it = user_by_ptx.find(ptx);
    if (it == user_by_ptx.end()) return false;
    fns = *it->second;
    return true;
}

}  // namespace

extern "C" CUresult cudaemu_module_source(const char *ptx, const char *name, const char *code, int nheaders,
                                          const char *const *header_names, const char *const *header_texts, char *log,
                                          size_t log_size) {
    auto fail = [&](CUresult r, const std::string &msg) {
        put_log(log, log_size, msg.c_str());
        return r;
    };
    put_log(log, log_size, "");
    if (ptx == nullptr || name == nullptr || code == nullptr || nheaders < 0 ||
        (nheaders > 0 && (header_names == nullptr || header_texts == nullptr)))
        return INVALID_VALUE;
    std::vector<std::string> ents = entries(ptx);
    if (ents.empty()) return fail(INVALID_VALUE, "cudaemu: the PTX text has no .entry");
    for (auto &e : ents) {
        if (!ends_with(e, "_ring"))
            return fail(NOT_SUPPORTED, "cudaemu: kernel " + e +
                                           ": the emulated driver builds only the ring kernels of a user op's source (RA_RING_KERNEL, RA_PORT_RING_KERNEL, "
                                           "RA_TYPED_RING_KERNEL: .entry names ending in _ring); leave other __global__ functions out of it");
    }
    std::map<std::string, std::string> files;  // by name, sorted: the key is stable
    if (!file_name_ok(name)) return fail(INVALID_VALUE, std::string("cudaemu: source file name \"") + name + "\": want a plain file name");
    files[name] = code;
    for (int i = 0; i < nheaders; i++) {
        if (header_names[i] == nullptr || header_texts[i] == nullptr || !file_name_ok(header_names[i]) || files.count(header_names[i]))
            return fail(INVALID_VALUE, std::string("cudaemu: header name \"") + (header_names[i] ? header_names[i] : "(null)") +
                                           "\": want a plain file name, once");
        files[header_names[i]] = header_texts[i];
    }
    std::string unit = "// Generated by the emulated driver (cudaemu_module_source): a user op's ring kernels, built for the host.\n"
                       "#include \"cudaemu.h\"\n#include \"" + std::string(name) + "\"\n";
    std::string table;
    for (size_t i = 0; i < ents.size(); i++) {
        unit += "static void cudaemu_module_run_" + std::to_string(i) + "(void **p) { ra_ring_args a; memcpy(&a, p[0], sizeof a); " + ents[i] + "(a); }\n";
        table += "    {\"" + ents[i] + "\", 1, {sizeof(ra_ring_args)}, cudaemu_module_run_" + std::to_string(i) + "},\n";
    }
    unit += "extern \"C\" __attribute__((visibility(\"default\"))) const cudaemu_kernel cudaemu_module_kernels[] = {\n" + table + "    {0, 0, {0}, 0},\n};\n";
    files["cudaemu_module.cpp"] = unit;
    files["ra_host.h"] = cudaemu_shim_ra_host_h;
    files["cudaemu.h"] = cudaemu_shim_cudaemu_h;

    const std::string self = self_path();
    if (self.empty()) return fail(OPERATING_SYSTEM, "cudaemu: cannot find this driver's own file (dladdr), which a user module links");
    const char *cxx_env = getenv("CXX");
    std::vector<std::string> compilers;
    if (cxx_env != nullptr && *cxx_env) {
        compilers.push_back(cxx_env);
    } else {
        compilers = {"c++", "g++", "clang++"};
    }
    std::vector<std::string> flags;
    for (const char *const *f = cudaemu_cxx_flags; *f; f++) flags.push_back(*f);
    for (const char *f : {"-shared", "-fvisibility=hidden", "-DRA_HOST_MODULE"}) flags.push_back(f);

    std::string key = "cudaemu user module 1\n";
    for (auto &c : compilers) key += c + '\0';
    key += '\n';
    for (auto &f : flags) key += f + '\0';
    key += '\n' + self + '\n';
    for (auto &f : files) key += f.first + '\0' + std::to_string(f.second.size()) + '\0' + f.second + '\0';

    std::lock_guard<std::mutex> build(user_build_mu);
    auto done = [&](const std::shared_ptr<Fns> &fns) {
        std::lock_guard<std::mutex> g(user_mu);
        user_by_key[key] = fns;
        user_by_ptx[ptx] = fns;
        return SUCCESS;
    };
    {
        std::lock_guard<std::mutex> g(user_mu);
        auto it = user_by_key.find(key);
        if (it != user_by_key.end()) {
            user_by_ptx[ptx] = it->second;
            return SUCCESS;
        }
    }
    const std::string dir = module_dir(self);
    if (dir.empty())
        return fail(OPERATING_SYSTEM, "cudaemu: no writable directory to build a user module in: set RINGACTOR_EMU_MODULE_DIR to one");
    const std::string base = dir + "/" + key_hash(key), lib = base + ".so", keyfile = base + ".key";
    auto fns = std::make_shared<Fns>();
    std::string old;
    if (read_file(keyfile, old) && old == key && access(lib.c_str(), R_OK) == 0) {
        std::string why = load_module(lib, ents, *fns);
        if (why.empty()) return done(fns);
        fns->clear();  // a damaged cache entry: build it again
    }

    std::string tmpl = dir + "/.build-XXXXXX";
    if (mkdtemp(&tmpl[0]) == nullptr) return fail(OPERATING_SYSTEM, "cudaemu: mkdtemp in " + dir + ": " + strerror(errno));
    const std::string bdir = tmpl;
    std::vector<std::string> written;
    for (auto &f : files) {
        written.push_back(f.first);
        if (!write_file(bdir + "/" + f.first, f.second)) {
            remove_dir(bdir, written);
            return fail(OPERATING_SYSTEM, "cudaemu: writing " + bdir + "/" + f.first + ": " + strerror(errno));
        }
    }
    written.push_back("module.so");
    written.push_back("build.log");
    std::vector<std::string> args = {"", };
    args.insert(args.end(), flags.begin(), flags.end());
    for (const std::string &a : {std::string("-I"), bdir, std::string("-include"), bdir + "/ra_host.h", bdir + "/cudaemu_module.cpp", self,
                                 std::string("-o"), bdir + "/module.so"})
        args.push_back(a);
    int status = -1, spawn_err = 0;
    std::string used;
    for (auto &c : compilers) {
        args[0] = c;
        spawn_err = 0;
        status = run_compiler(args, bdir + "/build.log", &spawn_err);
        used = c;
        if (status != -1 || spawn_err != ENOENT) break;
    }
    if (status == -1) {
        remove_dir(bdir, written);
        if (spawn_err == ENOENT) {
            std::string tried;
            for (auto &c : compilers) tried += (tried.empty() ? "" : ", ") + c;
            return fail(JIT_COMPILER_NOT_FOUND, "cudaemu: no C++ compiler to build user op source " + std::string(name) + " for the host (tried " + tried +
                                                    "): install one (Debian: apt-get install g++) or set CXX to one");
        }
        return fail(OPERATING_SYSTEM, "cudaemu: starting " + used + ": " + strerror(spawn_err));
    }
    if (status != 0) {
        std::string out;
        read_file(bdir + "/build.log", out);
        remove_dir(bdir, written);
        return fail(INVALID_SOURCE, "cudaemu: " + used + " could not build " + name + " for the host (exit status " + std::to_string(status) +
                                        "); the emulated driver builds a user op's CUDA source with the host C++ compiler through its shim "
                                        "(internal/cudaemu/csrc/ra_host.h; the README says what of CUDA it supports). The compiler said:\n" +
                                        trim_log(out, bdir));
    }
    // Into the cache: the library first, then its key, each renamed into
    // place (a reader that finds the key finds the library).
    if (rename((bdir + "/module.so").c_str(), lib.c_str()) != 0 || !write_file(bdir + "/key", key) ||
        rename((bdir + "/key").c_str(), keyfile.c_str()) != 0) {
        written.push_back("key");
        remove_dir(bdir, written);
        return fail(OPERATING_SYSTEM, "cudaemu: caching the user module in " + dir + ": " + strerror(errno));
    }
    remove_dir(bdir, written);
    std::string why = load_module(lib, ents, *fns);
    if (!why.empty()) return fail(OPERATING_SYSTEM, "cudaemu: loading the user module built from " + std::string(name) + ": " + why);
    return done(fns);
}
