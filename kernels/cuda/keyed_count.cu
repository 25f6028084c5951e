#include "ringactor.cuh"
// Stateful: counts the messages of each key (key mod 256) and hands each one
// on with Count set to its key's count so far, this one included.
// state: 256 counts.
RA_TYPED_STAGE(ra_keyed_count) {
    if (in_type != RA_TYPE_KEYED || len != (int)sizeof(ra_keyed)) return RA_CODE_WRONG_TYPE;
    if (out_cap < (int)sizeof(ra_keyed)) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    const ra_keyed *k = (const ra_keyed *)in;
    ra_keyed *o = (ra_keyed *)out;
    float c = state[k->Key % 256u] + 1.0f;
    state[k->Key % 256u] = c;
    o->Key = k->Key;
    o->Count = (unsigned int)c;
    for (int i = 0; i < 8; i++) o->Values[i] = k->Values[i];
    *out_type = RA_TYPE_KEYED;
    return (int)sizeof(ra_keyed);
}
RA_TYPED_STAGE_TEST(ra_keyed_count)
