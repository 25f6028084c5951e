// Shared harness for the Relacy models in this directory (see README.md).
//
// Each model is a Relacy test suite, one per variant (a template argument
// picks the variant). check() runs one under Relacy's scheduler, compares
// the result with what the variant must give (clean, or a given error), and
// prints one line. A model's main() returns non-zero on any mismatch.
//
// Use relacy.hpp, not relacy_std.hpp: the latter clashes with libstdc++ 12.
// Memory orders are written rl::memory_order_X, which relacy.hpp expands to
// "rl::mo_X, $" (the $ carries the source line into Relacy's reports).
#ifndef RINGACTOR_RELACY_MODEL_HPP
#define RINGACTOR_RELACY_MODEL_HPP

// Standard headers first: relacy.hpp #defines new, delete, malloc and free.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <relacy/relacy.hpp>

namespace ramodel {

// spin: a wait loop's "nothing yet" step. Relacy needs the yield to see
// that the thread is waiting, not making progress.
#define RA_SPIN() rl::yield(1, $)

inline int &failures() {
    static int n = 0;
    return n;
}

inline int next_check() {  // one counter for all instantiations of check
    static int n = 0;
    return ++n;
}

// check runs test suite T and compares the result with want
// (rl::test_result_success for a variant that must be clean).
// run1 runs T once under one of Relacy's schedulers, its report (the
// failing schedule's history) going to log.
template <typename T>
rl::test_result_e run1(const char *log, rl::scheduler_type_e sched, unsigned iterations, unsigned long long *schedules) {
    std::ofstream out(log, std::ios::app);
    rl::test_params p;
    p.output_stream = &out;
    p.progress_stream = &out;
    p.search_type = sched;
    p.iteration_count = iterations;  // the random scheduler's budget
    p.context_bound = 1;             // the bound scheduler: all schedules with one preemption
    rl::simulate<T>(p);
    *schedules = p.stop_iteration;
    return p.test_result;
}

// check runs test suite T and compares the result with want
// (rl::test_result_success for a variant that must be clean). Two searches:
// the context-bound scheduler, which enumerates every schedule with at most
// one preemption (and every value a load may read), and the random
// scheduler for `iterations` schedules with any number of preemptions. The
// first error either finds is the result. (The full search is exhaustive
// but does not end in seconds for the spinning 4-thread models.)
template <typename T>
void check(const char *model, const char *variant, rl::test_result_e want, unsigned iterations) {
    // Relacy's reports go to a file in $RELACY_LOG_DIR, or nowhere. Not to
    // a stringstream: Relacy intercepts allocation while it simulates, and a
    // growing string buffer then crashes (a file stream's buffer is fixed).
    char log[512] = "/dev/null";
    const char *dir = std::getenv("RELACY_LOG_DIR");
    if (dir && *dir) {
        std::snprintf(log, sizeof log, "%s/%s-%d.log", dir, model, next_check());
        std::remove(log);
    }
    unsigned long long nb = 0, nr = 0;
    rl::test_result_e got = run1<T>(log, rl::sched_bound, 0, &nb);
    const char *where = "bounded";
    if (got == rl::test_result_success) {
        got = run1<T>(log, rl::sched_random, iterations, &nr);
        where = "random";
    }
    bool ok = got == want;
    char how[96];
    if (got == rl::test_result_success)
        std::snprintf(how, sizeof how, "%llu+%llu schedules", nb, nr);
    else
        std::snprintf(how, sizeof how, "at %s schedule %llu", where, got == rl::test_result_success ? 0 : (where[0] == 'b' ? nb : nr));
    std::printf("%-8s %-42s expect %-18s got %-18s %-28s %s\n", model, variant,
                want == rl::test_result_success ? "clean" : rl::test_result_str(want),
                got == rl::test_result_success ? "clean" : rl::test_result_str(got), how, ok ? "ok" : "MISMATCH");
    if (!ok) {
        failures()++;
        if (std::strcmp(log, "/dev/null") != 0) std::printf("         Relacy's report: %s\n", log);
    }
    std::fflush(stdout);
}

inline int result() { return failures() == 0 ? 0 : 1; }

}  // namespace ramodel

#endif
