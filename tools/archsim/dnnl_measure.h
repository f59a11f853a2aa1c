#pragma once
// Times real oneDNN primitives on this machine (for `archsim calibrate`). Only this file's .cpp
// includes oneDNN's headers.
#include <cstdint>
#include <vector>

namespace archsim::cli {

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

}  // namespace archsim::cli

namespace archsim::cli {
/// The core clock the machine runs at with `threads` threads busy, MHz: each thread times a chain
/// of dependent integer adds (one cycle each on every x86-64 core since the P6) and the slowest
/// thread counts. Returns 0 where this cannot be measured (not x86-64).
double measure_clock_mhz(int threads);
}  // namespace archsim::cli
