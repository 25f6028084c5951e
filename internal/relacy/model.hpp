// Shared harness for the Relacy models in this directory (see README.md).
//
// Each model is a Relacy test suite, one per variant (a template argument
// picks the variant). clean() and fails() run one under Relacy's
// schedulers, compare the result with what the variant must give (clean, or
// the error named), and print one line. A model's main() returns non-zero
// on any mismatch.
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

// open_log names the file Relacy's reports for this check go to: one in
// $RELACY_LOG_DIR, or nowhere. Not a stringstream: Relacy intercepts
// allocation while it simulates, and a growing string buffer then crashes
// (a file stream's buffer is fixed).
inline void open_log(char *log, size_t n, const char *model) {
    std::snprintf(log, n, "/dev/null");
    const char *dir = std::getenv("RELACY_LOG_DIR");
    if (dir && *dir) {
        std::snprintf(log, n, "%s/%s-%d.log", dir, model, next_check());
        std::remove(log);
    }
}

// report prints the line for one variant and counts a mismatch.
inline void report(const char *model, const char *variant, rl::test_result_e want, rl::test_result_e got,
                   const char *how, const char *log) {
    bool ok = got == want;
    std::printf("%-8s %-42s expect %-18s got %-18s %-28s %s\n", model, variant,
                want == rl::test_result_success ? "clean" : rl::test_result_str(want),
                got == rl::test_result_success ? "clean" : rl::test_result_str(got), how, ok ? "ok" : "MISMATCH");
    if (!ok) {
        failures()++;
        if (std::strcmp(log, "/dev/null") != 0) std::printf("         Relacy's report: %s\n", log);
    }
    std::fflush(stdout);
}

// clean checks that test suite T (a variant that must be clean) is clean
// under two searches: the context-bound scheduler, which enumerates every
// schedule with at most one preemption (and every value each load may
// read), then the random scheduler for `iterations` schedules with any
// number of preemptions. (Relacy's full search is exhaustive, but does not
// end in minutes for the spinning 4-thread models.)
template <typename T>
void clean(const char *model, const char *variant, unsigned iterations) {
    char log[512];
    open_log(log, sizeof log, model);
    unsigned long long nb = 0, nr = 0;
    char how[96];
    rl::test_result_e got = run1<T>(log, rl::sched_bound, 0, &nb);
    if (got != rl::test_result_success) {
        std::snprintf(how, sizeof how, "at bounded schedule %llu", nb);
    } else {
        got = run1<T>(log, rl::sched_random, iterations, &nr);
        if (got != rl::test_result_success) std::snprintf(how, sizeof how, "at random schedule %llu", nr);
        else std::snprintf(how, sizeof how, "%llu+%llu schedules", nb, nr);
    }
    report(model, variant, rl::test_result_success, got, how, log);
}

// fails checks that Relacy reports error want for test suite T (a broken
// variant), searching with the context-bound scheduler only: each broken
// variant here is found within its first 100 schedules, and every
// scheduler a variant is run under costs compile time.
template <typename T>
void fails(const char *model, const char *variant, rl::test_result_e want) {
    char log[512];
    open_log(log, sizeof log, model);
    unsigned long long nb = 0;
    char how[96];
    rl::test_result_e got = run1<T>(log, rl::sched_bound, 0, &nb);
    if (got != rl::test_result_success) std::snprintf(how, sizeof how, "at bounded schedule %llu", nb);
    else std::snprintf(how, sizeof how, "%llu schedules", nb);
    report(model, variant, want, got, how, log);
}

inline int result() { return failures() == 0 ? 0 : 1; }

}  // namespace ramodel

#endif
