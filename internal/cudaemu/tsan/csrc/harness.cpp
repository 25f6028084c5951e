// harness.cpp: ThreadSanitizer harness for the device loop (ra_ring_loop in
// kernels/cuda/ringactor.cuh), built for the host through csrc/ra_host.h.
// internal/cudaemu/tsan (the Go command behind make tsan) writes it next to
// ops.cpp (the ring kernels of a few built-in ops, the text NVRTC compiles,
// and the table tsan_ops) and compiles both with -fsanitize=thread.
//
// One run is one case at N threads per block: harness CASE N. The links, the
// control block and the trace ring are formatted in ordinary host memory as
// p2pqueue.Init and ringkernel.InitControlBlock lay them out (magic last),
// the launch arguments are filled as ringkernel/cuda's args does, and the
// op's ring kernel runs through ra_host_run_grid({1,1,1}, {N,1,1}) on its own
// thread, while host threads play the Go side, with __atomic acquire and
// release exactly where the Go code uses order.LoadAcquire*/StoreRelease*:
//
//   ingress   p2pqueue.Producer: Reserve (head re-read only when short of
//             room), slots written plain, bytes-in and publishes, then tail
//             released; Close stores closed after the last tail.
//   egress    p2pqueue.Consumer, one per out-link: tail re-read only when
//             empty, closed then tail again, slots read plain, bytes-out and
//             releases, then head released. Every result is checked, and
//             the kernel's bytes-in and publishes on the link read after
//             tail count every result below it.
//   pump      ringkernel's trace pump: a Consumer on the trace ring, 64
//             records at a time, slowed a little so the ring fills and the
//             kernel waits in ra_record.
//   status    ringkernel.Status in a loop: the counters, last_error and
//             last_error_id, state and heartbeat, busy, the links' head and
//             tail, and the in-link's bytes-out and releases read after head
//             (every message below head counted).
//   commander ringkernel.ControlBlock.PostArg (argument, command, then seq
//             released) and the wait for ack, the clock offset rewritten as
//             the backend's recalibration does; in the steal case,
//             Kernel.Steal (CmdSteal, then stolen read after the ack).
//   thief     the steal case's consumer of the victim's steal link: every
//             stolen slot checked against what was sent.
//
// Stdout gets one line, "ok ..." with the counts; a failed check prints
// "FAIL ..." lines to stderr and exits 1; ThreadSanitizer's reports exit
// with TSAN_OPTIONS' exitcode (the Go command sets 66); a run that does not
// end prints "HUNG" and exits 3.
#include "ringactor_layout.h"
#include "ringactor_types.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// The generated table (ops.cpp): each op's ring kernel in the launch shape
// ra_host_run_grid takes (p[0] points at the argument block).
struct tsan_op {
    const char *name;
    void (*fn)(void **);
};
extern "C" const tsan_op tsan_ops[];

// The seam: every cross-agent access of the device code calls it first. The
// harness has nothing to add (the emulated driver checks scopes here).
extern "C" void ra_host_seam(const void *, int) {}

// ---- the Go side's orders (internal/order) ---------------------------------
static inline uint64_t ld_acq64(const unsigned char *b, unsigned off) { return __atomic_load_n((const uint64_t *)(b + off), __ATOMIC_ACQUIRE); }
static inline uint32_t ld_acq32(const unsigned char *b, unsigned off) { return __atomic_load_n((const uint32_t *)(b + off), __ATOMIC_ACQUIRE); }
static inline void st_rel64(unsigned char *b, unsigned off, uint64_t v) { __atomic_store_n((uint64_t *)(b + off), v, __ATOMIC_RELEASE); }
static inline void st_rel32(unsigned char *b, unsigned off, uint32_t v) { __atomic_store_n((uint32_t *)(b + off), v, __ATOMIC_RELEASE); }
// atomic.LoadInt32 (ControlBlock.Counters' read of last_error).
static inline int32_t ld_seqcst_i32(const unsigned char *b, unsigned off) { return __atomic_load_n((const int32_t *)(b + off), __ATOMIC_SEQ_CST); }
// Plain little-endian words (binary.LittleEndian on slot bytes).
static inline uint64_t get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint32_t get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static inline void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }

static uint64_t now_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static void sleep_us(unsigned us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); }

// ---- failures ----------------------------------------------------------------
static std::mutex fail_mu;
static int fail_count;
static void fail(const char *fmt, ...) {
    std::lock_guard<std::mutex> g(fail_mu);
    if (++fail_count > 20) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
static bool failed() {
    std::lock_guard<std::mutex> g(fail_mu);
    return fail_count > 0;
}

// ---- a link region (p2pqueue.Init) --------------------------------------------
struct region {
    unsigned char *base = nullptr;
    uint32_t cap = 0, slot = 0;
    bool ll = false;  // flagged (p2pqueue FormatFlagged): slot/2 logical bytes, a lap flag in every word
    unsigned char *slot_at(uint64_t i) const { return base + RA_Q_OFF_SLOTS + (size_t)(i & (cap - 1)) * slot; }
    uint32_t payload_cap() const { return (ll ? slot / 2 : slot) - RA_SLOT_HEADER_SIZE; }
};

static unsigned char *alloc_region(size_t n) {
    n = (n + RA_Q_REGION_ALIGN - 1) / RA_Q_REGION_ALIGN * RA_Q_REGION_ALIGN;
    unsigned char *b = (unsigned char *)aligned_alloc(RA_Q_REGION_ALIGN, n);
    if (!b) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memset(b, 0xA5, n);  // as the emulated driver's fresh memory
    return b;
}

// init_link is p2pqueue's initAt/format at start 0: magic invalidated first,
// the header cleared and written, tail and head released, magic last.
static region init_link(uint32_t cap, uint32_t slot, uint64_t id, bool ll = false) {
    region r;
    r.cap = cap;
    r.slot = slot;
    r.ll = ll;
    r.base = alloc_region((size_t)RA_Q_OFF_SLOTS + (size_t)cap * slot);
    unsigned char *b = r.base;
    st_rel32(b, RA_Q_OFF_MAGIC, 0);
    memset(b + 4, 0, RA_Q_OFF_SLOTS - 4);
    if (ll) memset(b + RA_Q_OFF_SLOTS, 0, (size_t)cap * slot);  // Init clears a flagged queue's slots
    uint16_t ver = ll ? RA_Q_VERSION_FLAGGED : RA_Q_VERSION;
    memcpy(b + RA_Q_OFF_VERSION, &ver, 2);
    put32(b + RA_Q_OFF_CAPACITY, cap);
    put32(b + RA_Q_OFF_SLOT_SIZE, slot);
    put64(b + RA_Q_OFF_LINK_ID, id);
    st_rel64(b, RA_Q_OFF_TAIL, 0);
    st_rel64(b, RA_Q_OFF_HEAD, 0);
    st_rel32(b, RA_Q_OFF_MAGIC, RA_Q_MAGIC);
    return r;
}

// ---- p2pqueue.Producer ------------------------------------------------------------
struct producer {
    region l;
    uint64_t tail = 0, head_cache = 0, bytes_in = 0, publishes = 0, full_waits = 0;

    // free: room for want, head re-read only when fewer look free.
    long long free_slots(uint32_t want) {
        uint64_t used = tail - head_cache;
        if (l.cap - used >= want) return (long long)(l.cap - used);
        uint64_t h = ld_acq64(l.base, RA_Q_OFF_HEAD);
        used = tail - h;
        if (used > l.cap) {
            fail("ingress: corrupt head %llu with tail %llu", (unsigned long long)h, (unsigned long long)tail);
            return -1;
        }
        head_cache = h;
        return (long long)(l.cap - used);
    }
    long long reserve(uint32_t n) {
        long long f = free_slots(n);
        if (f == 0) {
            full_waits++;
            st_rel64(l.base, RA_Q_OFF_FULL_WAITS, full_waits);
        }
        return f < (long long)n ? f : (long long)n;
    }
    unsigned char *slot(uint32_t i) { return l.slot_at(tail + i); }
    // put_ll, a flagged link (p2pqueue Link.encodeFlagged, as a device
    // producer may store it): logical slot s of n bytes into reserved slot
    // i, one relaxed 8-byte store per word, data | lap flag << 32, the
    // words in a rotated order (the first word not always first or last),
    // so the kernel must poll every word's flag.
    void put_ll(uint32_t i, const unsigned char *s, uint32_t n, uint32_t rot) {
        const uint64_t seq = tail + i, flag = (uint64_t)(((uint32_t)(seq / l.cap) << 1) | 1u) << 32;
        uint64_t *w = (uint64_t *)slot(i);
        const uint32_t nw = (n + 3) / 4;
        for (uint32_t x = 0; x < nw; x++) {
            const uint32_t j = (x + rot) % nw;
            uint32_t d = 0;
            memcpy(&d, s + 4 * j, 4 * j + 4 <= n ? 4 : n - 4 * j);
            __atomic_store_n(&w[j], flag | d, __ATOMIC_RELAXED);
        }
    }
    void publish(uint32_t k, uint64_t bytes) {
        tail += k;
        bytes_in += bytes;
        publishes++;
        st_rel64(l.base, RA_Q_OFF_BYTES_IN, bytes_in);
        st_rel64(l.base, RA_Q_OFF_PUBLISHES, publishes);
        st_rel64(l.base, RA_Q_OFF_TAIL, tail);  // release: the slots above are visible before tail
    }
    void close() { st_rel32(l.base, RA_Q_OFF_CLOSED, 1); }
};

// ---- p2pqueue.Consumer ------------------------------------------------------------
struct consumer {
    region l;
    const char *name = "";
    uint64_t head = 0, tail_cache = 0, bytes_out = 0, empty_polls = 0, releases = 0;
    bool corrupt = false;

    long long avail() {
        if (tail_cache != head) return (long long)(tail_cache - head);
        uint64_t t = ld_acq64(l.base, RA_Q_OFF_TAIL);  // acquire: slots up to tail are visible
        if (t - head > l.cap) {
            fail("%s: corrupt tail %llu with head %llu", name, (unsigned long long)t, (unsigned long long)head);
            corrupt = true;
            return -1;
        }
        tail_cache = t;
        return (long long)(t - head);
    }
    // peek: >0 messages, 0 empty, -1 closed and drained (or corrupt).
    long long peek(uint32_t n) {
        long long a = avail();
        if (a < 0) return -1;
        if (a == 0) {
            uint32_t c = ld_acq32(l.base, RA_Q_OFF_CLOSED);
            if (c == 0) {
                empty_polls++;
                st_rel64(l.base, RA_Q_OFF_EMPTY_POLLS, empty_polls);
                return 0;
            }
            if (c != 1) {
                fail("%s: closed flag %u", name, c);
                corrupt = true;
                return -1;
            }
            a = avail();
            if (a <= 0) return -1;
        }
        return a < (long long)n ? a : (long long)n;
    }
    const unsigned char *slot(uint32_t i) const { return l.slot_at(head + i); }
    void release(uint32_t k) {
        uint64_t bytes = 0;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t n = get32(slot(i) + RA_SLOT_OFF_LEN);
            bytes += n < l.payload_cap() ? n : l.payload_cap();
        }
        bytes_out += bytes;
        head += k;
        releases++;
        st_rel64(l.base, RA_Q_OFF_BYTES_OUT, bytes_out);
        st_rel64(l.base, RA_Q_OFF_RELEASES, releases);
        st_rel64(l.base, RA_Q_OFF_HEAD, head);  // release: done reading those slots
    }
};

