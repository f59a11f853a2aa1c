#include "sim/api/dnnl_measure.h"

#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

namespace archsim {

namespace {
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

/// Runs `prim` with `args` 3 times untimed, then times repeats.
Timing time_primitive(dnnl::primitive& prim, dnnl::stream& s, const std::unordered_map<int, dnnl::memory>& args,
                      double min_time_s, int min_reps) {
    for (int i = 0; i < 3; ++i) prim.execute(s, args);
    s.wait();
    Timing t;
    const auto start = std::chrono::steady_clock::now();
    while (static_cast<int>(t.samples_s.size()) < min_reps ||
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < min_time_s) {
        const auto t0 = std::chrono::steady_clock::now();
        prim.execute(s, args);
        s.wait();
        t.samples_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (t.samples_s.size() >= 100000) break;
    }
    return t;
}

dnnl::memory filled(const dnnl::memory::desc& md, const dnnl::engine& eng) {
    dnnl::memory m(md, eng);
    auto* p = static_cast<float*>(m.get_data_handle());
    const size_t n = md.get_size() / sizeof(float);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>((i % 13) * 0.01);
    return m;
}
}  // namespace

double Timing::median_s() const { return percentile(samples_s, 0.5); }
double Timing::spread_pct() const {
    const double med = median_s();
    return med > 0 ? 100.0 * (percentile(samples_s, 0.9) - percentile(samples_s, 0.1)) / med : 0;
}

Timing time_matmul(int64_t m, int64_t n, int64_t k, int threads, double min_time_s, int min_reps) {
    omp_set_num_threads(threads);
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    const dnnl::memory::desc a({m, k}, dt::f32, tag::ab), b_any({k, n}, dt::f32, tag::any), c({m, n}, dt::f32, tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b_any, c), eng);
    dnnl::memory am = filled(a, eng), bm = filled(pd.weights_desc(), eng), cm(c, eng);
    dnnl::matmul prim(pd);
    return time_primitive(prim, s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}}, min_time_s, min_reps);
}

Timing time_conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t kh, int64_t kw, int threads,
                 double min_time_s, int min_reps) {
    omp_set_num_threads(threads);
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    const dnnl::memory::desc src({n, c, h, w}, dt::f32, tag::any), wei({oc, c, kh, kw}, dt::f32, tag::any),
        dst({n, oc, h, w}, dt::f32, tag::any);
    const dnnl::memory::dims strides{1, 1}, pad_l{kh / 2, kw / 2}, pad_r{(kh - 1) / 2, (kw - 1) / 2};
    const dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, wei, dst,
                                        strides, pad_l, pad_r),
        eng);
    dnnl::memory sm = filled(pd.src_desc(), eng), wm = filled(pd.weights_desc(), eng), dm(pd.dst_desc(), eng);
    dnnl::convolution_forward prim(pd);
    return time_primitive(prim, s, {{DNNL_ARG_SRC, sm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dm}}, min_time_s, min_reps);
}

}  // namespace archsim

namespace archsim {
ClockMeasurement measure_clock(int threads) {
    ClockMeasurement out;
#if defined(__x86_64__)
    std::vector<double> rounds;  // MHz, one per round: the threads' median
    auto best5 = [&] {
        std::vector<double> v = rounds;
        std::sort(v.rbegin(), v.rend());
        v.resize(std::min<size_t>(5, v.size()));
        return v;
    };
    while (rounds.size() < 40) {
        std::vector<double> per_thread(static_cast<size_t>(threads), 0.0);
#pragma omp parallel num_threads(threads)
        {
            constexpr int64_t kIters = 5'000'000;  // 8 adds each: 40 M cycles, ~15 ms at 2.5 GHz
            uint64_t x = 0;
            // the thread's own CPU time, not wall time: another process on the core takes turns
            // with it, and those turns do not count
            timespec t0{}, t1{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
            for (int64_t i = 0; i < kIters; ++i)
                asm volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                             "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                             : "+r"(x));
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
            const double s = double(t1.tv_sec - t0.tv_sec) + 1e-9 * double(t1.tv_nsec - t0.tv_nsec);
            per_thread[static_cast<size_t>(omp_get_thread_num()) % per_thread.size()] = 8.0 * static_cast<double>(kIters) / s * 1e-6;
        }
        rounds.push_back(percentile(per_thread, 0.5));
        if (rounds.size() < 5) continue;
        const std::vector<double> b = best5();
        if ((b.front() - b.back()) / b[2] <= 0.02) break;
    }
    const std::vector<double> b = best5();
    out.mhz = b[b.size() / 2];
    out.spread_pct = 100.0 * (b.front() - b.back()) / out.mhz;
    out.rounds = static_cast<int>(rounds.size());
#else
    (void)threads;
#endif
    return out;
}

}  // namespace archsim
