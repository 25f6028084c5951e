#include "ringactor.cuh"
// sqrt(x); a negative element dead-letters the message.
RA_STAGE(ra_sqrt) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) {
        if (in[i] < 0.0f) return RA_STAGE_ERR_DOMAIN;
        out[i] = sqrtf(in[i]);
    }
    return n;
}
RA_STAGE_TEST(ra_sqrt)
