#pragma once
// Times real oneDNN primitives on this machine (for `archsim calibrate`). Only this file's .cpp
// includes oneDNN's headers.
#include <cstdint>
#include <vector>

namespace archsim {

/// Timings of one primitive: every timed repeat, seconds.
struct Timing {
    std::vector<double> samples_s;
    double median_s() const;
    /// (90th - 10th percentile) / median, percent: the spread of the repeats.
    double spread_pct() const;
};

/// fp32 C (m x n) = A (m x k) B (k x n), row-major, weights in oneDNN's preferred layout (reordered
/// once, untimed). `threads` OpenMP threads; warm-up runs, then repeats until `min_time_s` and
/// at least `min_reps` have passed. Throws std::runtime_error when oneDNN refuses the shape.
Timing time_matmul(int64_t m, int64_t n, int64_t k, int threads, double min_time_s, int min_reps);

/// fp32 forward-inference convolution, NCHW src (n x c x h x w), oc filters of kh x kw, stride 1,
/// "same" padding; src, weights and dst in oneDNN's preferred layouts (reordered once, untimed).
Timing time_conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t kh, int64_t kw, int threads,
                 double min_time_s, int min_reps);

}  // namespace archsim

namespace archsim {
/// A clock measured on a shared machine: the estimate, how far its best rounds disagree, and
/// how many rounds it took.
struct ClockMeasurement {
    double mhz = 0;         ///< 0 where the clock cannot be measured (not x86-64)
    double spread_pct = 0;  ///< (max - min) / median of the rounds the estimate is the median of
    int rounds = 0;
};

/// The core clock the machine runs at with `threads` threads busy: in each round every thread
/// times a chain of dependent integer adds (one cycle each on every x86-64 core since the P6)
/// against its own CPU time (CLOCK_THREAD_CPUTIME_ID: the turns another process takes on the
/// core do not count; a hypervisor's steal time still does), and the round's value is the
/// threads' median. Interference can only slow a round, so the estimate is the median of the 5 fastest rounds; rounds go on (5 at least, 40
/// at most) until those 5 agree within 2%.
ClockMeasurement measure_clock(int threads);

/// `measure` (a timing of one primitive) repeated on a shared machine until its repeats agree:
/// up to `attempts` timings while the spread (Timing::spread_pct) exceeds `stable_pct`; returns
/// the attempt with the smallest median (interference only slows), its spread telling whether it
/// settled.
template <class F>
Timing stable_timing(F measure, double stable_pct, int attempts) {
    Timing best = measure();
    for (int i = 1; i < attempts && best.spread_pct() > stable_pct; ++i) {
        Timing t = measure();
        if (t.median_s() < best.median_s()) best = std::move(t);
    }
    return best;
}
}  // namespace archsim