// ---- cases -----------------------------------------------------------------------
enum end_mode { END_CLOSE, END_DRAIN, END_NODRAIN, END_STEAL, END_BARRIER };

struct tcase {
    const char *name, *op, *what;
    uint32_t nout, route;
    uint32_t in_slot, out_slot, in_cap, out_cap, trace_cap;
    int messages;
    int sample_every;  // id % k == 0: sampled (trace records)
    int bad_every;     // id % k == 0: not whole floats (float ops) or a float vector (typed ops)
    int big_every;     // id % k == 0: more floats than the out-slot holds (a stage error)
    end_mode end;
    float param;
    int state_floats;
    bool keyed;
    uint32_t steal_slot, steal_cap;  // END_STEAL: the steal link (0: none)
    uint32_t variant;                // the device loop (RA_ARG_OFF_VARIANT): 0 the block loop, RA_LOOP_WARP the warp loop
    bool ll;                         // the in-link is flagged (in_slot holds in_slot/2 logical bytes)
    bool ll_out;                     // the out-links are flagged, written by the kernel (out_slot holds out_slot/2)
};

static const tcase cases[] = {
    {"scale", "scale", "plain float op, sampled, dead letters (not floats, output too small), ingress closed", 1, RA_ROUTE_ONE,
     128, 64, 64, 64, 16, 3000, 7, 23, 31, END_CLOSE, 2.0f, 0, false},
    {"branch", "branch", "ported op, two out-links by RoutePort, sampled, not-floats dead letters", 2, RA_ROUTE_PORT,
     128, 128, 64, 32, 16, 3000, 5, 19, 0, END_CLOSE, 0.0f, 0, false},
    {"round-robin", "scale", "two out-links round-robin, dead letters take no turn", 2, RA_ROUTE_ROUND_ROBIN,
     128, 128, 32, 64, 32, 3000, 11, 13, 0, END_CLOSE, -0.5f, 0, false},
    {"keyed-scale", "keyed_scale", "typed op, wrong-type dead letters, sampled", 1, RA_ROUTE_ONE,
     128, 128, 64, 64, 32, 3000, 9, 17, 0, END_CLOSE, 3.0f, 0, true},
    {"keyed-count", "keyed_count", "stateful op (thread 0 only), counts checked in order", 1, RA_ROUTE_ONE,
     128, 128, 64, 64, 32, 3000, 13, 29, 0, END_CLOSE, 0.0f, 256, true},
    {"big-slot", "scale", "32 KiB+ slots (read in place, headers staged), sampled, dead letters", 1, RA_ROUTE_ONE,
     32832, 32832, 4, 8, 16, 300, 5, 7, 0, END_CLOSE, 0.25f, 0, false},
    {"drain", "scale", "TerminateDrain mid-stream, then ingress closed", 1, RA_ROUTE_ONE,
     128, 128, 64, 64, 1024, 3000, 7, 37, 0, END_DRAIN, 1.5f, 0, false},
    {"no-drain", "scale", "Deactivate, more queued, ingress closed, Terminate: shutdown dead letters", 1, RA_ROUTE_ONE,
     128, 128, 256, 64, 32, 1200, 3, 41, 0, END_NODRAIN, 4.0f, 0, false},
    {"steal", "scale", "CmdSteal (some while idle) as ingress feeds the victim and a thief drains the steal link, whose smaller slots make dead letters",
     1, RA_ROUTE_ONE, 128, 128, 64, 64, 4096, 3000, 7, 23, 0, END_STEAL, 2.0f, 0, false, 64, 16},
    {"barrier", "scale", "CmdBarrier: the kernel arrives once head reaches P, a host thread plays the other participant; phase 2 held till then", 1,
     RA_ROUTE_ONE, 128, 128, 512, 64, 32, 800, 7, 23, 0, END_BARRIER, 2.0f, 0, false},
    {"ll", "scale", "flagged in-link (FormatFlagged, words stored relaxed in rotated order, tail lazy), sampled, dead letters, ingress closed", 1,
     RA_ROUTE_ONE, 256, 64, 16, 64, 16, 3000, 7, 23, 31, END_CLOSE, 2.0f, 0, false, 0, 0, 0, true},
    // Flagged out-links written by the kernel (ra_ll.cuh: results as flagged words, no fence, the in-link's head lazy),
    // read by egress_ll as p2pqueue's flagged consumer: every word's flag polled, no word past a message.
    {"ll-out", "scale", "flagged in- and out-link (results written as flagged words, head lazy), sampled, dead letters, ingress closed", 1,
     RA_ROUTE_ONE, 256, 128, 16, 16, 16, 3000, 7, 23, 31, END_CLOSE, 2.0f, 0, false, 0, 0, 0, true, true},
    {"ll-round-robin", "scale", "flagged links, two flagged out-links round-robin (routed words), dead letters take no turn", 2,
     RA_ROUTE_ROUND_ROBIN, 256, 256, 32, 16, 32, 3000, 11, 13, 0, END_CLOSE, -0.5f, 0, false, 0, 0, 0, true, true},
    {"warp-ll-out", "scale", "warp loop: flagged in- and out-link, sampled, dead letters, ingress closed", 1,
     RA_ROUTE_ONE, 256, 128, 16, 16, 16, 3000, 7, 23, 31, END_CLOSE, 2.0f, 0, false, 0, 0, RA_LOOP_WARP, true, true},
    // The warp loop (ringkernel.LoopWarp, ra_warp.cuh): lanes meet at warp barriers, a watch lane reads the command seq
    // and beats, lane 0 polls alone with the backoff once idle; the same checks.
    {"warp-scale", "scale", "warp loop: plain float op, sampled, dead letters, ingress closed", 1, RA_ROUTE_ONE,
     128, 64, 64, 64, 16, 3000, 7, 23, 31, END_CLOSE, 2.0f, 0, false, 0, 0, RA_LOOP_WARP},
    {"warp-keyed-count", "keyed_count", "warp loop: stateful op (lane 0 only), counts checked in order", 1, RA_ROUTE_ONE,
     128, 128, 64, 64, 32, 3000, 13, 29, 0, END_CLOSE, 0.0f, 256, true, 0, 0, RA_LOOP_WARP},
    {"warp-no-drain", "scale", "warp loop: Deactivate, more queued, ingress closed, Terminate: shutdown dead letters", 1, RA_ROUTE_ONE,
     128, 128, 256, 64, 32, 1200, 3, 41, 0, END_NODRAIN, 4.0f, 0, false, 0, 0, RA_LOOP_WARP},
    {"warp-steal", "scale", "warp loop: CmdSteal (some while idle) as ingress feeds the victim and a thief drains the steal link",
     1, RA_ROUTE_ONE, 128, 128, 64, 64, 4096, 3000, 7, 23, 0, END_STEAL, 2.0f, 0, false, 64, 16, RA_LOOP_WARP},
    {"warp-barrier", "scale", "warp loop: CmdBarrier at P, phase 2 held till a host thread arrives", 1,
     RA_ROUTE_ONE, 128, 128, 512, 64, 32, 800, 7, 23, 0, END_BARRIER, 2.0f, 0, false, 0, 0, RA_LOOP_WARP},
    // The pipelined ingress (ringkernel.LoopWarpPrefetch, ra_warp.cuh): the warp loop with the next batch's slots
    // loaded into registers before this batch is processed and published; flagged ones speculatively.
    {"pf-scale", "scale", "pipelined ingress: plain float op, sampled, dead letters, ingress closed", 1, RA_ROUTE_ONE,
     128, 64, 64, 64, 16, 3000, 7, 23, 31, END_CLOSE, 2.0f, 0, false, 0, 0, RA_LOOP_WARP_PREFETCH},
    {"pf-keyed-count", "keyed_count", "pipelined ingress: stateful op (lane 0 only), counts checked in order", 1, RA_ROUTE_ONE,
     256, 128, 64, 64, 32, 3000, 13, 29, 0, END_CLOSE, 0.0f, 256, true, 0, 0, RA_LOOP_WARP_PREFETCH},
    {"pf-no-drain", "scale", "pipelined ingress: Deactivate, more queued, ingress closed, Terminate: shutdown dead letters", 1,
     RA_ROUTE_ONE, 128, 128, 256, 64, 32, 1200, 3, 41, 0, END_NODRAIN, 4.0f, 0, false, 0, 0, RA_LOOP_WARP_PREFETCH},
    {"pf-drain", "scale", "pipelined ingress: TerminateDrain mid-stream, then ingress closed", 1, RA_ROUTE_ONE,
     128, 128, 64, 64, 1024, 3000, 7, 37, 0, END_DRAIN, 1.5f, 0, false, 0, 0, RA_LOOP_WARP_PREFETCH},
    {"pf-steal", "scale", "pipelined ingress: CmdSteal (some while idle) as ingress feeds the victim and a thief drains the steal link",
     1, RA_ROUTE_ONE, 128, 128, 64, 64, 4096, 3000, 7, 23, 0, END_STEAL, 2.0f, 0, false, 64, 16, RA_LOOP_WARP_PREFETCH},
    {"pf-barrier", "scale", "pipelined ingress: CmdBarrier at P, phase 2 held till a host thread arrives", 1,
     RA_ROUTE_ONE, 128, 128, 512, 64, 32, 800, 7, 23, 0, END_BARRIER, 2.0f, 0, false, 0, 0, RA_LOOP_WARP_PREFETCH},
    {"pf-ll", "scale", "pipelined ingress, flagged in-link (words stored relaxed in rotated order): speculative loads, re-read words",
     1, RA_ROUTE_ONE, 256, 64, 64, 64, 16, 3000, 7, 23, 31, END_CLOSE, 2.0f, 0, false, 0, 0, RA_LOOP_WARP_PREFETCH, true},
};

