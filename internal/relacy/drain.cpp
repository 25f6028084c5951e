// Model 2: the closed/drain rule.
//
// Stands for:
//   producer   p2pqueue/producer.go Producer.publish (slots, tail release)
//              and Producer.Close (StoreRelease32 of closed after the last
//              tail store); a device producer's end of ra_ring_loop does the
//              same (the out-links' closed by ra_store_release_sys32 after
//              the last tail).
//   consumer   kernels/cuda/ringactor.cuh ra_ring_loop's take branch: when
//              ra_avail says 0, ra_closed (closed ld.acquire.sys) and then
//              ra_avail again (tail re-read, ld.acquire), and only if that
//              is 0 too is the in-link drained. The host's Consumer
//              (p2pqueue/consumer.go, ErrClosed once drained) has the same
//              rule.
// Property: when the consumer reports drained, it has consumed every
// message the producer published (3 messages through 2 slots), and every
// slot read is ordered after the slot's write (no data race).
#include "model.hpp"

enum variant {
    fixed,          // closed release after the last tail; consumer re-reads tail after closed
    no_reread,      // the consumer reports drained when it sees closed, without re-reading tail
    closed_relaxed, // the producer stores closed relaxed (no release)
};

template <int V>
struct drain : rl::test_suite<drain<V>, 2> {
    static const unsigned CAP = 2, N = 3;
    rl::atomic<unsigned> tail, head, closed;
    rl::var<unsigned> slot[CAP];

    void before() {
        tail.store(0, rl::memory_order_relaxed);
        head.store(0, rl::memory_order_relaxed);
        closed.store(0, rl::memory_order_relaxed);
    }

    void thread(unsigned who) {
        if (who == 0) producer();
        else consumer();
    }

    void producer() {
        for (unsigned i = 0; i < N; i++) {
            if (i >= CAP)
                while (head.load(rl::memory_order_acquire) <= i - CAP) RA_SPIN();
            slot[i % CAP]($) = i + 1;
            tail.store(i + 1, rl::memory_order_release);
        }
        if (V == closed_relaxed) closed.store(1, rl::memory_order_relaxed);
        else closed.store(1, rl::memory_order_release);  // Producer.Close
    }

    void consumer() {
        unsigned own = 0;
        for (;;) {
            unsigned t = tail.load(rl::memory_order_acquire);  // ra_avail
            if (t == own) {
                if (closed.load(rl::memory_order_acquire) != 1) { RA_SPIN(); continue; }  // ra_closed
                if (V != no_reread) {
                    t = tail.load(rl::memory_order_acquire);  // ra_avail again
                    if (t != own) continue;                  // more came before closed
                }
                RL_ASSERT(own == N);  // drained: everything published was consumed
                return;
            }
            for (unsigned i = own; i < t; i++) RL_ASSERT(slot[i % CAP]($) == i + 1);
            own = t;
            rl::atomic_thread_fence(rl::memory_order_acq_rel);  // the step's publish (model 1)
            head.store(own, rl::memory_order_relaxed);
        }
    }
};

int main() {
    using namespace ramodel;
    const unsigned iters = 200000;
    clean<drain<fixed> >("drain", "fixed (closed release; re-read tail)", iters);
    fails<drain<no_reread> >("drain", "drained on closed, tail not re-read", rl::test_result_user_assert_failed);
    fails<drain<closed_relaxed> >("drain", "closed stored relaxed", rl::test_result_user_assert_failed);
    return result();
}
