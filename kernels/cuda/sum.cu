#include "ringactor.cuh"
// Stateful running sum of every element seen; emits the total. state: [total]
RA_STAGE(ra_sum) {
    if (out_cap < 1) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    float t = state[0];
    for (int i = 0; i < n; i++) t += in[i];
    state[0] = t;
    out[0] = t;
    return 1;
}
RA_STAGE_TEST(ra_sum)
