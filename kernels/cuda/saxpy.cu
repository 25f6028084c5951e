#include "ringactor.cuh"
// a*x + b per element; params: a, b
RA_STAGE(ra_saxpy) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) out[i] = params[0] * in[i] + params[1];
    return n;
}
RA_STAGE_TEST(ra_saxpy)
