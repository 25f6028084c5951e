#include "ringactor.cuh"
// x + b; params: b
RA_STAGE(ra_offset) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) out[i] = in[i] + params[0];
    return n;
}
RA_STAGE_TEST(ra_offset)