static const uint32_t STAGE_ID = 7;

// The message of an id: its type, length, payload and flags, and what the
// stage must make of it.
struct msg {
    uint32_t type, len, flags;
    float f[8200];
    int code;  // expected dead-letter code, 0 when delivered
};

static float value(uint64_t id, uint32_t j) { return (float)((id * 7 + j * 3) % 1001) * 0.5f - 250.0f; }
static uint32_t key_of(uint64_t id) { return (uint32_t)((id * 2654435761ull) % 1000); }

static void make_msg(const tcase &c, uint64_t id, msg *m) {
    m->flags = c.sample_every && id % c.sample_every == 0 ? RA_FLAG_SAMPLED : 0;
    m->code = 0;
    const uint32_t in_cap = (c.ll ? c.in_slot / 2 : c.in_slot) - RA_SLOT_HEADER_SIZE, out_cap = (c.ll_out ? c.out_slot / 2 : c.out_slot) - RA_SLOT_HEADER_SIZE;
    if (c.keyed) {
        if (c.bad_every && id % c.bad_every == 0) {
            m->type = RA_TYPE_FLOATS;
            m->len = 8;
            m->f[0] = value(id, 0);
            m->f[1] = value(id, 1);
            m->code = RA_CODE_WRONG_TYPE;
            return;
        }
        m->type = RA_TYPE_KEYED;
        m->len = sizeof(ra_keyed);
        ra_keyed k;
        k.Key = key_of(id);
        k.Count = 0;
        for (int j = 0; j < 8; j++) k.Values[j] = value(id, j);
        memcpy(m->f, &k, sizeof k);
        return;
    }
    m->type = RA_TYPE_FLOATS;
    uint32_t n;
    if (in_cap > 32768) n = id % 3 == 0 ? 8000 - (uint32_t)(id % 100) : (uint32_t)(id % 40);
    else n = (uint32_t)(id % ((out_cap / 4) + 1));
    if (c.big_every && id % c.big_every == 0) {
        n = out_cap / 4 + 1 + (uint32_t)(id % 4);
        if (n > in_cap / 4) n = in_cap / 4;
        m->code = RA_CODE_OUTPUT_TOO_SMALL;
    }
    for (uint32_t j = 0; j < n; j++) m->f[j] = value(id, j);
    m->len = n * 4;
    if (c.bad_every && id % c.bad_every == 0) {
        m->len = n * 4 + 2;  // not whole floats
        if (m->len > in_cap) m->len = in_cap - 2;
        m->code = RA_CODE_NOT_FLOATS;
    }
}

// ---- one run ---------------------------------------------------------------------
struct run {
    const tcase &c;
    unsigned threads;
    int total;                  // messages the producer will send
    std::vector<int> expect;    // per id (1-based): expected code, 0 delivered
    std::vector<int> port;      // per id: expected out-link (RoutePort), -1 unknown
    std::vector<uint32_t> cnt;  // per id: keyed_count's expected Count
    std::vector<uint64_t> below;  // per count k of slots: the payload bytes of ids 1..k, as a consumer counts them
    std::vector<uint64_t> out_bytes;  // per out-link: the payload bytes its consumer counted
    std::vector<std::atomic<int> > delivered;  // per id: out-link + 1
    std::vector<std::atomic<int> > dead;       // per id: dead-letter code (nonzero once dead)
    std::vector<std::atomic<int> > traced;     // per id: trace records
    std::vector<std::atomic<int> > stolen;     // per id: seen on the steal link
    std::atomic<long long> n_delivered{0}, n_dead{0}, n_traced{0}, n_stage_errors{0}, n_stolen{0}, n_steals{0};
    std::atomic<long long> sent{0};
    std::atomic<bool> stop_status{false}, kernel_done{false};
    std::atomic<int> phase{0};  // producer/commander handshake
    uint64_t last_err_id = 0;  // pump: last dead letter through dead_letter (not a shutdown)
    int last_err_code = 0;

    unsigned char *ctrl = nullptr;
    region in, tr, steal;
    std::vector<region> outs;
    std::vector<float> params, state;
    unsigned char args[RA_ARG_SIZE];

    run(const tcase &tc, unsigned n) : c(tc), threads(n), total(tc.messages), expect(tc.messages + 1), port(tc.messages + 1, -1),
                                       cnt(tc.messages + 1), below(tc.messages + 1), out_bytes(tc.nout), delivered(tc.messages + 1),
                                       dead(tc.messages + 1), traced(tc.messages + 1), stolen(tc.messages + 1) {
        for (auto &v : stolen) v.store(0);
        for (auto &v : delivered) v.store(0);
        for (auto &v : dead) v.store(0);
        for (auto &v : traced) v.store(0);
        std::vector<uint32_t> counts(256, 0);
        msg *m = new msg;
        for (int id = 1; id <= total; id++) {
            make_msg(c, id, m);
            expect[id] = m->code;
            const uint32_t in_cap = (c.ll ? c.in_slot / 2 : c.in_slot) - RA_SLOT_HEADER_SIZE;
            below[id] = below[id - 1] + (m->len < in_cap ? m->len : in_cap);
            if (!m->code && c.route == RA_ROUTE_PORT) port[id] = m->len > 0 && m->f[0] >= c.param ? 1 : 0;
            if (!m->code && c.keyed) {
                ra_keyed k;
                memcpy(&k, m->f, sizeof k);
                cnt[id] = ++counts[k.Key % 256u];
            }
        }
        delete m;
    }

