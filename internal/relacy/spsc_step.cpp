// Model 1: the SPSC link queue through one step of the device loop.
//
// Stands for:
//   producer        p2pqueue/producer.go Producer.publish (slot bytes by
//                   plain stores, then tail StoreRelease64) and the head
//                   check before a slot is reused (Producer free space:
//                   LoadAcquire64 of head); a peer GPU producer does the same
//                   through ra_free / ra_store_release in ringactor.cuh.
//   ring kernel     kernels/cuda/ringactor.cuh ra_ring_loop, one step:
//                   thread 0's ra_avail (tail ld.acquire), the block's
//                   staging copy of the in-slots, the out-slot writes, the
//                   counter stores, then the publish: fence.acq_rel.sys,
//                   st.relaxed.sys of the out tail, st.relaxed.sys of the
//                   in head (the D1 fix of /work/shared/GPU-REVIEW.md; the
//                   counters before the fence is the D5 fix). The block is
//                   one thread here: its __syncthreads hand-offs are
//                   CTA-scope and are the subject of the TSan job, not this.
//   out consumer    p2pqueue/consumer.go Consumer (LoadAcquire64 of tail,
//                   plain slot reads).
//   Status reader   ringkernel/control.go ControlBlock counters as read by
//                   Status next to the link's head: head acquire, then the
//                   counters. Property (D5): a message freed from the ring
//                   (head moved past it) is counted (processed + dropped).
//
// PTX to C++: fence.acq_rel = atomic_thread_fence(acq_rel); st.relaxed /
// st.volatile = relaxed store; st.release = release store; ld.acquire =
// acquire load. Slot bytes are plain data (rl::var), so Relacy reports any
// slot access that is not ordered by happens-before as a data race.
//
// Bounds: in ring of 2 slots, 3 messages (so slot 0 is reused on the second
// lap), the kernel drops message 1 and forwards 0 and 2 (x10) to an out ring
// of 4 slots (no reuse there; the in ring covers reuse).
#include "model.hpp"

enum variant {
    fixed,             // the memory orders the seams use after this round's fixes
    d1_shipped,        // out tail st.release, head st.volatile, no fence (today's :715)
    d4_read_after,     // the fix, but thread 0 reads in-slots (trace records) after the fence
    d5_counters_after, // the fix, but the counters stored after head (today's :719-722)
    tail_relaxed,      // the producer publishes tail relaxed (no release)
    status_counters_first, // the fix, but Status reads the counters before head
                           // (ringkernel/status.go Kernel.Status today: Counters, then Link.Stats)
};

template <int V>
struct spsc_step : rl::test_suite<spsc_step<V>, 4> {
    static const unsigned CAP = 2, N = 3, OUTCAP = 4;

    rl::atomic<unsigned> in_tail, in_head, out_tail;  // the link words
    rl::atomic<unsigned> processed, dropped;          // control block counters
    rl::var<unsigned> in_slot[CAP], out_slot[OUTCAP];  // slot bytes: plain

    void before() {
        in_tail.store(0, rl::memory_order_relaxed);
        in_head.store(0, rl::memory_order_relaxed);
        out_tail.store(0, rl::memory_order_relaxed);
        processed.store(0, rl::memory_order_relaxed);
        dropped.store(0, rl::memory_order_relaxed);
    }

    void thread(unsigned who) {
        switch (who) {
        case 0: producer(); break;
        case 1: kernel(); break;
        case 2: out_consumer(); break;
        case 3: status(); break;
        }
    }

    // Producer.publish, one message at a time.
    void producer() {
        for (unsigned i = 0; i < N; i++) {
            if (i >= CAP)  // the slot's previous message must be consumed
                while (in_head.load(rl::memory_order_acquire) <= i - CAP) RA_SPIN();
            in_slot[i % CAP]($) = i + 1;  // payload, plain stores
            if (V == tail_relaxed) in_tail.store(i + 1, rl::memory_order_relaxed);
            else in_tail.store(i + 1, rl::memory_order_release);
        }
    }

