// ringactor device-side barrier: the flag-array barrier of package barrier.
// Each participant owns one u64 generation word on its own line; arriving
// at generation g is a .sys-scope store-release of g into that word, and
// waiting is .sys-scope load-acquires of every word until all are >= g.
// Stores and loads only, no read-modify-write, so one flag array spans
// GPUs (peer memory) and the host (mapped pinned memory), as a link does.
// The memory orders are ringactor.cuh's helpers; nothing here writes its
// own.
//
// Include it by its name (barrier.CUDAHeaderName) with barrier.CUDAHeader
// as its text. The layout (RA_BAR_*) comes from ringactor_layout.h, which
// `go generate ./kernels/...` writes from package barrier's constants, and
// ra_barrier_word, ra_barrier_check, ra_barrier_arrive and
// ra_barrier_poll from ringactor.cuh, where the ring kernels' loop uses
// them for CmdBarrier.
#ifndef RA_BARRIER_CUH
#define RA_BARRIER_CUH

#include "ringactor.cuh"

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
        if (ra_barrier_poll(flags, n, gen, &i)) return 1;
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
