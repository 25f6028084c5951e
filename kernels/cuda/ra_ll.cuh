// ra_ll.cuh: the device loop's end of a flagged in-link (p2pqueue
// FormatFlagged, layout version 3, EXPERIMENTAL; docs/ARCHITECTURE.md §2.4).
// Included by ringactor.cuh after ra_link_end; the loop branches on
// ra_link_end::ll in ra_avail, stage_in and where it reads slots in place.
//
// Every 8-byte word j of a flagged slot holds bytes 4j..4j+3 of the logical
// slot (the 32-byte slot header, then the payload) in its low half and the
// slot's lap flag in its high half; each word is one 8-byte store, which is
// single-copy atomic in host memory, over PCIe and over NVLink, so one load
// returns data and validity together: the consumer polls the next slot's
// first word instead of tail (no dependent index read), and re-polls any
// other word until its flag matches (the words of a slot may land in any
// order). Every load goes through the seams (ra_load_relaxed_sys): a word
// carries its own validity, nothing else hangs on it, so relaxed suffices.
//
// Out-links: the loop's results are made in the staging area (after the
// batch's staged in-slots: ra_loop::res_slot) and written out as flagged
// words (ra_ll_write, ra_ll_write_batch): each word one relaxed 8-byte
// store at the link's scope (ra_ll_store), the slot's words only up to its
// message's length (the Go consumer gathers those only), no fence; tail is
// stored relaxed for observers. A flagged in-link's head is published
// lazily, for space only (ra_loop::flush, ra_loop::publish_heads): with a
// release, once a quarter of the ring was consumed since the last, when
// the loop finds nothing to take, and where a barrier or the end needs it.
// ringkernel/cuda refuses a flagged steal link and a flagged in-link of a
// stage with steal links (steal copies slots whole, as bytes).
#ifndef RINGACTOR_LL_CUH
#define RINGACTOR_LL_CUH

// The lap flag of the slot for index seq: odd, so never fresh memory's 0,
// and different from the lap before's (p2pqueue Link.lapFlag).
__device__ __forceinline__ ra_u32 ra_ll_flag(const ra_queue &q, ra_u64 seq) {
    return (ra_u32)((seq / ((ra_u64)q.mask + 1)) << 1) | 1u;
}

// ra_ll_state says what word w, read from the slot for seq, holds: 1 the
// slot's lap, 0 not yet written (0, or an earlier lap's flag: the lap
// before's, or an older one's where the messages since were shorter and
// left the word as it was), -1 a flag no correct producer writes there
// (even, or a lap ahead; laps count modulo 2^31, up to 2^30 back is older).
__device__ __forceinline__ int ra_ll_state(const ra_queue &q, ra_u64 seq, ra_u64 w) {
    const ra_u32 f = (ra_u32)(w >> 32), want = ra_ll_flag(q, seq), back = (want - f) >> 1;
    if (f == want) return 1;
    if (f == 0 || ((f & 1u) && back < (1u << 30))) return 0;
    return -1;
}

__device__ __forceinline__ const ra_u64 *ra_ll_word(const ra_queue &q, ra_u64 seq, ra_u32 j) {
    return (const ra_u64 *)ra_q_slot(q, seq) + j;
}

// ra_ll_avail, thread 0: the flagged ra_avail. Slots ready from own, known
// from an earlier poll (other), else polled now: the first word of each
// next slot, up to RA_BATCH of them, stopping at the first not written.
// -1 on a first word whose flag no correct producer writes.
__device__ __forceinline__ long long ra_ll_avail(ra_link_end *in) {
    if (in->other != in->own) return (long long)(in->other - in->own);
    ra_u64 k = 0;
    for (; k < RA_BATCH && k <= in->q.mask; k++) {
        const int st = ra_ll_state(in->q, in->own + k, ra_load_relaxed_sys(ra_ll_word(in->q, in->own + k, 0)));
        if (st < 0 && k == 0) return -1;
        if (st <= 0) break;  // a foreign flag after good slots: those first, the fault at the next poll
    }
    in->other = in->own + k;
    return (long long)k;
}