    // ringkernel.InitControlBlock: cleared, stage, state Launched, version, magic last.
    void init_ctrl() {
        ctrl = alloc_region(RA_CB_SIZE);
        memset(ctrl, 0, RA_CB_SIZE);
        st_rel32(ctrl, RA_CB_OFF_STAGE_ID, STAGE_ID);
        st_rel32(ctrl, RA_CB_OFF_STATE, RA_STATE_LAUNCHED);
        st_rel32(ctrl, 4, 1);  // version
        st_rel32(ctrl, 0, RA_CB_MAGIC);
    }

    // ringkernel/cuda's args: the argument block, little-endian words.
    void fill_args() {
        memset(args, 0, sizeof args);
        auto put = [&](unsigned off, uint64_t v) { put64(args + off, v); };
        auto put_u32 = [&](unsigned off, uint32_t v) { put32(args + off, v); };
        put(RA_ARG_OFF_CTRL, (uint64_t)(uintptr_t)ctrl);
        put(RA_ARG_OFF_IN, (uint64_t)(uintptr_t)in.base);
        put_u32(RA_ARG_OFF_NUM_IN, 1);
        put_u32(RA_ARG_OFF_IN_SYS, 1);
        put_u32(RA_ARG_OFF_IN_LL, c.ll ? 1 : 0);
        put(RA_ARG_OFF_TRACE, (uint64_t)(uintptr_t)tr.base);
        uint32_t out_sys = 0;
        for (uint32_t k = 0; k < outs.size(); k++) {
            put(RA_ARG_OFF_OUT + 8 * k, (uint64_t)(uintptr_t)outs[k].base);
            out_sys |= 1u << k;
        }
        put_u32(RA_ARG_OFF_OUT_SYS, out_sys);
        put_u32(RA_ARG_OFF_OUT_LL, c.ll_out ? out_sys : 0);
        put_u32(RA_ARG_OFF_NUM_OUT, (uint32_t)outs.size());
        put_u32(RA_ARG_OFF_ROUTE, c.route);
        put_u32(RA_ARG_OFF_KEY_OFFSET, 0);
        put_u32(RA_ARG_OFF_VARIANT, c.variant);
        params.assign(4, c.param);
        put(RA_ARG_OFF_PARAMS, (uint64_t)(uintptr_t)params.data());
        if (c.state_floats) {
            state.assign(c.state_floats, 0.0f);
            put(RA_ARG_OFF_STATE, (uint64_t)(uintptr_t)state.data());
        }
        if (c.steal_slot) {
            put(RA_ARG_OFF_STEAL, (uint64_t)(uintptr_t)steal.base);
            put_u32(RA_ARG_OFF_NUM_STEAL, 1);
            put_u32(RA_ARG_OFF_STEAL_SYS, 1);
        }
    }

    // ControlBlock.PostBarrier: CmdBarrier's words, then the command.
    bool post_barrier(unsigned char *bar, uint32_t me, uint32_t n, uint64_t gen, uint64_t at) {
        st_rel64(ctrl, RA_CB_OFF_BARRIER_FLAGS, (uint64_t)(uintptr_t)bar);
        st_rel32(ctrl, RA_CB_OFF_BARRIER_INDEX, me);
        st_rel32(ctrl, RA_CB_OFF_BARRIER_COUNT, n);
        st_rel64(ctrl, RA_CB_OFF_BARRIER_GEN, gen);
        st_rel64(ctrl, RA_CB_OFF_BARRIER_AT, at);
        st_rel32(ctrl, RA_CB_OFF_BARRIER_LINK, 0);
        return post(RA_CMD_BARRIER, RA_STATE_ACTIVE);
    }

    // The barrier case: phase 1 (ids 1..P), CmdBarrier at P, phase 2 sent at
    // once; the kernel must arrive (its word, a release) with head exactly P
    // and then take nothing, beating, until this thread arrives as the
    // other participant (package barrier's Init and Arrive).
    void barrier_case(producer &p, std::thread &prod) {
        const size_t size = RA_BAR_HEADER_SIZE + 2 * RA_BAR_LINE_SIZE;
        unsigned char *bar = alloc_region(size);
        memset(bar, 0, size);
        st_rel32(bar, RA_BAR_OFF_VERSION, RA_BAR_VERSION);
        st_rel32(bar, RA_BAR_OFF_PARTICIPANTS, 2);
        st_rel32(bar, RA_BAR_OFF_MAGIC, RA_BAR_MAGIC);
        const int P = total / 2;
        produce(p, 1, P);
        if (!post_barrier(bar, 0, 2, 1, P)) return;
        prod = std::thread([&p, this, P] { produce(p, P + 1, total); phase.store(1); });
        const uint64_t deadline = now_ns() + 20000000000ull;
        while (ld_acq64(bar, RA_BAR_HEADER_SIZE) != 1 && now_ns() < deadline && !failed()) sleep_us(20);
        if (ld_acq64(bar, RA_BAR_HEADER_SIZE) != 1) {
            fail("barrier: the kernel never arrived (head %llu, P %d)", (unsigned long long)ld_acq64(in.base, RA_Q_OFF_HEAD), P);
            return;
        }
        for (int beats = 0; beats < 3 && now_ns() < deadline && !failed();) {  // waiting, it beats
            const uint64_t hb = ld_acq64(ctrl, RA_CB_OFF_HEARTBEAT);
            while (ld_acq64(ctrl, RA_CB_OFF_HEARTBEAT) == hb && now_ns() < deadline) sleep_us(20);
            beats++;
        }
        while (phase.load() != 1 && now_ns() < deadline && !failed()) sleep_us(20);
        const uint64_t head = ld_acq64(in.base, RA_Q_OFF_HEAD);
        const uint64_t done = ld_acq64(ctrl, RA_CB_OFF_PROCESSED) + ld_acq64(ctrl, RA_CB_OFF_DROPPED);
        if (head != (uint64_t)P || done != (uint64_t)P)
            fail("barrier: at the barrier head %llu, processed + dropped %llu; want %d (phase 2 held back)", (unsigned long long)head, (unsigned long long)done, P);
        st_rel64(bar, RA_BAR_HEADER_SIZE + RA_BAR_LINE_SIZE, 1);  // the host arrives: the kernel goes on
        prod.join();
        p.close();
    }

    // ControlBlock.PostArg, then the wait for its ack (backoff 1 µs to 1 ms).
    bool post(uint32_t cmd, uint32_t want_state, uint64_t arg = 0) {
        uint32_t seq = ld_acq32(ctrl, RA_CB_OFF_COMMAND_SEQ) + 1;
        st_rel64(ctrl, RA_CB_OFF_COMMAND_ARG, arg);
        st_rel32(ctrl, RA_CB_OFF_COMMAND, cmd);
        st_rel32(ctrl, RA_CB_OFF_COMMAND_SEQ, seq);  // after the command: the kernel reads seq first
        unsigned us = 1;
        const uint64_t deadline = now_ns() + 20000000000ull;
        while (ld_acq32(ctrl, RA_CB_OFF_COMMAND_ACK) != seq) {
            if (kernel_done.load() || now_ns() > deadline) {
                fail("command %u: no ack (seq %u, ack %u, state %u)", cmd, seq, ld_acq32(ctrl, RA_CB_OFF_COMMAND_ACK), ld_acq32(ctrl, RA_CB_OFF_STATE));
                return false;
            }
            sleep_us(us);
            us = us < 1000 ? us * 2 : 1000;
        }
        uint32_t s = ld_acq32(ctrl, RA_CB_OFF_STATE);  // a host that sees its seq acked sees the new state
        if (want_state && s != want_state) {
            fail("command %u acked with state %u, want %u", cmd, s, want_state);
            return false;
        }
        return true;
    }

