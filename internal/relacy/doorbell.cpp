// Model 5: the host doorbell's Dekker handshake (parking consumer).
//
// Stands for:
//   consumer  p2pqueue/consumer.go Consumer.pause: StoreRelease32(parked, 1)
//             (Go's atomic.StoreUint32: sequentially consistent, an XCHG on
//             amd64), then the re-check of tail (Len, LoadAcquire64 =
//             atomic.LoadUint64, sequentially consistent); sleeps on the
//             bell only if nothing is there.
//   producer  p2pqueue/producer.go Producer.publish with a bell:
//             StoreSeqCst64(tail), then LoadAcquire32(parked) (seq_cst);
//             rings only if parked. (Without a bell it uses StoreRelease64,
//             a plain MOVQ on amd64: a release store, which is not enough
//             here.)
// Property: the consumer never goes to sleep with a message published and
// no ring coming (a missed wake-up; it would wait for the 10 ms fallback,
// or forever without one). Checked at the end: slept implies rung.
#include "model.hpp"

enum variant {
    fixed,          // seq_cst stores and loads on both sides (Go's sync/atomic)
    release_only,   // release stores, acquire loads on both sides
    tail_release,   // the producer's tail by a release store (StoreRelease64's MOVQ), the rest seq_cst
};

template <int V>
struct doorbell : rl::test_suite<doorbell<V>, 2> {
    rl::atomic<unsigned> tail, parked, rung;
    rl::var<unsigned> slot;
    rl::var<int> slept;  // the consumer decided to sleep (read in after())

    void before() {
        tail.store(0, rl::memory_order_relaxed);
        parked.store(0, rl::memory_order_relaxed);
        rung.store(0, rl::memory_order_relaxed);
        slept($) = 0;
    }

    void thread(unsigned who) {
        const rl::memory_order st = V == fixed ? rl::mo_seq_cst : rl::mo_release;
        const rl::memory_order ld = V == fixed || V == tail_release ? rl::mo_seq_cst : rl::mo_acquire;
        if (who == 0) {  // Producer.publish of one message
            slot($) = 42;
            tail.store(1, V == release_only || V == tail_release ? rl::mo_release : rl::mo_seq_cst, $);
            if (parked.load(ld, $) == 1) rung.store(1, rl::memory_order_release);  // bell.ring
        } else {  // Consumer.pause after a failed dequeue (tail was 0)
            parked.store(1, V == release_only ? st : rl::mo_seq_cst, $);
            if (tail.load(ld, $) != 0) {  // the re-check
                RL_ASSERT(slot($) == 42);
                return;
            }
            slept($) = 1;  // Sleep(bell): only a ring (or the fallback) wakes it
        }
    }

    void after() {
        // A missed wake-up: asleep, a message published, no ring.
        RL_ASSERT(!(slept($) == 1 && rung.load(rl::memory_order_relaxed) == 0));
    }
};

int main() {
    using namespace ramodel;
    const unsigned iters = 100000;
    clean<doorbell<fixed> >("doorbell", "fixed (seq_cst stores and loads)", iters);
    fails<doorbell<release_only> >("doorbell", "release stores, acquire loads", rl::test_result_user_assert_failed);
    fails<doorbell<tail_release> >("doorbell", "producer tail by a release store", rl::test_result_user_assert_failed);
    return result();
}