    // ra_ring_loop: steps until all N messages are consumed.
    void kernel() {
        unsigned head = 0, out_own = 0, proc = 0, drop = 0;
        while (head < N) {
            unsigned tail = in_tail.load(rl::memory_order_acquire);  // ra_avail
            if (tail == head) { RA_SPIN(); continue; }
            // Staging copy (every thread, between __syncthreads): plain loads.
            unsigned stage[CAP];
            for (unsigned i = head; i < tail; i++) stage[i - head] = in_slot[i % CAP]($);
            // The op and the out-slot writes.
            for (unsigned i = head; i < tail; i++) {
                unsigned v = stage[i - head];
                RL_ASSERT(v == i + 1);  // the message, whole and current
                if (i == 1) { drop++; continue; }
                out_slot[out_own % OUTCAP]($) = v * 10;
                out_own++;
                proc++;
            }
            if (V != d5_counters_after) store_counters(proc, drop);
            if (V == d1_shipped) {
                out_tail.store(out_own, rl::memory_order_release);  // ra_store_release .sys
                in_head.store(tail, rl::memory_order_relaxed);      // st.volatile, sys_fenced
            } else {
                rl::atomic_thread_fence(rl::memory_order_acq_rel);  // fence.acq_rel.sys
                out_tail.store(out_own, rl::memory_order_relaxed);  // st.relaxed.sys
                if (V == d4_read_after)  // ra_record reading the slot in place (unstaged)
                    for (unsigned i = head; i < tail; i++) (void)(unsigned)in_slot[i % CAP]($);
                in_head.store(tail, rl::memory_order_relaxed);  // st.relaxed.sys
            }
            if (V == d5_counters_after) store_counters(proc, drop);
            head = tail;
        }
    }

    void store_counters(unsigned proc, unsigned drop) {  // st.volatile / st.relaxed.sys
        processed.store(proc, rl::memory_order_relaxed);
        dropped.store(drop, rl::memory_order_relaxed);
    }

    // Consumer of the out ring (the host, or the next stage).
    void out_consumer() {
        static const unsigned want[2] = {10, 30};
        unsigned head = 0;
        while (head < 2) {
            unsigned tail = out_tail.load(rl::memory_order_acquire);
            if (tail == head) { RA_SPIN(); continue; }
            for (unsigned i = head; i < tail; i++) RL_ASSERT(out_slot[i % OUTCAP]($) == want[i]);
            head = tail;
        }
    }

    // Status: head first (acquire), then the counters (relaxed: the
    // host's loads are ordered after the acquire anyway). The kernel's
    // counters-then-head order needs the reader's head-then-counters order;
    // the status_counters_first variant reads them the other way round
    // (each load an acquire, as Go's are) and misses a batch.
    void status() {
        for (int k = 0; k < 2; k++) {
            unsigned h, p, d;
            if (V == status_counters_first) {
                p = processed.load(rl::memory_order_acquire);
                d = dropped.load(rl::memory_order_acquire);
                h = in_head.load(rl::memory_order_acquire);
            } else {
                h = in_head.load(rl::memory_order_acquire);
                p = processed.load(rl::memory_order_relaxed);
                d = dropped.load(rl::memory_order_relaxed);
            }
            RL_ASSERT(p + d >= h);  // every freed message is counted
        }
    }
};

int main() {
    using namespace ramodel;
    const unsigned iters = 200000;
    clean<spsc_step<fixed> >("spsc", "fixed (fence; out tail; head)", iters);
    fails<spsc_step<d1_shipped> >("spsc", "D1 release tail, relaxed head", rl::test_result_data_race);
    fails<spsc_step<d4_read_after> >("spsc", "D4 slot read after the fence", rl::test_result_data_race);
    fails<spsc_step<d5_counters_after> >("spsc", "D5 counters after head", rl::test_result_user_assert_failed);
    fails<spsc_step<tail_relaxed> >("spsc", "producer tail relaxed", rl::test_result_data_race);
    fails<spsc_step<status_counters_first> >("spsc", "Status reads counters before head", rl::test_result_user_assert_failed);
    return result();
}
