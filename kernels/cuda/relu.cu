#include "ringactor.cuh"
RA_STAGE(ra_relu) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) out[i] = fmaxf(in[i], 0.0f);
    return n;
}
RA_STAGE_TEST(ra_relu)
