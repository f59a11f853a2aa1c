#pragma once
// An iteration's cost from archsim's own device runs: the kernels of one forward pass fall in
// three classes by what their work scales with (the token-linear kernels with the tokens, the LM
// head with the tokens it runs on, attention with the KV tokens attended), and the GPU runs them
// one after another, so an iteration costs the sum of its classes. Each class is sampled by
// device runs (prefill runs at several prompt lengths, decode runs on a grid of batch x KV length)
// and interpolated piecewise linearly between the simulated points, never fitted to a curve.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/serving/serving_sim.h"

namespace archsim {

/// What a kernel's work scales with.
enum class KernelClass { Linear, Head, Attention };

/// The class of kernel `name` (op type `op_type`) of a graph of the llm generator
/// (workloads/generators/llm.h): an attention kernel (op type "Attention", the runtime's fused
/// kernel) attends over the KV cache; the LM head (the contraction outside the layers, "/layers."
/// not in its name) runs on the tokens that produce an output; every other kernel (the embedding,
/// the layers' projections, FFN and norms, the final norm, which a prefill runs on every token) is
/// token-linear.
KernelClass kernel_class(const std::string& name, const std::string& op_type);

/// A device run's time (s) and energy (J) summed per class.
struct ClassCost {
    double time_s[3] = {0, 0, 0}, energy_j[3] = {0, 0, 0};
    void add(KernelClass c, double time_s_, double energy_j_) {
        time_s[int(c)] += time_s_, energy_j[int(c)] += energy_j_;
    }
};

/// One simulated point of a class: at `x`, `time_s` and `energy_j`.
struct CostPoint {
    double x = 0, time_s = 0, energy_j = 0;
};

/// Piecewise-linear interpolation of `points` (sorted by x) at `x`, extrapolated along the nearest
/// segment beyond the ends and never below 0; a single point is returned as is; none: zeros.
CostPoint interpolate(const std::vector<CostPoint>& points, double x);

/// The cost of an iteration of one model replica on one device, from its device runs.
class IterationCostModel {
public:
    /// A prefill run at batch 1 of `prompt` tokens: its linear kernels at `prompt` tokens, its head
    /// at one token, its attention at a causal prefill of `prompt` tokens.
    void add_prefill_run(int64_t prompt, const ClassCost& c);
    /// A decode run of `batch` sequences over `kv` cached tokens each: linear and head at `batch`
    /// tokens, attention at batch x kv.
    void add_decode_run(int64_t batch, int64_t kv, const ClassCost& c);

    /// The iteration's time and energy: linear(tokens) + head(head_tokens) + decode attention at
    /// (decode_seqs, decode_kv_tokens / decode_seqs) (bilinear over the batch x KV grid) + for each
    /// prefill chunk of c tokens after o cached ones, prefill attention at the prompt length whose
    /// causal attention has the same score count, sqrt(c^2 + 2 c o).
    IterationCostValue operator()(const IterationShape& s) const;

    /// Points per class, for reports.
    size_t linear_points() const { return m_linear.size(); }

private:
    std::vector<CostPoint> m_linear, m_head, m_prefill_attention;
    std::map<int64_t, std::vector<CostPoint>> m_decode_attention;  ///< per batch: points along the KV length
    CostPoint decode_attention(double seqs, double kv_per_seq) const;
};

}  // namespace archsim