// ra_ll_get: the data of word j of the slot for seq, polled until the word
// carries its flag (it may land after the first word). A word with a flag
// no correct producer writes is taken as it is: the loop reads nothing out
// of bounds, but (unlike the Go consumer) does not report it.
__device__ __forceinline__ ra_u32 ra_ll_get(const ra_queue &q, ra_u64 seq, ra_u32 j) {
    const ra_u64 *p = ra_ll_word(q, seq, j);
    ra_u64 w = ra_load_relaxed_sys(p);
    while (ra_ll_state(q, seq, w) == 0) w = ra_load_relaxed_sys(p);
    return (ra_u32)w;
}

// ra_ll_cap: the largest payload a slot of in holds.
__device__ __forceinline__ ra_u32 ra_ll_cap(const ra_link_end &in) {
    return (in.ll ? in.q.slot_size / 2 : in.q.slot_size) - RA_SLOT_HEADER_SIZE;
}

// ra_ll_header: the slot header of the slot for seq of in, where it is (an
// indexed link) or gathered into buf (a flagged one), for the readers of
// queued slots in place (dead letters at a terminate without drain).
__device__ __forceinline__ const unsigned char *ra_ll_header(const ra_link_end &in, ra_u64 seq, ra_u32 *buf) {
    if (!in.ll) return ra_q_slot(in.q, seq);
    for (ra_u32 j = 0; j < RA_SLOT_HEADER_SIZE / 4; j++) buf[j] = ra_ll_get(in.q, seq, j);
    return (const unsigned char *)buf;
}

// ra_ll_stage_in, every thread: the flagged stage_in. n slots from in's
// head into staged (pitch bytes apart, logical bytes), in two rounds
// across the block: the slot headers, then, the lengths known, the words
// of each payload (a producer writes no word past its message, so a word
// past the length may hold an older lap forever). tid of nthr threads
// take part (the block, or the warp loop's warp), meeting at sync (the
// loop's barrier: __syncthreads, or the warp loop's); ends in one.
template <class Sync>
__device__ __forceinline__ void ra_ll_stage_in(const ra_link_end *in, ra_u32 n, unsigned char *staged, ra_u32 pitch, ra_u32 tid,
                                               ra_u32 nthr, Sync sync) {
    const ra_u32 hw = RA_SLOT_HEADER_SIZE / 4;
    for (ra_u32 x = tid; x < n * hw; x += nthr) {
        const ra_u32 i = x / hw, j = x - i * hw;
        ((ra_u32 *)(staged + (size_t)i * pitch))[j] = ra_ll_get(in->q, in->own + i, j);
    }
    sync();
    const ra_u32 cap = ra_ll_cap(*in), pw = (cap + 3) / 4;
    for (ra_u32 x = tid; x < n * pw; x += nthr) {
        const ra_u32 i = x / pw, j = x - i * pw;
        unsigned char *d = staged + (size_t)i * pitch;
        if (4 * j >= min(ra_slot_len(d), cap)) continue;
        ((ra_u32 *)(d + RA_SLOT_HEADER_SIZE))[j] = ra_ll_get(in->q, in->own + i, hw + j);
    }
    sync();
}