    // The ingress producer: batches of 1 to 16 from id from to to, with
    // pauses now and then so the kernel also goes idle.
    void produce(producer &p, int from, int to) {
        msg *m = new msg;
        unsigned char ll_buf[RA_SLOT_HEADER_SIZE + sizeof m->f];  // a flagged slot's logical bytes
        uint64_t rnd = 0x9E3779B97F4A7C15ull ^ (uint64_t)from;
        int id = from;
        unsigned waits = 0;
        while (id <= to && !failed()) {
            rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t want = 1 + (uint32_t)((rnd >> 33) % 16);
            if ((long long)want > to - id + 1) want = (uint32_t)(to - id + 1);
            long long k = p.reserve(want);
            if (k < 0) break;
            if (k == 0) {
                if (++waits % 64 == 0) sleep_us(20);
                else std::this_thread::yield();
                continue;
            }
            uint64_t bytes = 0;
            if (c.ll) sent.fetch_add(k);  // a flagged slot is published by its words, before tail
            for (long long i = 0; i < k; i++, id++) {
                make_msg(c, id, m);
                unsigned char *s = c.ll ? ll_buf : p.slot((uint32_t)i);
                put64(s + RA_SLOT_OFF_ID, id);
                put32(s + RA_SLOT_OFF_TYPE, m->type);
                put32(s + RA_SLOT_OFF_LEN, m->len);
                put32(s + RA_SLOT_OFF_FLAGS, m->flags);
                put32(s + RA_SLOT_OFF_ORIGIN, 0);
                put64(s + RA_SLOT_OFF_ENQUEUED, m->flags & RA_FLAG_SAMPLED ? now_ns() : 0);
                memcpy(s + RA_SLOT_HEADER_SIZE, m->f, m->len);
                if (c.ll) p.put_ll((uint32_t)i, s, RA_SLOT_HEADER_SIZE + m->len, (uint32_t)(id * 5));
                bytes += m->len;
            }
            p.publish((uint32_t)k, bytes);
            if (!c.ll) sent.fetch_add(k);
            if ((rnd >> 40) % 8 == 0) sleep_us(50);
        }
        delete m;
    }

    // The thief: the steal link's consumer, each stolen slot as it was sent
    // (in order: the victim takes them in order), a little slow now and
    // then so the link fills and a steal stops at a full link.
    void thief() {
        consumer q;
        q.l = steal;
        q.name = "steal link";
        msg *m = new msg;
        uint64_t last = 0;
        unsigned polls = 0;
        for (;;) {
            long long n = q.peek(8);
            if (n < 0) break;
            if (n == 0) {
                std::this_thread::yield();
                continue;
            }
            for (uint32_t i = 0; i < (uint32_t)n; i++) {
                const unsigned char *s = q.slot(i);
                const uint64_t id = get64(s + RA_SLOT_OFF_ID);
                if (id == 0 || id > (uint64_t)total || id <= last) {
                    fail("steal link: id %llu after %llu (sent 1..%d)", (unsigned long long)id, (unsigned long long)last, total);
                    continue;
                }
                last = id;
                if (stolen[id].exchange(1)) fail("message %llu stolen twice", (unsigned long long)id);
                n_stolen.fetch_add(1);
                make_msg(c, id, m);
                const uint32_t len = get32(s + RA_SLOT_OFF_LEN), flags = get32(s + RA_SLOT_OFF_FLAGS);
                const uint64_t enq = get64(s + RA_SLOT_OFF_ENQUEUED);
                if (get32(s + RA_SLOT_OFF_TYPE) != m->type || len != m->len || flags != m->flags || get32(s + RA_SLOT_OFF_ORIGIN) != 0 ||
                    ((flags & RA_FLAG_SAMPLED) ? enq == 0 : enq != 0) || len > steal.payload_cap() ||
                    memcmp(s + RA_SLOT_HEADER_SIZE, m->f, len & ~3u) != 0)  // the bytes past whole floats are not set
                    fail("stolen message %llu is not the message sent (len %u, flags %#x)", (unsigned long long)id, len, flags);
            }
            q.release((uint32_t)n);
            if (++polls % 8 == 0) sleep_us(200);
        }
        delete m;
    }

    // Kernel.Steal: CmdSteal for 1 to 40, then stolen read after the ack;
    // the trace ring holds a record of every message, so no command comes
    // while the kernel waits in ra_record (which would fault it, docs §4.1);
    // every other one with the kernel made idle first and something queued.
    // The steal link's tail (its only producer is the victim's steal)
    // must equal stolen after each ack.
    void steals() {
        uint64_t rnd = 12345, before = 0;
        while (phase.load() != 1 && !failed()) {
            rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
            const uint32_t n = 1 + (uint32_t)((rnd >> 33) % 40);
            const bool idle = (rnd >> 45) & 1;
            if (idle) {
                if (!post(RA_CMD_DEACTIVATE, RA_STATE_IDLE)) return;
                const uint64_t deadline = now_ns() + 20000000000ull;
                while (ld_acq64(in.base, RA_Q_OFF_TAIL) - ld_acq64(in.base, RA_Q_OFF_HEAD) < 8 && phase.load() != 1 && now_ns() < deadline) sleep_us(20);
            }
            if (!post(RA_CMD_STEAL, 0, n)) return;
            const uint64_t after = ld_acq64(ctrl, RA_CB_OFF_STOLEN), tail = ld_acq64(steal.base, RA_Q_OFF_TAIL);
            if (after < before || after - before > n) fail("steal of %u: stolen %llu -> %llu", n, (unsigned long long)before, (unsigned long long)after);
            if (tail != after) fail("steal of %u: stolen %llu, the steal link's tail %llu", n, (unsigned long long)after, (unsigned long long)tail);
            before = after;
            n_steals.fetch_add(1);
            if (idle && !post(RA_CMD_ACTIVATE, RA_STATE_ACTIVE)) return;
            sleep_us(100);
        }
        // A steal to a link it does not have moves nothing.
        if (post(RA_CMD_STEAL, 0, 5ull | 1ull << 32) && ld_acq64(ctrl, RA_CB_OFF_STOLEN) != before) fail("a steal to link 1 of 1 moved messages");
    }

    // One flagged out-link's consumer (p2pqueue's peekFlagged and gather):
    // a slot is there when its first word carries its lap's flag; each
    // other word it uses is polled until it does (the words land in any
    // order); the word after a message's last must not (the kernel writes
    // no word past a message); head released per batch, lazily as Go does.
    // Words are relaxed loads: each carries its own validity.
    void egress_ll(uint32_t d) {
        const region l = outs[d];
        char name[32];
        snprintf(name, sizeof name, "flagged out-link %u", d);
        const uint32_t nslot = l.slot / 8;
        auto word = [&](uint64_t seq, uint32_t j) { return __atomic_load_n((const uint64_t *)l.slot_at(seq) + j, __ATOMIC_RELAXED); };
        auto state = [&](uint64_t seq, uint64_t w) {
            const uint32_t want = ((uint32_t)(seq / l.cap) << 1) | 1u, f = (uint32_t)(w >> 32), back = (want - f) >> 1;
            if (f == want) return 1;
            return f == 0 || ((f & 1u) && back < (1u << 30)) ? 0 : -1;
        };
        // get: word j's data once it carries its flag; false on a foreign flag.
        auto get = [&](uint64_t seq, uint32_t j, uint32_t *v) {
            const uint64_t deadline = now_ns() + 20000000000ull;
            for (unsigned spins = 0;; spins++) {
                const uint64_t w = word(seq, j);
                const int st = state(seq, w);
                if (st == 1) { *v = (uint32_t)w; return true; }
                if (st < 0 || failed()) {
                    fail("%s: slot %llu word %u holds flag %#x", name, (unsigned long long)seq, j, (unsigned)(w >> 32));
                    return false;
                }
                if (spins % 1024 == 1023 && now_ns() > deadline) {
                    fail("%s: slot %llu word %u never landed (flag %#x)", name, (unsigned long long)seq, j, (unsigned)(w >> 32));
                    return false;
                }
                std::this_thread::yield();
            }
        };
        std::vector<unsigned char> buf(l.slot / 2 + 4);
        msg *m = new msg;
        uint64_t head = 0, bytes_out = 0, releases = 0, last = 0;
        bool closed = false;
        while (!failed()) {
            uint32_t k = 0;
            uint64_t bytes = 0;
            for (; k < 64 && k < l.cap; k++) {
                const uint64_t seq = head + k;
                const int st = state(seq, word(seq, 0));
                if (st < 0) fail("%s: slot %llu's first word holds a foreign flag", name, (unsigned long long)seq);
                if (st != 1) break;
                bool ok = true;
                for (uint32_t j = 0; ok && j < RA_SLOT_HEADER_SIZE / 4; j++) ok = get(seq, j, (uint32_t *)buf.data() + j);
                const uint32_t len = ok ? get32(buf.data() + RA_SLOT_OFF_LEN) : 0;
                if (ok && len > l.payload_cap()) {
                    fail("%s: slot %llu: length %u past the slot", name, (unsigned long long)seq, len);
                    ok = false;
                }
                const uint32_t nw = RA_SLOT_HEADER_SIZE / 4 + (len + 3) / 4;
                for (uint32_t j = RA_SLOT_HEADER_SIZE / 4; ok && j < nw; j++) ok = get(seq, j, (uint32_t *)buf.data() + j);
                if (!ok) break;
                if (nw < nslot && state(seq, word(seq, nw)) == 1)
                    fail("%s: slot %llu: word %u, past its %u-byte message, carries the lap's flag", name, (unsigned long long)seq, nw, len);
                check_result(d, buf.data(), m, &last);
                bytes += len;
            }
            if (k > 0) {
                head += k;
                bytes_out += bytes;
                releases++;
                st_rel64(l.base, RA_Q_OFF_BYTES_OUT, bytes_out);
                st_rel64(l.base, RA_Q_OFF_RELEASES, releases);
                st_rel64(l.base, RA_Q_OFF_HEAD, head);
                continue;
            }
            if (closed) break;  // closed, and the next slot polled once more after seeing it: drained
            const uint32_t c = ld_acq32(l.base, RA_Q_OFF_CLOSED);
            if (c == 1) closed = true;
            else if (c != 0) {
                fail("%s: closed flag %u", name, c);
                break;
            } else std::this_thread::yield();
        }
        out_bytes[d] = bytes_out;
        delete m;
    }

