#include "workloads/parallel/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

namespace archsim {

const std::vector<std::string>& pipeline_schedule_names() {
    static const std::vector<std::string> n = {"gpipe", "1f1b", "interleaved"};
    return n;
}

double bubble_fraction(int64_t pp, int64_t v, int64_t m) { return double(pp - 1) / double(v * m); }

std::vector<std::vector<PipeOp>> pipeline_schedule(const std::string& schedule, int64_t pp, int64_t v, int64_t m) {
    if (pp < 1 || v < 1 || m < 1) throw std::invalid_argument("pipeline_schedule: pp, v and m must be >= 1");
    if (schedule != "interleaved" && v != 1) throw std::invalid_argument("pipeline_schedule: virtual stages need the interleaved schedule");
    if (schedule == "interleaved" && m % pp != 0) throw std::invalid_argument("pipeline_schedule: interleaved needs microbatches divisible by pp");
    std::vector<std::vector<PipeOp>> out(pp);
    for (int64_t r = 0; r < pp; ++r) {
        auto& ops = out[r];
        if (schedule == "gpipe") {
            for (int64_t i = 0; i < m; ++i) ops.push_back({true, 0, i});
            for (int64_t i = m - 1; i >= 0; --i) ops.push_back({false, 0, i});
        } else if (schedule == "1f1b") {
            const int64_t warm = std::min(pp - r - 1, m);
            for (int64_t i = 0; i < warm; ++i) ops.push_back({true, 0, i});
            for (int64_t i = 0; i < m - warm; ++i) {
                ops.push_back({true, 0, warm + i});
                ops.push_back({false, 0, i});
            }
            for (int64_t i = m - warm; i < m; ++i) ops.push_back({false, 0, i});
        } else if (schedule == "interleaved") {
            const int64_t total = m * v, group = pp * v;
            auto mb = [&](int64_t k) { return (k / group) * pp + k % pp; };
            auto fwd_chunk = [&](int64_t k) { return (k % group) / pp; };
            const int64_t warm = m == pp ? total : std::min(total, (pp - r - 1) * 2 + (v - 1) * pp);
            for (int64_t k = 0; k < warm; ++k) ops.push_back({true, fwd_chunk(k), mb(k)});
            for (int64_t i = 0; i < total - warm; ++i) {
                ops.push_back({true, fwd_chunk(warm + i), mb(warm + i)});
                ops.push_back({false, v - 1 - fwd_chunk(i), mb(i)});
            }
            for (int64_t k = total - warm; k < total; ++k) ops.push_back({false, v - 1 - fwd_chunk(k), mb(k)});
        } else {
            throw std::invalid_argument("pipeline_schedule: unknown schedule " + schedule);
        }
    }
    return out;
}

}  // namespace archsim
