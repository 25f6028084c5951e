// ringactor device-side barrier: the flag-array barrier of package barrier.
// Each participant owns one u64 generation word on its own line; arriving
// at generation g is a .sys-scope store-release of g into that word, and
// waiting is .sys-scope load-acquires of every word until all are >= g.
// Stores and loads only, no read-modify-write, so one flag array spans
// GPUs (peer memory) and the host (mapped pinned memory), as a link does.
// The memory orders are ringactor.cuh's helpers; nothing here writes its
// own.
//
// Do not include this file by path: include it by its name
// (barrier.CUDAHeaderName) with barrier.CUDAHeader as its text, which
// prepends the layout #defines (RA_BAR_*) generated from the Go constants.
#ifndef RA_BARRIER_CUH
#define RA_BARRIER_CUH

#include "ringactor.cuh"

#ifndef RA_BAR_LINE_SIZE
#error "ra_barrier.cuh needs the generated RA_BAR_* layout: compile barrier.CUDAHeader, not the file"
#endif
static_assert(RA_BAR_LINE_SIZE % 8 == 0 && RA_BAR_OFF_GENERATION % 8 == 0, "generation words must be 8-byte aligned");
static_assert(RA_BAR_OFF_GENERATION + 8 <= RA_BAR_LINE_SIZE, "a generation word must fit in its line");
static_assert(RA_BAR_OFF_PARTICIPANTS + 4 <= RA_BAR_HEADER_SIZE, "the header must hold the participant count");

// ra_barrier_word is participant i's generation word in the flag array at
// flags (the region's base, RA_Q_REGION_ALIGN aligned).
__device__ __forceinline__ ra_u64 *ra_barrier_word(unsigned char *flags, ra_u32 i) {
    return (ra_u64 *)(flags + RA_BAR_HEADER_SIZE + (size_t)i * RA_BAR_LINE_SIZE + RA_BAR_OFF_GENERATION);
}

// ra_barrier_check reports whether flags holds a barrier of this layout for
// n participants. Check once at launch; a kernel must not trust memory.
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

// ra_barrier_wait waits until all n participants have reached generation
// gen (returns 1) or *stop becomes non-zero (returns 0). stop is a flag the
// host (or another kernel) sets to abandon the wait, so a stop always ends
// the loop; 0 for none. Load-acquires at system scope; sleeps
// with ra_backoff (__nanosleep, up to ~1 us) between rounds.
//
// One thread of a block calls it, never all: the others would only add
// loads across the link. Make it __syncthreads-friendly like this (or use
// ra_barrier_sync_block, which is exactly this):
//
//     __syncthreads();                       // the block's writes, before arriving
//     if (threadIdx.x == 0) { ra_barrier_arrive(f, me, g); ok = ra_barrier_wait(f, n, g, stop); }
//     __syncthreads();                       // everyone's writes, visible to the block
__device__ int ra_barrier_wait(unsigned char *flags, ra_u32 n, ra_u64 gen, const volatile ra_u32 *stop) {
    unsigned ns = 0;
    ra_u32 i = 0;  // words below i have reached gen; words only grow
    for (;;) {
        while (i < n && ra_load_acquire_sys(ra_barrier_word(flags, i)) >= gen) i++;
        if (i >= n) return 1;
        if (stop && ra_load_acquire_sys32((const ra_u32 *)stop) != 0) return 0;
        ra_backoff(&ns);
    }
}

// ra_barrier_sync_block: the whole block arrives as participant me at
// generation gen and waits (see ra_barrier_wait). Every thread of the block
// must call it; all get the same result.
__device__ int ra_barrier_sync_block(unsigned char *flags, ra_u32 n, ra_u32 me, ra_u64 gen, const volatile ra_u32 *stop) {
    RA_SHARED(int, ok);
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        ra_barrier_arrive(flags, me, gen);
        ok = ra_barrier_wait(flags, n, gen, stop);
    }
    __syncthreads();
    int r = ok;
    __syncthreads();  // ok is reused by the next call
    return r;
}

#endif // RA_BARRIER_CUH
