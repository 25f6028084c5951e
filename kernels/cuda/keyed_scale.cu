#include "ringactor.cuh"
// A Keyed message with its values multiplied by params[0].
RA_TYPED_STAGE(ra_keyed_scale) {
    if (in_type != RA_TYPE_KEYED || len != (int)sizeof(ra_keyed)) return RA_CODE_WRONG_TYPE;
    if (out_cap < (int)sizeof(ra_keyed)) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    const ra_keyed *k = (const ra_keyed *)in;
    ra_keyed *o = (ra_keyed *)out;
    o->Key = k->Key;
    o->Count = k->Count;
    for (int i = 0; i < 8; i++) o->Values[i] = k->Values[i] * params[0];
    *out_type = RA_TYPE_KEYED;
    return (int)sizeof(ra_keyed);
}
RA_TYPED_STAGE_TEST(ra_keyed_scale)
