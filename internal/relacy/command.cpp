// Model 3: the command handshake of the control block.
//
// Stands for:
//   host     ringkernel/control.go ControlBlock.PostArg (StoreRelease64 arg,
//            StoreRelease32 command, StoreRelease32 seq), then Acked
//            (LoadAcquire32 ack) and State (LoadAcquire32 state).
//   device   kernels/cuda/ringactor.cuh ra_ring_loop, thread 0's command
//            poll: seq ld.acquire.sys; when it moved, the command by a
//            volatile (relaxed) load (and the argument, relaxed: the CUDA
//            loop ignores it today, the sim backend's loop uses it); the
//            lifecycle step; state st.release.sys, then ack st.release.sys.
// Property: once the host sees ack == its seq, the state is the one its
// command leads to, and the device applied the command and argument the
// host posted with that seq (not the previous ones). Two commands are
// posted in turn (Activate, then Deactivate), so a stale read shows.
#include "model.hpp"

enum variant {
    fixed,             // seq acquire, then command and arg relaxed
    command_first,     // the device loads command before the seq acquire
    seq_relaxed,       // the device loads seq relaxed
};

enum { cmd_none, cmd_activate, cmd_deactivate };
enum { st_launched, st_active, st_idle };

template <int V>
struct command : rl::test_suite<command<V>, 2> {
    rl::atomic<unsigned> cmd, seq, ack, state;
    rl::atomic<unsigned> arg;

    void before() {
        cmd.store(cmd_none, rl::memory_order_relaxed);
        seq.store(0, rl::memory_order_relaxed);
        ack.store(0, rl::memory_order_relaxed);
        state.store(st_launched, rl::memory_order_relaxed);
        arg.store(0, rl::memory_order_relaxed);
    }

    void thread(unsigned who) {
        if (who == 0) host();
        else device();
    }

    void post(unsigned c, unsigned a, unsigned s) {  // ControlBlock.PostArg
        arg.store(a, rl::memory_order_release);
        cmd.store(c, rl::memory_order_release);
        seq.store(s, rl::memory_order_release);  // after the command: the kernel reads seq first
    }

    void host() {
        post(cmd_activate, 11, 1);
        while (ack.load(rl::memory_order_acquire) != 1) RA_SPIN();  // Acked
        RL_ASSERT(state.load(rl::memory_order_acquire) == st_active);
        post(cmd_deactivate, 22, 2);
        while (ack.load(rl::memory_order_acquire) != 2) RA_SPIN();
        RL_ASSERT(state.load(rl::memory_order_acquire) == st_idle);
    }

    void device() {
        unsigned acked = 0, life = st_launched;
        while (acked != 2) {
            unsigned c = 0, a = 0, s;
            if (V == command_first) {
                c = cmd.load(rl::memory_order_relaxed);
                a = arg.load(rl::memory_order_relaxed);
                s = seq.load(rl::memory_order_acquire);
            } else {
                s = seq.load(V == seq_relaxed ? rl::mo_relaxed : rl::mo_acquire, $);
                if (s != acked) {
                    c = cmd.load(rl::memory_order_relaxed);
                    a = arg.load(rl::memory_order_relaxed);
                }
            }
            if (s == acked) { RA_SPIN(); continue; }
            // The argument posted with this command (11 with seq 1, 22 with seq 2).
            RL_ASSERT(a == 11 * s);
            // The lifecycle table of ringkernel.Next (the two steps used here).
            if (c == cmd_activate && (life == st_launched || life == st_idle)) life = st_active;
            else if (c == cmd_deactivate && life == st_active) life = st_idle;
            acked = s;
            state.store(life, rl::memory_order_release);
            ack.store(s, rl::memory_order_release);
        }
    }
};

int main() {
    using namespace ramodel;
    const unsigned iters = 200000;
    clean<command<fixed> >("command", "fixed (seq acquire, then command)", iters);
    fails<command<command_first> >("command", "command read before the seq acquire", rl::test_result_user_assert_failed);
    fails<command<seq_relaxed> >("command", "seq read relaxed", rl::test_result_user_assert_failed);
    return result();
}
