#include "ringactor.cuh"
// Reduces a message to one float, in order: the least element (NaN skipped); empty: +Inf.
RA_STAGE(ra_reduce_min) {
    if (out_cap < 1) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    float acc = __int_as_float(0x7f800000);
    for (int i = 0; i < n; i++) {
        float x = in[i];
        if (x < acc) acc = x;
    }
    out[0] = acc;
    return 1;
}
RA_STAGE_TEST(ra_reduce_min)