    // One out-link's consumer: every result checked against the op.
    void egress(uint32_t d) {
        consumer q;
        q.l = outs[d];
        char name[32];
        snprintf(name, sizeof name, "out-link %u", d);
        q.name = name;
        msg *m = new msg;
        uint64_t last = 0;
        for (;;) {
            long long n = q.peek(64);
            if (n < 0) break;
            if (n == 0) {
                std::this_thread::yield();
                continue;
            }
            for (uint32_t i = 0; i < (uint32_t)n; i++) check_result(d, q.slot(i), m, &last);
            q.release((uint32_t)n);
            // The kernel stores its counters before the tail we acquired.
            const uint64_t kb = ld_acq64(q.l.base, RA_Q_OFF_BYTES_IN), kp = ld_acq64(q.l.base, RA_Q_OFF_PUBLISHES);
            if (kb < q.bytes_out || kp == 0)
                fail("%s: kernel's bytes-in %llu and publishes %llu after tail; %llu bytes in %llu results consumed", name, (unsigned long long)kb,
                     (unsigned long long)kp, (unsigned long long)q.bytes_out, (unsigned long long)q.head);
        }
        out_bytes[d] = q.bytes_out;
        delete m;
    }

    void check_result(uint32_t d, const unsigned char *s, msg *m, uint64_t *last) {
        const uint64_t id = get64(s + RA_SLOT_OFF_ID);
        const uint32_t type = get32(s + RA_SLOT_OFF_TYPE), len = get32(s + RA_SLOT_OFF_LEN), flags = get32(s + RA_SLOT_OFF_FLAGS);
        const uint32_t origin = get32(s + RA_SLOT_OFF_ORIGIN);
        const uint64_t enq = get64(s + RA_SLOT_OFF_ENQUEUED);
        if (id == 0 || id > (uint64_t)total) {
            fail("out-link %u: result with id %llu (sent 1..%d)", d, (unsigned long long)id, total);
            return;
        }
        if (id <= *last) fail("out-link %u: id %llu after %llu: out of order", d, (unsigned long long)id, (unsigned long long)*last);
        *last = id;
        int prev = delivered[id].exchange((int)d + 1);
        if (prev) fail("message %llu delivered twice (out-links %d and %u)", (unsigned long long)id, prev - 1, d);
        n_delivered.fetch_add(1);
        if (expect[id]) fail("message %llu delivered, want dead letter %d", (unsigned long long)id, expect[id]);
        if (c.route == RA_ROUTE_PORT && port[id] != (int)d) fail("message %llu on out-link %u, its port is %d", (unsigned long long)id, d, port[id]);
        if (c.route == RA_ROUTE_ONE && d != 0) fail("message %llu on out-link %u", (unsigned long long)id, d);
        make_msg(c, id, m);
        if (origin != STAGE_ID) fail("message %llu: origin %u, want %u", (unsigned long long)id, origin, STAGE_ID);
        if (flags != m->flags) fail("message %llu: flags %#x, want %#x", (unsigned long long)id, flags, m->flags);
        if ((flags & RA_FLAG_SAMPLED) ? enq == 0 : enq != 0) fail("message %llu: enqueued %llu with flags %#x", (unsigned long long)id, (unsigned long long)enq, flags);
        if (type != m->type || len != m->len) {
            fail("message %llu: type %u len %u, want type %u len %u", (unsigned long long)id, type, len, m->type, m->len);
            return;
        }
        const unsigned char *p = s + RA_SLOT_HEADER_SIZE;
        if (c.keyed) {
            ra_keyed in, out;
            memcpy(&in, m->f, sizeof in);
            memcpy(&out, p, sizeof out);
            uint32_t want_count = strcmp(c.op, "keyed_count") == 0 ? cnt[id] : in.Count;
            bool ok = out.Key == in.Key && out.Count == want_count;
            for (int j = 0; j < 8; j++) ok = ok && out.Values[j] == (strcmp(c.op, "keyed_scale") == 0 ? in.Values[j] * c.param : in.Values[j]);
            if (!ok) fail("message %llu: key %u count %u, want key %u count %u (or its values differ)", (unsigned long long)id, out.Key, out.Count, in.Key, want_count);
            return;
        }
        const bool scales = strcmp(c.op, "scale") == 0;
        for (uint32_t j = 0; j < len / 4; j++) {
            float got, want = scales ? m->f[j] * c.param : m->f[j];
            memcpy(&got, p + 4 * j, 4);
            if (got != want) {
                fail("message %llu: element %u is %g, want %g", (unsigned long long)id, j, got, want);
                return;
            }
        }
    }

    // The trace pump: records 64 at a time, a little slower than the kernel.
    void pump() {
        consumer q;
        q.l = tr;
        q.name = "trace ring";
        unsigned idle = 0;
        for (;;) {
            long long n = q.peek(64);
            if (n < 0) break;
            if (n == 0) {
                std::this_thread::yield();
                continue;
            }
            for (uint32_t i = 0; i < (uint32_t)n; i++) check_record(q.slot(i));
            q.release((uint32_t)n);
            if (++idle % 4 == 0) sleep_us(100);  // let the ring fill: the kernel waits in ra_record
        }
    }

    uint32_t make_len(uint64_t id) {
        msg *m = new msg;
        make_msg(c, id, m);
        const uint32_t n = m->len;
        delete m;
        return n;
    }

    void check_record(const unsigned char *s) {
        const uint64_t id = get64(s + RA_SLOT_OFF_ID);
        const uint32_t kind = get32(s + RA_SLOT_OFF_TYPE), len = get32(s + RA_SLOT_OFF_LEN), flags = get32(s + RA_SLOT_OFF_FLAGS);
        const uint32_t origin = get32(s + RA_SLOT_OFF_ORIGIN);
        const unsigned char *p = s + RA_SLOT_HEADER_SIZE;
        const uint64_t deq = get64(p + RA_REC_OFF_DEQUEUED), done = get64(p + RA_REC_OFF_DONE);
        const int code = (int)get32(p + RA_REC_OFF_CODE);
        const uint32_t from = get32(p + RA_REC_OFF_FROM), text = get32(p + RA_REC_OFF_TEXT_LEN);
        if (kind == RA_REC_FAULT) {
            fail("fault record: code %d", code);
            return;
        }
        if (id == 0 || id > (uint64_t)total) {
            fail("record kind %u for id %llu (sent 1..%d)", kind, (unsigned long long)id, total);
            return;
        }
        if (len != RA_REC_OFF_TEXT || origin != STAGE_ID || from != 0 || text != 0)
            fail("record of %llu: len %u origin %u from %u text %u", (unsigned long long)id, len, origin, from, text);
        if (kind == RA_REC_TRACE) {
            if (!(flags & RA_FLAG_SAMPLED)) fail("trace record of unsampled message %llu", (unsigned long long)id);
            if (code != 0 || deq > done || deq == 0) fail("trace record of %llu: code %d dequeued %llu done %llu", (unsigned long long)id, code, (unsigned long long)deq, (unsigned long long)done);
            if (traced[id].fetch_add(1)) fail("two trace records of %llu", (unsigned long long)id);
            n_traced.fetch_add(1);
            return;
        }
        if (kind != RA_REC_DEAD_LETTER) {
            fail("record kind %u", kind);
            return;
        }
        const bool shutdown = code == RA_CODE_SHUTDOWN;
        // A stolen message the thief's slots cannot hold: RA_CODE_BAD_RESULT.
        const bool too_big = code == RA_CODE_BAD_RESULT && c.steal_slot && make_len(id) > c.steal_slot - RA_SLOT_HEADER_SIZE;
        if (shutdown ? c.end != END_NODRAIN : code != expect[id] && !too_big)
            fail("dead letter %llu: code %d, want %d", (unsigned long long)id, code, expect[id]);
        if (dead[id].exchange(code ? code : -100)) fail("message %llu dead-lettered twice", (unsigned long long)id);
        n_dead.fetch_add(1);
        if (code == RA_CODE_OUTPUT_TOO_SMALL || code == RA_CODE_BAD_RESULT) n_stage_errors.fetch_add(1);
        if (!shutdown) {
            last_err_id = id;
            last_err_code = code;
        }
    }

