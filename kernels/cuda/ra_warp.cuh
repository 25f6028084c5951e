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

// ra_warp_bottom, lane 0: the last batch's publish (and its phase timer).
template <typename STAGE>
__device__ __forceinline__ void ra_warp_bottom(ra_loop<STAGE> &L) {
    if (L.s.n) {
        L.bottom();
        L.ph.mark(RA_PHASE_PUBLISH);
        L.s.n = 0;
    }
}

// ra_warp_pick, lane 0: a command the watch lane saw (seen), a barrier
// round, one poll of the in-links (at most RA_WARP_LANES messages). No
// sleep. The poll's phase timer runs from here to the caller's taken.
template <typename STAGE>
__device__ __forceinline__ void ra_warp_pick(ra_loop<STAGE> &L, ra_u32 seen) {
    ra_loop_shared &s = L.s;
    if (s.stop) return;
    L.ph.start();
    if (seen != s.ack) L.command(ra_load_acquire_sys32((const ra_u32 *)(L.ctrl + RA_CB_OFF_COMMAND_SEQ)));
    if (L.barrier_held()) return;  // at a barrier: no message until all arrive
    if (s.life == RA_STATE_TERMINATING && !s.drain) L.dead_letter_queued();
    else if (s.life == RA_STATE_ACTIVE || (s.life == RA_STATE_TERMINATING && s.drain)) L.pick();
    if (s.n > RA_WARP_LANES) s.n = RA_WARP_LANES;
}

// ra_warp_top, lane 0: the part of a warp step before its barrier.
template <typename STAGE>
__device__ __forceinline__ void ra_warp_top(ra_loop<STAGE> &L, ra_u32 seen) {
    ra_warp_bottom(L);
    ra_warp_pick(L, seen);
    L.ph.taken(L.s.n);
}

// ---- the pipelined ingress (ringkernel.LoopWarpPrefetch) ---------------
// EXPERIMENTAL until a GPU has measured it (ARCHITECTURE §4.1). The warp
// loop with the next batch's loads issued before this batch is processed
// and published, so their round trip over PCIe overlaps the stage and the
// publish:
//   - After batch k is staged, lane 0 looks ahead (ra_pf_poll) on the
//     in-link pick will try first, from the slot after batch k: an indexed
//     link's tail (the cached one, else one acquire load), so the slots it
//     names are published; a flagged link is not polled at all, its next
//     slots are loaded speculatively, each word carrying its own validity.
//     Only where more is known queued past batch k, or batch k was as big
//     as a look-ahead: behind a smaller batch the link has drained (the
//     latency case) and the step is the warp loop's, with no extra load.
//   - After a warp barrier every lane loads its share of those slots,
//     8-byte words, into registers (ra_pf_load: at most RA_PF_WORDS each,
//     so a batch of big slots is cut, slots past that are never
//     prefetched), then the step goes on: the stage, the headers, and
//     lane 0's publish of batch k (bottom: head moves past batch k only).
//   - Then (ra_pf_ok) each lane checks the lap flags of the first words it
//     loaded (flagged links) into pf.ok, and lane 0, after a barrier, takes
//     a command, a barrier round and its pick as the warp loop does; a
//     batch that starts on the prefetched link at the prefetched slot is
//     cut to the prefetched (and, flagged, valid) slots and staged from
//     the registers (ra_pf_stage: a flagged word whose flag was not yet
//     there, or not at all, is loaded again as ra_ll_get does). Anything
//     else, a command, a steal, a barrier, a terminate, a pick elsewhere,
//     is simply re-staged from the link: the look-ahead never moves own or
//     head (an indexed look-ahead may move the tail cache, other, as a
//     poll does; a flagged one the count of slots known written from own),
//     so no batch is ever half taken, and every slot is read before its
//     head is published.
#define RA_PF_WORDS 16u  // 8-byte words each lane holds of the next batch
// The register loops unrolled, so r[] stays in registers (the host build's compiler has no such pragma).
#if defined(RA_HOST)
#define RA_PF_UNROLL
#else
#define RA_PF_UNROLL _Pragma("unroll")
#endif

// The look-ahead, lane 0 writes it before a warp barrier, the lanes read
// it after (RA_SHARED).
struct ra_pf_shared {
    ra_u64 base;   // the next batch's first slot
    ra_u32 link;   // its in-link
    ra_u32 n;      // slots loaded (flagged: speculatively; a prefix is valid)
    ra_u32 words;  // 8-byte words per slot (slot_size / 8)
    ra_u32 ok;     // flagged: bit i, slot i's first word carried its lap flag (ra_block_or)
    ra_u32 use;    // this step's batch is staged from the registers
};

