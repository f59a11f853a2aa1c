#include "workloads/training/memory_footprint.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace archsim {

MemoryFootprint memory_footprint(const OpGraph& plan, const TrainingStep& step, int64_t float_bytes) {
    const std::vector<Tensor>& tensors = plan.tensors();
    const std::vector<int32_t>& order = plan.topo_order();
    const size_t nt = tensors.size(), n = order.size();
    auto category = [&](size_t t) { return t < step.category.size() ? step.category[t] : MemoryCategory::Activations; };
    auto root = [&](size_t t) { return t < step.storage.size() ? static_cast<size_t>(step.storage[t]) : t; };
    auto bytes = [&](const Tensor& t) { return t.bytes_at(float_bytes); };

    MemoryBytes held;  // for the whole step
    for (size_t t = 0; t < nt; ++t) {
        if (root(t) != t) continue;
        switch (category(t)) {
            case MemoryCategory::Weights: held.weights += bytes(tensors[t]); break;
            case MemoryCategory::Gradients: held.gradients += bytes(tensors[t]); break;
            case MemoryCategory::OptimizerState: held.optimizer_state += bytes(tensors[t]); break;
            case MemoryCategory::Activations: break;
        }
    }

    // each activation buffer's lifetime (positions in the schedule) and whether it is saved
    constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
    std::vector<int64_t> first(nt, kNever), last(nt, -1);
    std::vector<uint8_t> made_forward(nt, 0), read_backward(nt, 0);
    for (size_t t = 0; t < nt; ++t)
        if (tensors[t].role == TensorRole::Input) made_forward[root(t)] = 1;
    for (size_t p = 0; p < n; ++p) {
        const Operator& k = plan.ops()[static_cast<size_t>(order[p])];
        const TrainingPhase phase = k.phase;
        const int64_t at = static_cast<int64_t>(p);
        for (const int32_t t : k.outputs) {
            if (t < 0) continue;
            const size_t r = root(static_cast<size_t>(t));
            first[r] = std::min(first[r], at), last[r] = std::max(last[r], at);
            // a value the forward pass or a recomputation makes
            if (phase == TrainingPhase::Forward || phase == TrainingPhase::Recompute) made_forward[r] |= phase == TrainingPhase::Recompute ? 2 : 1;
        }
        for (const int32_t t : k.inputs) {
            if (t < 0) continue;
            const size_t r = root(static_cast<size_t>(t));
            first[r] = std::min(first[r], at);  // a model input: from its first reader (a microbatch's, when it runs)
            last[r] = std::max(last[r], at);
            // read by the loss or the backward pass (a recomputed value: by the backward pass proper)
            if (phase == TrainingPhase::Loss || phase == TrainingPhase::Backward) read_backward[r] = 1;
            if (phase == TrainingPhase::Recompute && (made_forward[r] & 1)) read_backward[r] = 1;
        }
    }
    std::vector<int64_t> saved(n + 1, 0), work(n + 1, 0);
    for (size_t t = 0; t < nt; ++t) {
        if (root(t) != t || category(t) != MemoryCategory::Activations || last[t] < 0 || first[t] == kNever) continue;
        std::vector<int64_t>& d = made_forward[t] && read_backward[t] ? saved : work;
        const int64_t b = bytes(tensors[t]);
        d[static_cast<size_t>(first[t])] += b;
        d[static_cast<size_t>(last[t]) + 1] -= b;
    }

    MemoryFootprint f;
    f.at_peak = f.largest = held;
    f.peak_bytes = held.total();
    int64_t s = 0, w = 0;
    for (size_t p = 0; p < n; ++p) {
        s += saved[p], w += work[p];
        if (plan.ops()[static_cast<size_t>(order[p])].phase == TrainingPhase::Forward) f.saved_after_forward = s;
        f.largest.saved_activations = std::max(f.largest.saved_activations, s);
        f.largest.workspace = std::max(f.largest.workspace, w);
        if (held.total() + s + w > f.peak_bytes) {
            f.peak_bytes = held.total() + s + w;
            f.at_peak.saved_activations = s, f.at_peak.workspace = w;
            f.peak_kernel = plan.ops()[static_cast<size_t>(order[p])].name;
        }
    }
    return f;
}

}  // namespace archsim