    // ringkernel.Status in a loop: counters, then the links; and head, then
    // the counters: every message below head is counted.
    void status() {
        uint64_t pp = 0, pd = 0, pt = 0, pe = 0, pb = 0;
        while (!stop_status.load()) {
            const uint64_t head = ld_acq64(in.base, RA_Q_OFF_HEAD);
            const uint64_t processed = ld_acq64(ctrl, RA_CB_OFF_PROCESSED), dropped = ld_acq64(ctrl, RA_CB_OFF_DROPPED);
            const uint64_t errors = ld_acq64(ctrl, RA_CB_OFF_ERRORS), traced_n = ld_acq64(ctrl, RA_CB_OFF_TRACED);
            const uint64_t stolen_n = ld_acq64(ctrl, RA_CB_OFF_STOLEN);
            (void)ld_acq64(ctrl, RA_CB_OFF_HEARTBEAT);
            const uint64_t busy = ld_acq64(ctrl, RA_CB_OFF_BUSY);
            const int32_t le = ld_seqcst_i32(ctrl, RA_CB_OFF_LAST_ERROR);
            const uint64_t lid = ld_acq64(ctrl, RA_CB_OFF_LAST_ERROR_ID);
            const uint32_t st = ld_acq32(ctrl, RA_CB_OFF_STATE);
            (void)ld_acq32(ctrl, RA_CB_OFF_COMMAND_ACK);
            // A flagged in-link's tail is lazy (slots are published by their
            // words): bound by the messages written instead.
            const uint64_t t = c.ll ? (uint64_t)sent.load() : ld_acq64(in.base, RA_Q_OFF_TAIL);
            const uint64_t head2 = ld_acq64(in.base, RA_Q_OFF_HEAD);
            const uint64_t bytes_out = ld_acq64(in.base, RA_Q_OFF_BYTES_OUT), releases = ld_acq64(in.base, RA_Q_OFF_RELEASES);
            if (head2 <= (uint64_t)total && (bytes_out < below[head2] || (head2 > 0 && releases == 0)))
                fail("status: in head %llu, then bytes-out %llu (want at least %llu) and releases %llu", (unsigned long long)head2,
                     (unsigned long long)bytes_out, (unsigned long long)below[head2], (unsigned long long)releases);
            if (busy < pb) fail("status: busy went back");
            pb = busy;
            for (auto &o : outs) {
                (void)ld_acq64(o.base, RA_Q_OFF_TAIL);
                (void)ld_acq64(o.base, RA_Q_OFF_HEAD);
            }
            (void)ld_acq64(tr.base, RA_Q_OFF_TAIL);
            if (processed < pp || dropped < pd || traced_n < pt || errors < pe) fail("status: a counter went back");
            pp = processed, pd = dropped, pt = traced_n, pe = errors;
            if (processed + dropped + stolen_n > (uint64_t)total || processed + dropped + stolen_n > t)
                fail("status: processed %llu + dropped %llu + stolen %llu > sent %llu", (unsigned long long)processed, (unsigned long long)dropped,
                     (unsigned long long)stolen_n, (unsigned long long)t);
            if (processed + dropped + stolen_n < head)
                fail("status: head %llu read before the counters, processed %llu + dropped %llu + stolen %llu below it", (unsigned long long)head,
                     (unsigned long long)processed, (unsigned long long)dropped, (unsigned long long)stolen_n);
            if (errors > dropped) fail("status: errors %llu > dropped %llu", (unsigned long long)errors, (unsigned long long)dropped);
            if (le != 0 && (le > 0 || le < RA_CODE_WRONG_TYPE)) fail("status: last error %d", le);
            if (lid > (uint64_t)total) fail("status: last error id %llu", (unsigned long long)lid);
            if (st < RA_STATE_LAUNCHED || st > RA_STATE_TERMINATED) {
                fail("status: state %u (%s)", st, st == RA_STATE_FAULTED ? "FAULTED" : "not a state");
                break;
            }
            sleep_us(30);
        }
    }

    int go() {
        init_ctrl();
        in = init_link(c.in_cap, c.in_slot, 1, c.ll);
        for (uint32_t d = 0; d < c.nout; d++) outs.push_back(init_link(c.out_cap, c.out_slot, 10 + d, c.ll_out));
        tr = init_link(c.trace_cap, RA_TRACE_SLOT_SIZE, 100);
        if (c.steal_slot) steal = init_link(c.steal_cap, c.steal_slot, 200);
        fill_args();
        const tsan_op *op = nullptr;
        for (const tsan_op *o = tsan_ops; o->name; o++)
            if (strcmp(o->name, c.op) == 0) op = o;
        if (!op) {
            fprintf(stderr, "op %s is not built into this harness\n", c.op);
            return 2;
        }
        st_rel64(ctrl, RA_CB_OFF_CLOCK_OFFSET, 0);
        const uint64_t t0 = now_ns();

        std::thread kernel([&] {
            void *p[1] = {args};
            ra_host_run_grid({1, 1, 1}, {threads, 1, 1}, op->fn, p, nullptr);
            kernel_done.store(true);
        });
        std::vector<std::thread> hosts;
        for (uint32_t d = 0; d < c.nout; d++) hosts.emplace_back([this, d] { if (c.ll_out) egress_ll(d); else egress(d); });
        hosts.emplace_back([this] { pump(); });
        if (c.steal_slot) hosts.emplace_back([this] { thief(); });
        std::thread st([this] { status(); });

        producer p;
        p.l = in;
        std::thread prod;
        int queued_after_deactivate = 0;
        if (post(RA_CMD_ACTIVATE, RA_STATE_ACTIVE)) {
            switch (c.end) {
            case END_CLOSE:
                prod = std::thread([&] { produce(p, 1, total); p.close(); });
                break;
            case END_STEAL:
                // Ingress closed only after the last steal is acked: the
                // kernel then ends by itself and closes the steal link.
                prod = std::thread([&] { produce(p, 1, total); phase.store(1); });
                steals();
                prod.join();
                p.close();
                break;
            case END_DRAIN:
                prod = std::thread([&] {
                    produce(p, 1, total / 2);
                    phase.store(1);
                    while (phase.load() != 2 && !failed()) sleep_us(10);
                    produce(p, total / 2 + 1, total);
                    p.close();
                });
                while (phase.load() != 1 && !failed()) sleep_us(10);
                post(RA_CMD_TERMINATE_DRAIN, RA_STATE_TERMINATING);
                phase.store(2);
                break;
            case END_BARRIER:
                barrier_case(p, prod);
                break;
            case END_NODRAIN: {
                // The first part processed, the kernel made idle, the rest
                // queued (no more than the link holds), ingress closed, then
                // Terminate: the rest must come back as shutdown dead letters.
                // Deactivate only once the kernel has written the first
                // part's trace records (traced is stored after them): a
                // command posted while ra_record waits for room in the
                // trace ring faults the kernel (docs §4.1, "Trace ring full").
                const int first = total - (int)c.in_cap + 8;
                uint64_t want_traced = 0;
                for (int id = 1; id <= first; id++) want_traced += !expect[id] && c.sample_every && id % c.sample_every == 0;
                produce(p, 1, first);
                const uint64_t deadline = now_ns() + 20000000000ull;
                while ((ld_acq64(in.base, RA_Q_OFF_HEAD) != (uint64_t)first || ld_acq64(ctrl, RA_CB_OFF_TRACED) != want_traced) &&
                       now_ns() < deadline && !failed())
                    sleep_us(20);
                if (post(RA_CMD_DEACTIVATE, RA_STATE_IDLE)) {
                    produce(p, first + 1, total);
                    queued_after_deactivate = total - first;
                    p.close();
                    post(RA_CMD_TERMINATE, RA_STATE_TERMINATING);
                }
                break;
            }
            }
        }
        // The clock offset, rewritten as the backend's recalibration does,
        // until the kernel ends (or hangs).
        const uint64_t deadline = now_ns() + 60000000000ull;
        while (!kernel_done.load()) {
            st_rel64(ctrl, RA_CB_OFF_CLOCK_OFFSET, 0);
            if (now_ns() > deadline) {
                fprintf(stderr, "HUNG: %s at %u threads: state %u, in head %llu tail %llu, processed %llu dropped %llu, sent %lld\n", c.name,
                        threads, ld_acq32(ctrl, RA_CB_OFF_STATE), (unsigned long long)ld_acq64(in.base, RA_Q_OFF_HEAD),
                        (unsigned long long)ld_acq64(in.base, RA_Q_OFF_TAIL), (unsigned long long)ld_acq64(ctrl, RA_CB_OFF_PROCESSED),
                        (unsigned long long)ld_acq64(ctrl, RA_CB_OFF_DROPPED), sent.load());
                fflush(stderr);
                _exit(3);
            }
            sleep_us(500);
        }
        kernel.join();
        if (prod.joinable()) prod.join();
        for (auto &h : hosts) h.join();
        stop_status.store(true);
        st.join();
        const double secs = (double)(now_ns() - t0) / 1e9;
        return check(queued_after_deactivate, secs);
    }

