#include "ringactor.cuh"
// The message unchanged, down port 0 when its first element is below the
// threshold (or it is empty), else port 1; params: threshold
RA_PORT_STAGE(ra_branch) {
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) out[i] = in[i];
    *port = (n > 0 && in[0] >= params[0]) ? 1 : 0;
    return n;
}
RA_PORT_STAGE_TEST(ra_branch)
