// Model 4: the flag-array barrier.
//
// Stands for barrier/cuda/ra_barrier.cuh: ra_barrier_arrive (st.release.sys
// of the participant's monotonic u64 generation word) and ra_barrier_wait
// (ld.acquire.sys of every word until all are >= the generation; words only
// grow, so a word seen at gen is not re-read). ra_barrier_sync_block wraps
// them in __syncthreads, so one thread per participant here.
// Property: after the barrier at generation g, each participant reads the
// data every other participant wrote before arriving at g (plain data, so
// an unordered read is a data race). Three participants, two generations
// (the data is per generation: the barrier orders a phase's writes before
// the next phase's reads, not a write of phase 2 against a read of phase 1).
#include "model.hpp"

enum variant {
    fixed,           // arrive: store-release of the generation
    arrive_relaxed,  // arrive with a relaxed store
};

template <int V>
struct barrier : rl::test_suite<barrier<V>, 3> {
    static const unsigned P = 3, G = 2;
    rl::atomic<unsigned long long> gen[P];  // one word per participant (its own line)
    rl::var<unsigned> data[G + 1][P];

    void before() {
        for (unsigned i = 0; i < P; i++) gen[i].store(0, rl::memory_order_relaxed);
    }

    void arrive(unsigned me, unsigned long long g) {  // ra_barrier_arrive
        if (V == arrive_relaxed) gen[me].store(g, rl::memory_order_relaxed);
        else gen[me].store(g, rl::memory_order_release);
    }

    void wait(unsigned long long g) {  // ra_barrier_wait (no stop flag)
        unsigned i = 0;
        for (;;) {
            while (i < P && gen[i].load(rl::memory_order_acquire) >= g) i++;
            if (i >= P) return;
            RA_SPIN();
        }
    }

    void thread(unsigned me) {
        for (unsigned g = 1; g <= G; g++) {
            data[g][me]($) = 10 * g + me;  // this phase's result
            arrive(me, g);
            wait(g);
            for (unsigned i = 0; i < P; i++)
                if (i != me) RL_ASSERT(data[g][i]($) == 10 * g + i);
        }
    }
};

int main() {
    using namespace ramodel;
    const unsigned iters = 200000;
    clean<barrier<fixed> >("barrier", "fixed (arrive release, wait acquire)", iters);
    fails<barrier<arrive_relaxed> >("barrier", "arrive with a relaxed store", rl::test_result_data_race);
    return result();
}