    int check(int queued_after_deactivate, double secs) {
        const uint32_t state_now = ld_acq32(ctrl, RA_CB_OFF_STATE);
        const uint64_t processed = ld_acq64(ctrl, RA_CB_OFF_PROCESSED), dropped = ld_acq64(ctrl, RA_CB_OFF_DROPPED);
        const uint64_t errors = ld_acq64(ctrl, RA_CB_OFF_ERRORS), traced_n = ld_acq64(ctrl, RA_CB_OFF_TRACED);
        const uint64_t stolen_n = ld_acq64(ctrl, RA_CB_OFF_STOLEN);
        const int32_t le = ld_seqcst_i32(ctrl, RA_CB_OFF_LAST_ERROR);
        const uint64_t lid = ld_acq64(ctrl, RA_CB_OFF_LAST_ERROR_ID);
        const long long s = sent.load();
        if (state_now != RA_STATE_TERMINATED) fail("final state %u, want TERMINATED (%u)", state_now, RA_STATE_TERMINATED);
        if (s != total) fail("sent %lld of %d", s, total);
        long long shutdown = 0, want_traces = 0;
        for (int id = 1; id <= s; id++) {
            const int d = delivered[id].load(), code = dead[id].load(), st = stolen[id].load();
            if ((d != 0) + (code != 0) + st != 1) fail("message %d: delivered %d, dead-lettered %d, stolen %d: want exactly one", id, d, code, st);
            if (code == RA_CODE_SHUTDOWN) shutdown++;
            if (!expect[id] && code && code != RA_CODE_SHUTDOWN && code != RA_CODE_BAD_RESULT) fail("message %d dead-lettered (%d), want delivered", id, code);
            if (d && c.sample_every && id % c.sample_every == 0) want_traces++;
            if (traced[id].load() && !d) fail("trace record of %d, not delivered", id);
        }
        if (c.route == RA_ROUTE_ROUND_ROBIN) {
            long long k = 0;
            for (int id = 1; id <= s; id++) {
                const int d = delivered[id].load();
                if (!d) continue;
                if (d - 1 != (int)(k % c.nout)) fail("round-robin: message %d (result %lld) on out-link %d, want %lld", id, k, d - 1, k % c.nout);
                k++;
            }
        }
        if (processed != (uint64_t)n_delivered.load()) fail("processed %llu, delivered %lld", (unsigned long long)processed, n_delivered.load());
        if (dropped != (uint64_t)n_dead.load()) fail("dropped %llu, dead letters %lld", (unsigned long long)dropped, n_dead.load());
        if (processed + dropped + stolen_n != (uint64_t)s)
            fail("processed %llu + dropped %llu + stolen %llu != sent %lld", (unsigned long long)processed, (unsigned long long)dropped, (unsigned long long)stolen_n, s);
        if (stolen_n != (uint64_t)n_stolen.load()) fail("stolen %llu, on the steal link %lld", (unsigned long long)stolen_n, n_stolen.load());
        if (c.steal_slot && (n_stolen.load() == 0 || n_steals.load() == 0)) fail("nothing stolen in %lld steals", n_steals.load());
        if (c.steal_slot && ld_acq32(steal.base, RA_Q_OFF_CLOSED) != 1) fail("the steal link was not closed");
        if (errors != (uint64_t)n_stage_errors.load()) fail("errors %llu, stage-error dead letters %lld", (unsigned long long)errors, n_stage_errors.load());
        if (traced_n != (uint64_t)n_traced.load() || n_traced.load() != want_traces)
            fail("traced %llu, trace records %lld, sampled and delivered %lld", (unsigned long long)traced_n, n_traced.load(), want_traces);
        if (le != last_err_code || lid != last_err_id)
            fail("last error %d id %llu, the last dead letter's %d id %llu", le, (unsigned long long)lid, last_err_code, (unsigned long long)last_err_id);
        if (c.end == END_NODRAIN && shutdown != queued_after_deactivate)
            fail("shutdown dead letters %lld, want the %d queued while idle", shutdown, queued_after_deactivate);
        if (ld_acq64(in.base, RA_Q_OFF_HEAD) != (uint64_t)s) fail("in head %llu, sent %lld", (unsigned long long)ld_acq64(in.base, RA_Q_OFF_HEAD), s);
        // The link counters the kernel keeps, as p2pqueue's Producer and
        // Consumer do: every payload byte it consumed (the producer's
        // count), every result byte it published (each consumer's count),
        // one index store per batch; and its busy time.
        const uint64_t in_bytes = ld_acq64(in.base, RA_Q_OFF_BYTES_OUT), in_rel = ld_acq64(in.base, RA_Q_OFF_RELEASES);
        if (in_bytes != ld_acq64(in.base, RA_Q_OFF_BYTES_IN) || in_bytes != below[s] || in_rel == 0 || in_rel > (uint64_t)s)
            fail("in-link: kernel's bytes-out %llu and releases %llu; the producer published %llu bytes (%llu by the messages) in %lld",
                 (unsigned long long)in_bytes, (unsigned long long)in_rel, (unsigned long long)ld_acq64(in.base, RA_Q_OFF_BYTES_IN),
                 (unsigned long long)below[s], s);
        uint64_t all_out = 0;
        for (uint32_t d = 0; d < outs.size(); d++) {
            const uint64_t b = ld_acq64(outs[d].base, RA_Q_OFF_BYTES_IN), pubs = ld_acq64(outs[d].base, RA_Q_OFF_PUBLISHES);
            const uint64_t tail = ld_acq64(outs[d].base, RA_Q_OFF_TAIL);
            all_out += b;
            if (b != out_bytes[d] || b != ld_acq64(outs[d].base, RA_Q_OFF_BYTES_OUT) || (tail > 0) != (pubs > 0) || pubs > tail)
                fail("out-link %u: kernel's bytes-in %llu and publishes %llu for %llu results; its consumer counted %llu bytes", d,
                     (unsigned long long)b, (unsigned long long)pubs, (unsigned long long)tail, (unsigned long long)out_bytes[d]);
        }
        if (n_delivered.load() > 0 && all_out == 0) fail("no result bytes counted for %lld results", n_delivered.load());
        if (processed > 0 && ld_acq64(ctrl, RA_CB_OFF_BUSY) == 0) fail("busy 0 after %llu messages", (unsigned long long)processed);
        if (failed()) return 1;
        printf("ok messages=%lld delivered=%lld dead=%lld shutdown=%lld traced=%lld stolen=%lld steals=%lld bytes_in=%llu bytes_out=%llu busy=%.3fms loop=%.2fs\n", s,
               n_delivered.load(), n_dead.load(), shutdown, n_traced.load(), n_stolen.load(), n_steals.load(), (unsigned long long)in_bytes,
               (unsigned long long)all_out, (double)ld_acq64(ctrl, RA_CB_OFF_BUSY) / 1e6, secs);
        return 0;
    }
};

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "-list") == 0) {
        for (const tcase &c : cases) printf("%s\t%s\t%s\n", c.name, c.op, c.what);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s CASE THREADS | -list\n", argv[0]);
        return 2;
    }
    const unsigned n = (unsigned)atoi(argv[2]);
    for (const tcase &c : cases) {
        if (strcmp(c.name, argv[1]) != 0) continue;
        if (n < 1 || n > ra_host_thread_cap()) {
            fprintf(stderr, "threads %u: want 1 to %u (RINGACTOR_EMU_THREADS)\n", n, ra_host_thread_cap());
            return 2;
        }
        run *r = new run(c, n);
        return r->go();
    }
    fprintf(stderr, "unknown case %s (-list lists them)\n", argv[1]);
    return 2;
}
