#include "ringactor.cuh"
// Message [a..., b...] of two equal halves: out[i] = b < a ? b : a;
// an odd length dead-letters the message.
RA_STAGE(ra_pair_min) {
    if (n % 2) return RA_STAGE_ERR_DOMAIN;
    int h = n / 2;
    if (h > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < h; i++) {
        float a = in[i], b = in[h + i];
        out[i] = b < a ? b : a;
    }
    return h;
}
RA_STAGE_TEST(ra_pair_min)
