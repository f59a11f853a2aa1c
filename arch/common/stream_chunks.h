#pragma once
// How many chunks a streaming (vector-unit) operator's input is cut into, so that loads, work
// and write-backs overlap in a double-buffered pipeline.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace archsim {

/// A streaming operator as the chunk chooser sees it: `in_bytes` read from DRAM, `out_bytes`
/// written back, `work` operations at `ops_per_cycle` on a clock of `cycle_ps`; DRAM at
/// `bytes_per_ps` with `latency_ps` per transfer (0 and 0: ideal DRAM).
struct StreamShape {
    int64_t in_bytes = 0, out_bytes = 0, work = 0;
    double ops_per_cycle = 1, cycle_ps = 1;
    double dram_bytes_per_ps = 0, dram_latency_ps = 0;
};

/// Estimated time, ps, of `s` in `n` equal chunks through a double-buffered pipeline with one
/// load in flight: the first load, then per chunk the longer of its work and the next chunk's
/// load plus this one's write-back, then the last chunk's work and write-back:
/// T(n) = (lat + l) + (n - 1) max(c, lat + l + w) + c + (lat + w), with l = in/n/bw, w = out/n/bw
/// and c = ceil(work/n / rate) cycles.
inline double stream_estimate_ps(const StreamShape& s, int64_t n) {
    const double nn = static_cast<double>(std::max<int64_t>(1, n));
    const double bw = s.dram_bytes_per_ps;
    const double l = bw > 0 ? static_cast<double>(s.in_bytes) / nn / bw : 0.0, w = bw > 0 ? static_cast<double>(s.out_bytes) / nn / bw : 0.0;
    const double c = std::ceil(static_cast<double>(s.work) / nn / s.ops_per_cycle) * s.cycle_ps;
    const double lat = s.dram_latency_ps;
    return (lat + l) + (nn - 1) * std::max(c, lat + l + w) + c + (lat + w);
}

/// The chunk count for `s` whose estimate (stream_estimate_ps) is least, among counts from
/// `min_chunks` (what a buffer half holds: ceil(in / capacity)) up to 4096 chunks of at least
/// `min_chunk_bytes` (a DRAM transaction); on a tie the fewer chunks. A larger buffer only adds
/// candidates, so it never picks a plan estimated slower.
inline int64_t pick_stream_chunks(const StreamShape& s, int64_t min_chunks, int64_t min_chunk_bytes) {
    const int64_t lo = std::max<int64_t>(1, min_chunks);
    const int64_t hi = std::max(lo, std::min<int64_t>(4096, s.in_bytes / std::max<int64_t>(1, min_chunk_bytes)));
    int64_t best = lo;
    double best_ps = stream_estimate_ps(s, lo);
    for (int64_t n = lo + 1; n <= hi; ++n) {
        const double t = stream_estimate_ps(s, n);
        if (t < best_ps * (1 - 1e-12)) best = n, best_ps = t;
    }
    return best;
}

}  // namespace archsim
