#include "ringactor.cuh"
RA_STAGE(ra_identity) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) out[i] = in[i];
    return n;
}
RA_STAGE_TEST(ra_identity)
