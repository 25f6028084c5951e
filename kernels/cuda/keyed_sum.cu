#include "ringactor.cuh"
// A Keyed message as the float32 vector [key, sum of its values].
RA_TYPED_STAGE(ra_keyed_sum) {
    if (in_type != RA_TYPE_KEYED || len != (int)sizeof(ra_keyed)) return RA_CODE_WRONG_TYPE;
    if (out_cap < 8) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    const ra_keyed *k = (const ra_keyed *)in;
    float s = 0.0f;
    for (int i = 0; i < 8; i++) s += k->Values[i];  // in order, as the Go side adds
    float *o = (float *)out;
    o[0] = (float)k->Key;
    o[1] = s;
    *out_type = RA_TYPE_FLOATS;
    return 8;
}
RA_TYPED_STAGE_TEST(ra_keyed_sum)