// ra_pf_poll, lane 0, after batch k is staged: the look-ahead.
template <typename STAGE>
__device__ __forceinline__ void ra_pf_poll(ra_loop<STAGE> &L, ra_pf_shared &pf, ra_u32 lanes) {
    ra_loop_shared &s = L.s;
    pf.n = 0;
    pf.ok = 0;
    if (s.stop || L.bar_pending || L.bar_waiting) return;  // a barrier's mark cuts batches: no look-ahead
    if (!(s.life == RA_STATE_ACTIVE || (s.life == RA_STATE_TERMINATING && s.drain))) return;
    const ra_u32 k = s.next;  // the in-link pick tries first
    ra_link_end *e = &s.ins[k];
    const ra_u32 w = e->q.slot_size / 8, pitch = ra_stage_pitch(e->ll ? e->q.slot_size / 2 : e->q.slot_size);
    if (w > lanes * RA_PF_WORDS || pitch > RA_STAGE_BYTES) return;  // too big to hold: staged from the link
    const ra_u64 cap = (ra_u64)e->q.mask + 1, b = e->own + (k == s.cur ? s.n : 0);
    ra_u64 p = min(min((ra_u64)(lanes * RA_PF_WORDS / w), (ra_u64)RA_WARP_LANES), (ra_u64)(RA_STAGE_BYTES / pitch));
    // Nothing known past b behind a batch smaller than a look-ahead (the
    // link drained: one message at a time, say): no look-ahead, whose poll
    // would most likely find nothing and cost the step a round trip.
    const bool known = e->other - e->own > b - e->own;
    if (!known && s.n < p) return;
    if (e->ll) p = min(p, e->own + cap - b);  // speculative, never a lap ahead of own
    else {
        if (!known) {  // behind a full batch: one poll of tail
            const ra_u64 t = ra_load_acquire(ra_q_word(e->q, RA_Q_OFF_TAIL), e->sys);
            if (t - e->own > cap) return;  // pick re-reads it and faults
            e->other = t;
        }
        p = e->other - e->own > b - e->own ? min(p, e->other - b) : 0;
    }
    pf.base = b;
    pf.link = k;
    pf.words = w;
    pf.n = (ra_u32)p;
}

// ra_pf_load, every lane: its share of the look-ahead's words (word x of
// the slots in order: lane + j * lanes), loads whose wait the stage and
// the publish hide.
__device__ __forceinline__ void ra_pf_load(const ra_loop_shared &s, const ra_pf_shared &pf, ra_u32 lane, ra_u32 lanes, ra_u64 *r) {
    const ra_u32 tot = pf.n * pf.words;
    if (tot == 0) return;
    const ra_link_end &e = s.ins[pf.link];
    RA_PF_UNROLL
    for (ra_u32 j = 0; j < RA_PF_WORDS; j++) {
        const ra_u32 x = lane + j * lanes, i = x / pf.words;
        if (x >= tot) break;
        const ra_u64 *p = (const ra_u64 *)ra_q_slot(e.q, pf.base + i) + (x - i * pf.words);
        r[j] = e.ll ? ra_load_relaxed_sys(p) : *p;  // indexed: published (lane 0's acquire of tail, then a barrier)
    }
}

// ra_pf_ok, every lane, before the barrier that precedes lane 0's pick:
// a flagged look-ahead's first words that carry their slot's lap flag.
__device__ __forceinline__ void ra_pf_ok(ra_loop_shared &s, ra_pf_shared &pf, ra_u32 lane, ra_u32 lanes, const ra_u64 *r) {
    const ra_u32 tot = pf.n * pf.words;
    if (tot == 0 || !s.ins[pf.link].ll) return;
    RA_PF_UNROLL
    for (ra_u32 j = 0; j < RA_PF_WORDS; j++) {
        const ra_u32 x = lane + j * lanes, i = x / pf.words;
        if (x >= tot) break;
        if (x == i * pf.words && ra_ll_state(s.ins[pf.link].q, pf.base + i, r[j]) == 1) ra_block_or(&pf.ok, 1u << i);
    }
}

// ra_pf_adopt, lane 0, after its pick: the batch taken from the
// look-ahead's link at its slot is cut to what was loaded (flagged: the
// valid prefix, which pick's poll already knew: ra_pf_known) and staged
// from the registers; anything else is staged from the link.
template <typename STAGE>
__device__ __forceinline__ void ra_pf_adopt(ra_loop<STAGE> &L, ra_pf_shared &pf) {
    ra_loop_shared &s = L.s;
    pf.use = 0;
    if (s.n && pf.n && s.cur == pf.link && s.ins[s.cur].own == pf.base) {
        s.n = min(s.n, pf.n);
        pf.use = 1;
    }
    pf.n = 0;
}

// ra_pf_known, lane 0, before its pick: a flagged look-ahead's valid
// prefix, when it starts at own, is what ra_ll_avail would poll: known
// written (other), so pick takes it without a load.
template <typename STAGE>
__device__ __forceinline__ void ra_pf_known(ra_loop<STAGE> &L, ra_pf_shared &pf) {
    ra_link_end *e = &L.s.ins[pf.link];
    if (pf.n == 0 || !e->ll) return;
    ra_u32 v = 0;
    while (v < pf.n && ((pf.ok >> v) & 1u)) v++;
    pf.n = v;
    if (v && e->own == pf.base && e->other == e->own) e->other = e->own + v;
}

