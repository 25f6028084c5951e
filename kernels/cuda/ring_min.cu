#include "ringactor.cuh"
// One step of the device-link ring all-reduce (runtime/collective): params
// are [len, own...], this participant's len floats of one chunk; a message
// is [offset, x...] (offset an exact integer float, x at own[offset..]);
// the result is [offset, min(x[i], own[offset+i])...]. An offset outside the
// chunk dead-letters the message.
RA_STAGE(ra_ring_min) {
    if (n < 1) return RA_STAGE_ERR_DOMAIN;
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    float fo = in[0];
    if (!(fo >= 0.0f) || !(fo + (float)(n - 1) <= params[0]) || (float)(int)fo != fo) return RA_STAGE_ERR_DOMAIN;
    const float *own = params + 1 + (int)fo;
    out[0] = fo;
    for (int i = 1; i < n; i++) {
        float a = in[i], b = own[i - 1]; out[i] = b < a ? b : a;
    }
    return n;
}
RA_STAGE_TEST(ra_ring_min)
