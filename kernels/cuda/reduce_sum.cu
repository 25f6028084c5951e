#include "ringactor.cuh"
// Reduces a message to one float, in order: the sum; empty: 0.
RA_STAGE(ra_reduce_sum) {
    if (out_cap < 1) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    float acc = 0.0f;
    for (int i = 0; i < n; i++) {
        float x = in[i];
        acc += x;
    }
    out[0] = acc;
    return 1;
}
RA_STAGE_TEST(ra_reduce_sum)
