#include "ringactor.cuh"
// delay: the message passed on unchanged, after the thread running it
// sleeps params[0] + params[1] * in[0] ns (in[0] of an empty message is 0;
// a negative or NaN total sleeps 0, one over 10 s sleeps 10 s): a stage
// whose service time is a wait, not arithmetic, so a slow device (a longer
// params[0]) or a long task (a larger in[0]) costs no processor. params:
// ns per message, ns per unit of in[0]. Every thread of the block sleeps
// its own message's delay, so a batch's delays overlap.
__device__ __forceinline__ void ra_delay_sleep(ra_u64 ns) {
    const ra_u64 end = ra_globaltimer() + ns;
    for (ra_u64 now = ra_globaltimer(); now < end; now = ra_globaltimer()) {
        // __nanosleep sleeps at most about 1 ms a call: sleep in steps,
        // against the clock, until the deadline.
        const ra_u64 left = end - now;
        const unsigned step = left < 1000000ull ? (unsigned)left : 1000000u;
#if defined(RA_HOST)
        ra_host_sleep_ns(step);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
        __nanosleep(step);
#endif
    }
}
RA_STAGE(ra_delay) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    float d = params[0] + (n > 0 ? params[1] * in[0] : 0.0f);
    if (!(d > 0.0f)) d = 0.0f;
    if (d > 1e10f) d = 1e10f;
    ra_delay_sleep((ra_u64)d);
    for (int i = 0; i < n; i++) out[i] = in[i];
    return n;
}
RA_STAGE_TEST(ra_delay)
