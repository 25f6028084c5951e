// Model 6: the flagged link (p2pqueue.FormatFlagged, layout version 3,
// experimental; docs/ARCHITECTURE.md §2.4).
//
// Stands for:
//   producer   the device loop's flagged out-link (kernels/cuda/ra_ll.cuh
//              ra_ll_write, ra_ll_write_batch: the block's threads store
//              the words; closed released in finish, after a barrier) and
//              p2pqueue/flagged.go Link.encodeFlagged +
//              Producer.commitFlagged: every 8-byte
//              word of a slot is data | lap flag << 32, stored relaxed in any
//              order (here the first word first: the worst case for the
//              consumer); no tail, no fence. It re-reads head (acquire) only
//              when its cached copy says full. closed is released after the
//              last slot's words.
//   consumer   p2pqueue/flagged.go Consumer.peekFlagged/gather and
//              peekFlaggedOrClosed, kernels/cuda/ra_ll.cuh ra_ll_avail and
//              ra_ll_get (the device loop's flagged in-link, whose flush and
//              publish_heads publish head lazily: a release once a quarter
//              of the ring is consumed since the last, or when it finds
//              nothing to take; the Go consumer once per batch: both at
//              least as often as here, which any threshold up to the
//              ring's capacity keeps correct): polls the next slot's first word for the
//              slot's lap flag, then every other word it uses until its flag
//              matches; publishes head lazily (a release, once half the ring
//              is consumed since the last one, or when it finds the ring
//              empty); on an empty ring it acquires closed and, if set, polls
//              the next slot once more before reporting drained.
// Property: every message arrives whole and in order (each word carries the
// message's data, never an older lap's), and a drained report comes only
// after every message published.
#include "model.hpp"

enum variant {
    fixed,           // as above
    first_word_only, // the consumer checks the first word's flag only
    no_lap,          // the flag is a constant 1, not the slot's lap
    no_repoll,       // drained on closed without polling the next slot again
    closed_relaxed,  // the producer stores closed relaxed
};

template <int V>
struct flagged : rl::test_suite<flagged<V>, 2> {
    static const unsigned CAP = 4, N = 5, W = 2;  // slot 0 is reused by message 4
    rl::atomic<unsigned long long> word[CAP][W];
    rl::atomic<unsigned> head, closed;

    void before() {
        for (unsigned s = 0; s < CAP; s++)
            for (unsigned j = 0; j < W; j++) word[s][j].store(0, rl::memory_order_relaxed);  // Init clears the slots
        head.store(0, rl::memory_order_relaxed);
        closed.store(0, rl::memory_order_relaxed);
    }

    static unsigned long long flag(unsigned seq) { return V == no_lap ? 1 : ((seq / CAP) << 1 | 1); }
    static unsigned data(unsigned seq, unsigned j) { return seq * 10 + j + 1; }

    void thread(unsigned who) {
        if (who == 0) producer();
        else consumer();
    }

    void producer() {
        unsigned head_cache = 0;
        for (unsigned i = 0; i < N; i++) {
            while (i - head_cache >= CAP) {  // looks full: re-read head
                head_cache = head.load(rl::memory_order_acquire);
                if (i - head_cache >= CAP) RA_SPIN();
            }
            for (unsigned j = 0; j < W; j++)
                word[i % CAP][j].store(flag(i) << 32 | data(i, j), rl::memory_order_relaxed);
        }
        if (V == closed_relaxed) closed.store(1, rl::memory_order_relaxed);
        else closed.store(1, rl::memory_order_release);
    }

    // ready reports whether the slot for seq is published: its first word
    // carries the slot's flag.
    bool ready(unsigned seq, unsigned long long *w0) {
        *w0 = word[seq % CAP][0].load(rl::memory_order_relaxed);
        return (*w0 >> 32) == flag(seq);
    }

    void consumer() {
        unsigned own = 0, published = 0;
        for (;;) {
            unsigned long long w0;
            if (!ready(own, &w0)) {
                if (published != own) {  // lazy head: on an empty ring
                    published = own;
                    head.store(own, rl::memory_order_release);
                }
                if (closed.load(rl::memory_order_acquire) != 1) { RA_SPIN(); continue; }
                if (V != no_repoll && ready(own, &w0)) goto take;
                RL_ASSERT(own == N);  // drained: everything published was consumed
                return;
            }
        take:
            RL_ASSERT((unsigned)w0 == data(own, 0));
            for (unsigned j = 1; j < W; j++) {
                unsigned long long w = word[own % CAP][j].load(rl::memory_order_relaxed);
                if (V != first_word_only)
                    while ((w >> 32) != flag(own)) {  // this word has not landed yet
                        RA_SPIN();
                        w = word[own % CAP][j].load(rl::memory_order_relaxed);
                    }
                RL_ASSERT((unsigned)w == data(own, j));
            }
            own++;
            if (own - published >= CAP / 2) {  // lazy head: half the ring consumed
                published = own;
                head.store(own, rl::memory_order_release);
            }
        }
    }
};

int main() {
    using namespace ramodel;
    const unsigned iters = 100000;
    clean<flagged<fixed> >("flagged", "fixed (lap flags, every word polled)", iters);
    fails<flagged<first_word_only> >("flagged", "only the first word's flag checked", rl::test_result_user_assert_failed);
    fails<flagged<no_lap> >("flagged", "flag without the lap", rl::test_result_user_assert_failed);
    fails<flagged<no_repoll> >("flagged", "drained on closed, slot not re-polled", rl::test_result_user_assert_failed);
    fails<flagged<closed_relaxed> >("flagged", "closed stored relaxed", rl::test_result_user_assert_failed);
    return result();
}