// ra_ll_store: one flagged word, a relaxed 8-byte store at the link's scope
// (single-copy atomic: the flag and the 4 bytes with it land together).
// The host build tells the scope checker (ra_host_seam) but not the cost
// ledger: data words are no index, counter or fence.
#if defined(RA_HOST)
__device__ __forceinline__ void ra_ll_store(ra_u64 *p, ra_u64 v, bool sys) { ra_host_seam(p, sys); __atomic_store_n(p, v, __ATOMIC_RELAXED); }
__device__ __forceinline__ void ra_store_relaxed_gpu(ra_u64 *p, ra_u64 v) { ra_host_op(p, 0, RA_HOST_ST_RLX, v); __atomic_store_n(p, v, __ATOMIC_RELAXED); }
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
__device__ __forceinline__ void ra_store_relaxed_gpu(ra_u64 *p, ra_u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void ra_ll_store(ra_u64 *p, ra_u64 v, bool sys) {
    if (sys) ra_store_relaxed_sys(p, v); else ra_store_relaxed_gpu(p, v);
}
#else
__device__ __forceinline__ void ra_store_relaxed_gpu(ra_u64 *p, ra_u64 v) { *(volatile ra_u64 *)p = v; }
__device__ __forceinline__ void ra_ll_store(ra_u64 *p, ra_u64 v, bool sys) { (void)sys; *(volatile ra_u64 *)p = v; }
#endif
// ra_store_relaxed: an index no one waits on (a flagged out-link's tail).
__device__ __forceinline__ void ra_store_relaxed(ra_u64 *p, ra_u64 v, bool sys) {
    if (sys) ra_store_relaxed_sys(p, v); else ra_store_relaxed_gpu(p, v);
}

// ra_ll_words: the words a flagged slot's message of len payload bytes
// fills (the header's 8, then the payload's, the last one padded).
__device__ __forceinline__ ra_u32 ra_ll_words(ra_u32 len) { return RA_SLOT_HEADER_SIZE / 4 + (len + 3) / 4; }

// ra_ll_put: word j of the flagged slot for seq of out, from src, the
// logical slot (header, then payload; ra_slot_len its length): its 4
// bytes low (the payload's last word zero-padded, as the Go producer
// writes it), the lap flag high.
__device__ __forceinline__ void ra_ll_put(const ra_link_end &out, ra_u64 seq, ra_u32 j, const unsigned char *src) {
    const ra_u32 end = RA_SLOT_HEADER_SIZE + ra_slot_len(src);
    ra_u32 v = ((const ra_u32 *)src)[j];
    if (4 * j + 4 > end) v &= (1u << (8 * (end - 4 * j))) - 1u;
    ra_ll_store((ra_u64 *)ra_q_slot(out.q, seq) + j, (ra_u64)ra_ll_flag(out.q, seq) << 32 | v, out.sys);
}

// ra_ll_write, one thread: logical slot src into the flagged slot for seq
// of out, every word its message fills and no other.
__device__ __forceinline__ void ra_ll_write(const ra_link_end &out, ra_u64 seq, const unsigned char *src) {
    const ra_u32 nw = ra_ll_words(ra_slot_len(src));
    for (ra_u32 j = 0; j < nw; j++) ra_ll_put(out, seq, j, src);
}

// ra_ll_write_batch, tid of nthr threads: n logical slots from src (pitch
// bytes apart, each at most wmax words) into out's flagged slots from seq,
// the words spread over the threads. Their headers are written before
// (a barrier between).
__device__ __forceinline__ void ra_ll_write_batch(const ra_link_end &out, ra_u64 seq, ra_u32 n, const unsigned char *src, ra_u32 pitch,
                                                  ra_u32 wmax, ra_u32 tid, ra_u32 nthr) {
    for (ra_u32 x = tid; x < n * wmax; x += nthr) {
        const ra_u32 i = x / wmax, j = x - i * wmax;
        const unsigned char *r = src + (size_t)i * pitch;
        if (j < ra_ll_words(ra_slot_len(r))) ra_ll_put(out, seq + i, j, r);
    }
}

// ra_ll_check, at attach: a link's layout version agrees with what the
// launch said of its format (RA_ARG_OFF_IN_LL / RA_ARG_OFF_OUT_LL).
__device__ __forceinline__ bool ra_ll_check(ra_link_end *e, bool ll) {
    const ra_u32 v = ra_load_relaxed_sys32((const ra_u32 *)(e->q.base + RA_Q_OFF_VERSION)) & 0xffffu;
    e->ll = ll;
    return v == (ll ? RA_Q_VERSION_FLAGGED : RA_Q_VERSION);
}

#endif
