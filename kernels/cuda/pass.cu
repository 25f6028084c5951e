#include "ringactor.cuh"
// Any message on unchanged, with its type: a router or a merge for typed graphs.
RA_TYPED_STAGE(ra_pass) {
    if (len > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < len; i++) out[i] = in[i];
    *out_type = in_type;
    return len;
}
RA_TYPED_STAGE_TEST(ra_pass)