// ra_pf_stage, every lane: the adopted batch (s.n slots from in's own)
// from the registers into staged, as stage_in lays it out; ends with a
// warp barrier. A flagged word loaded before its flag was there (state 0)
// is loaded again until it is (ra_ll_get); the headers first, then the
// payload words within each length (a word past it may hold an older lap
// forever).
template <typename STAGE>
__device__ __forceinline__ void ra_pf_stage(ra_loop<STAGE> &L, const ra_pf_shared &pf, ra_u32 lane, ra_u32 lanes, const ra_u64 *r) {
    ra_loop_shared &s = L.s;
    ra_link_end *in = L.in = &s.ins[s.cur];
    L.stg = true;
    L.pitch = ra_stage_pitch(in->ll ? in->q.slot_size / 2 : in->q.slot_size);
    if (lane == 0) s.gaps = 0;  // the other lanes read the last one before the step's first barrier
    const ra_u32 w = pf.words, tot = s.n * w, pitch = L.pitch;
    unsigned char *st = (unsigned char *)s.staged;
    if (!in->ll) {
    RA_PF_UNROLL
        for (ra_u32 j = 0; j < RA_PF_WORDS; j++) {
            const ra_u32 x = lane + j * lanes, i = x / w;
            if (x >= tot) break;
            s.staged[i * (pitch / 8) + (x - i * w)] = r[j];
        }
        L.sync();
        return;
    }
    const ra_u32 hw = RA_SLOT_HEADER_SIZE / 4, cap = ra_ll_cap(*in);
    for (ra_u32 round = 0; round < 2; round++) {
        RA_PF_UNROLL
        for (ra_u32 j = 0; j < RA_PF_WORDS; j++) {
            const ra_u32 x = lane + j * lanes, i = x / w, o = x - i * w;
            if (x >= tot) break;
            if ((o < hw) != (round == 0)) continue;
            unsigned char *d = st + (size_t)i * pitch;
            if (o >= hw && 4 * (o - hw) >= min(ra_slot_len(d), cap)) continue;
            const ra_u64 seq = in->own + i;
            ((ra_u32 *)d)[o] = ra_ll_state(in->q, seq, r[j]) != 0 ? (ra_u32)r[j] : ra_ll_get(in->q, seq, o);
        }
        L.sync();
    }
}

// ra_warp_loop is the warp loop: ra_ring_loop's step on warp 0's lanes,
// which meet at ra_warp_sync only. Shared state is written by lane 0
// before a warp barrier and read by the others after it, as in the block
// loop; the watch lane writes only w, which lane 0 reads after the barrier.
// PF: the pipelined ingress (above), ringkernel.LoopWarpPrefetch.
template <typename STAGE, bool PF>
__device__ void ra_warp_loop(ra_loop_shared &sh, const ra_ring_args &a) {
    if (threadIdx.x >= RA_WARP_LANES) return;  // the block's other warps take no part
    RA_SHARED(ra_warp_shared, w);
    RA_SHARED(ra_pf_shared, pf);
    ra_u64 r[RA_PF_WORDS];  // this lane's words of the look-ahead (PF)
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
        pf.n = pf.use = pf.ok = 0;
    }
    ra_warp_sync(lanes);
    for (;;) {
        // The watch lane's load is issued first and waited for last.
        ra_u32 q = 0;
        if (lane == watch) q = ra_load_relaxed_sys32((const ra_u32 *)(L.ctrl + RA_CB_OFF_COMMAND_SEQ));
        if (!PF) {
            if (lane == 0 && !picked) ra_warp_top(L, seen);
        } else {  // the publish, then the look-ahead's flags, then the pick
            const bool had = lane == 0 && !picked && sh.n;
            if (lane == 0 && !picked) ra_warp_bottom(L);
            ra_pf_ok(sh, pf, lane, lanes, r);  // waits for this lane's loads
            ra_warp_sync(lanes);
            if (had) L.ph.mark(RA_PHASE_STAGE_IN);  // the wait for the look-ahead's loads
            if (lane == 0 && !picked) {
                ra_pf_known(L, pf);
                ra_warp_pick(L, seen);
                ra_pf_adopt(L, pf);
                L.ph.taken(sh.n);
            }
        }
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
                    L.top(RA_WARP_LANES);  // s.n is 0: commands, beats, picks (a warp's worth), backs off
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
        if (PF && pf.use) ra_pf_stage(L, pf, lane, lanes, r);  // ends with a warp barrier
        else L.stage_in();                                        // ends with a warp barrier
        RA_PHASE_MARK(L, RA_PHASE_STAGE_IN);
        if (PF) {  // the look-ahead's loads, issued before the stage and the publish
            if (lane == 0) {
                ra_pf_poll(L, pf, lanes);
                L.ph.mark(RA_PHASE_POLL);
            }
            ra_warp_sync(lanes);
            ra_pf_load(sh, pf, lane, lanes, r);
        }
        L.process();
        ra_warp_sync(lanes);
        L.headers();  // ends with one when it writes any
        RA_PHASE_MARK(L, RA_PHASE_COMPUTE);
    }
    if (lane == 0) {
        L.ph.flush();
        L.finish();
    }
}

#endif // RA_WARP_CUH
