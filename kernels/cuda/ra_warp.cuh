// ra_warp.cuh: the warp loop, ringkernel.LoopWarp (Spec.Variant; the
// argument block's RA_ARG_OFF_VARIANT), included by ringactor.cuh.
// EXPERIMENTAL until a GPU has measured it against the block loop
// (docs/ARCHITECTURE.md §4.1).
//
// The block loop (ra_ring_loop) crosses four __syncthreads per batch and
// sleeps between polls; its polling thread also reads the command word,
// the clock offset and writes the heartbeat itself. The warp loop runs
// the same phases (ra_loop's methods) on warp 0 alone:
//   - Lane 0 is the only agent on the links, as thread 0 is in the block
//     loop: each step it publishes the last batch (bottom), applies a
//     command the watch lane saw, takes a barrier round, and picks up to
//     RA_WARP_LANES messages. Lane i stages and processes message i (i +
//     lanes, ... when the block has fewer than 32 threads), and the lanes
//     meet at __syncwarp only: no block barrier, no sleep while messages
//     come.
//   - The watch lane (the warp's last) issues a relaxed load of the command
//     seq at the start of every step and waits for it only after lane 0's
//     poll (the load overlaps it), and writes the heartbeat (re-reading the
//     clock offset) every RA_BEAT_NS. Lane 0 takes both at the step's
//     warp barrier and applies a command at the next step, before its pick:
//     with an acquire of seq of its own, then ra_loop::command, so a command
//     waits one step (the block loop: up to eight rounds, or a beat).
//   - Idle: RA_WARP_SPINS empty polls, each a warp step, then lane 0 falls
//     back to the block loop's poll (ra_loop::top: commands, beat and the
//     idle backoff, lane 0 alone) while the other lanes wait at the warp
//     barrier; the first batch brings the warp back.
//   - The block's other warps (threads 32 and up) return at once and take
//     no part: the stage runs on 32 lanes, a batch is at most 32 messages.
//     The launch keeps the block size (Options.Threads), so the two
//     variants reserve the same co-residency budget.
#ifndef RA_WARP_CUH
#define RA_WARP_CUH

#define RA_WARP_LANES 32u
// Empty polls before an idle warp loop falls back to the backoff.
#define RA_WARP_SPINS 64u

// ra_warp_sync is the barrier of the warp loop's lanes (the first lanes of
// warp 0). In the host build the block's other threads have returned from
// the kernel, where they count as arrived, so the block's barrier is the
// warp's; it is its own function (not __syncthreads) so that the emulated
// driver can tell the two apart.
#if defined(RA_HOST)
__device__ __forceinline__ void ra_warp_sync(ra_u32 lanes) {
    (void)lanes;
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
#else
__device__ __forceinline__ void ra_warp_sync(ra_u32 lanes) { __syncwarp(lanes >= 32u ? 0xffffffffu : (1u << lanes) - 1u); }
#endif

// What the watch lane hands lane 0 at a step's warp barrier (RA_SHARED).
struct ra_warp_shared {
    ra_u64 clk;   // the clock offset read at the watch lane's last beat
    ra_u32 seq;   // the command seq the watch lane read this step
    ra_u32 beat;  // set at a beat, cleared by lane 0 when it takes clk
};

template <typename STAGE> struct ra_loop;

// ra_warp_top, lane 0: the part of a warp step before its barrier: the last
// batch's publish, a command the watch lane saw (seen), a barrier round,
// one poll of the in-links (at most RA_WARP_LANES messages). No sleep.
template <typename STAGE>
__device__ __forceinline__ void ra_warp_top(ra_loop<STAGE> &L, ra_u32 seen) {
    ra_loop_shared &s = L.s;
    if (s.n) {
        L.bottom();
        s.n = 0;
    }
    if (s.stop) return;
    if (seen != s.ack) L.command(ra_load_acquire_sys32((const ra_u32 *)(L.ctrl + RA_CB_OFF_COMMAND_SEQ)));
    if (L.barrier_held()) return;  // at a barrier: no message until all arrive
    if (s.life == RA_STATE_TERMINATING && !s.drain) L.dead_letter_queued();
    else if (s.life == RA_STATE_ACTIVE || (s.life == RA_STATE_TERMINATING && s.drain)) L.pick();
    if (s.n > RA_WARP_LANES) s.n = RA_WARP_LANES;
}

// ra_warp_loop is the warp loop: ra_ring_loop's step on warp 0's lanes,
// which meet at ra_warp_sync only. Shared state is written by lane 0
// before a warp barrier and read by the others after it, as in the block
// loop; the watch lane writes only w, which lane 0 reads after the barrier.
template <typename STAGE>
__device__ void ra_warp_loop(ra_loop_shared &sh, const ra_ring_args &a) {
    if (threadIdx.x >= RA_WARP_LANES) return;  // the block's other warps take no part
    RA_SHARED(ra_warp_shared, w);
    ra_loop<STAGE> L(sh, a);
    const ra_u32 lanes = blockDim.x < RA_WARP_LANES ? blockDim.x : RA_WARP_LANES;
    const ra_u32 lane = threadIdx.x, watch = lanes - 1;
    L.nthr = lanes;
    L.warp = true;
    ra_u32 seen = 0;   // lane 0's: the seq the watch lane saw
    ra_u32 spins = 0;  // empty steps in a row, the same on every lane
    bool picked = false;         // lane 0's: the idle poll (ra_loop::top) picked a batch
    if (lane == 0) {
        L.attach(a);
        seen = sh.ack;
        w.seq = sh.ack;
        w.clk = sh.clk;
        w.beat = 0;
    }
    ra_warp_sync(lanes);
    for (;;) {
        // The watch lane's load is issued first and waited for last.
        ra_u32 q = 0;
        if (lane == watch) q = ra_load_relaxed_sys32((const ra_u32 *)(L.ctrl + RA_CB_OFF_COMMAND_SEQ));
        if (lane == 0 && !picked) ra_warp_top(L, seen);
        if (lane == watch) {
            w.seq = q;
            if (L.heartbeat(false, &w.clk)) w.beat = 1;
        }
        ra_warp_sync(lanes);
        if (sh.stop) break;
#if defined(RA_HOST)
        if (lane == 0) ra_host_ledger_fold(sh.n == 0);  // the emulator's ledger: a polling round ends
#endif
        if (lane == 0) {
            picked = false;
            seen = w.seq;
            if (w.beat) {
                sh.clk = w.clk;
                w.beat = 0;
            }
        }
        if (sh.n == 0) {  // idle: spin, then lane 0 polls alone with the backoff
            if (++spins > RA_WARP_SPINS) {  // every lane counts the same empty steps
                ra_warp_sync(lanes);        // every lane has read n and stop
                if (lane == 0) {
                    L.top();  // s.n is 0: commands, beats, picks, backs off
                    if (sh.n > RA_WARP_LANES) sh.n = RA_WARP_LANES;
                    picked = sh.n != 0;
                }
            }
            // n read before lane 0 writes it again. A stop the idle poll set
            // is read after the next step's barrier (that step's lane 0 does
            // nothing then): read here, lane 0 could write it meanwhile.
            ra_warp_sync(lanes);
            continue;
        }
        spins = 0;
        if (lane == 0) {
            L.ns = 0;
            sh.deq = ra_globaltimer() + sh.clk;
        }
        L.stage_in();  // ends with a warp barrier
        L.process();
        ra_warp_sync(lanes);
        L.headers();  // ends with one when it writes any
    }
    if (lane == 0) L.finish();
}

#endif // RA_WARP_CUH
