#include "sim/serving/iteration_cost.h"

#include <algorithm>
#include <cmath>

namespace archsim {

KernelClass kernel_class(const std::string& name, const std::string& op_type) {
    if (op_type == "Attention" || op_type == "AttentionGrad") return KernelClass::Attention;
    if (name.find("/layers.") == std::string::npos && (op_type.find("MatMul") != std::string::npos || op_type.find("Gemm") != std::string::npos))
        return KernelClass::Head;  // the LM head, the one contraction outside the layers
    return KernelClass::Linear;
}

CostPoint interpolate(const std::vector<CostPoint>& p, double x) {
    if (p.empty()) return {x, 0, 0};
    if (p.size() == 1) return {x, p[0].time_s, p[0].energy_j};
    size_t hi = 1;
    while (hi + 1 < p.size() && p[hi].x < x) ++hi;
    const CostPoint &a = p[hi - 1], &b = p[hi];
    const double f = b.x != a.x ? (x - a.x) / (b.x - a.x) : 0.0;
    return {x, std::max(0.0, a.time_s + f * (b.time_s - a.time_s)), std::max(0.0, a.energy_j + f * (b.energy_j - a.energy_j))};
}

namespace {

/// Inserts `q` into `points` (sorted by x) in order; with `once`, not when a point at its x is there.
void insert_sorted(std::vector<CostPoint>& points, const CostPoint& q, bool once = false) {
    const auto at = std::lower_bound(points.begin(), points.end(), q.x, [](const CostPoint& a, double x) { return a.x < x; });
    if (once && at != points.end() && at->x == q.x) return;
    points.insert(at, q);
}

}  // namespace

void IterationCostModel::add_prefill_run(int64_t prompt, const ClassCost& c) {
    const double p = double(prompt);
    insert_sorted(m_linear, {p, c.time_s[0], c.energy_j[0]});
    insert_sorted(m_head, {1, c.time_s[1], c.energy_j[1]}, true);
    insert_sorted(m_prefill_attention, {p, c.time_s[2], c.energy_j[2]});
}

void IterationCostModel::add_decode_run(int64_t batch, int64_t kv, const ClassCost& c) {
    const double b = double(batch);
    // the token-linear kernels and the head do not depend on the KV length: one point per batch
    insert_sorted(m_linear, {b, c.time_s[0], c.energy_j[0]}, true);
    insert_sorted(m_head, {b, c.time_s[1], c.energy_j[1]}, true);
    insert_sorted(m_decode_attention[batch], {double(kv), c.time_s[2], c.energy_j[2]});
}

CostPoint IterationCostModel::decode_attention(double seqs, double kv_per_seq) const {
    // interpolate along the KV length at each simulated batch, then along the batch
    std::vector<CostPoint> along_batch;
    for (const auto& [b, pts] : m_decode_attention) {
        const CostPoint at = interpolate(pts, kv_per_seq);
        along_batch.push_back({double(b), at.time_s, at.energy_j});
    }
    return interpolate(along_batch, seqs);
}

IterationCostValue IterationCostModel::operator()(const IterationShape& s) const {
    IterationCostValue v;
    auto add = [&](const CostPoint& p) {
        v.time_s += p.time_s, v.energy_j += p.energy_j;
    };
    if (s.tokens > 0) add(interpolate(m_linear, double(s.tokens)));
    if (s.head_tokens > 0) add(interpolate(m_head, double(s.head_tokens)));
    if (s.decode_seqs > 0) add(decode_attention(double(s.decode_seqs), double(s.decode_kv_tokens) / double(s.decode_seqs)));
    for (const PrefillChunk& c : s.prefill) {
        const double eq = std::sqrt(double(c.tokens) * double(c.tokens) + 2.0 * double(c.tokens) * double(c.offset));
        add(interpolate(m_prefill_attention, eq));
    }
    return v;
}

}  // namespace archsim
