#include "sim/api/plan_pricing.h"

#include <algorithm>

#include "workloads/parallel/plan_space.h"

namespace archsim {

RunKey run_key(const ParallelismSpec& s) { return {s.tp, s.ep, s.microbatch, s.recompute, s.sequence_parts() > 1}; }

std::vector<ChunkRun> modeled_runs(const ParallelPlan& plan, double peak_macs_per_s, const Efficiency& eff) {
    const ParallelismSpec& s = plan.spec;
    const double w = double(plan.model.weight_elem_bytes());
    std::vector<ChunkRun> runs;
    for (const ChunkShape& k : plan.kinds) {
        const ChunkMacs m = chunk_macs(plan.model, s, k);
        const double recompute = eff.bound || s.recompute != "full" ? m.recompute : m.layer_forward;
        ChunkRun r;
        r.forward_ps = m.forward / peak_macs_per_s * 1e12 * eff.forward;
        r.backward_ps = m.backward / peak_macs_per_s * 1e12 * eff.backward;
        r.recompute_ps = recompute / peak_macs_per_s * 1e12 * eff.recompute;
        r.forward_macs = m.forward, r.backward_macs = m.backward, r.recompute_macs = recompute;
        r.params = chunk_parameters(plan.model, s, k);
        r.optimizer_ps = r.params * eff.optimizer_ps_per_param;
        if (!eff.bound) {
            r.weights_bytes = r.gradients_bytes = r.params * w, r.optimizer_state_bytes = r.params * eff.optimizer_bytes_per_param;
            const double per_layer = eff.after_forward_per_layer >= 0 ? eff.after_forward_per_layer : activation_bytes_per_layer_estimate(plan);
            r.saved_after_forward_bytes = stand_in_loss_bytes(plan, k) + double(k.layers) * per_layer;
            r.saved_activations_bytes = r.saved_after_forward_bytes + (eff.backward_extra >= 0 ? eff.backward_extra : backward_extra_bytes_estimate(plan));
            r.workspace_bytes = eff.workspace;
        }
        runs.push_back(r);
    }
    return runs;
}

Efficiency measured(const ParallelPlan& plan, const std::vector<ChunkRun>& runs, double peak_macs_per_s) {
    Efficiency basis;
    basis.bound = false;
    const std::vector<ChunkRun> roof = modeled_runs(plan, peak_macs_per_s, basis);
    double rf = 0, rb = 0, rr = 0, f = 0, b = 0, r = 0, opt_ps = 0, opt_bytes = 0, params = 0;
    Efficiency e;
    e.bound = false, e.after_forward_per_layer = 0, e.backward_extra = 0;
    bool middle = false;  // a chunk without the embedding or the head measures a layer best
    for (const ChunkShape& k : plan.kinds) middle |= !k.embedding && !k.head;
    for (size_t k = 0; k < roof.size(); ++k) {
        rf += roof[k].forward_ps, rb += roof[k].backward_ps, rr += roof[k].recompute_ps;
        f += runs[k].forward_ps + runs[k].loss_ps, b += runs[k].backward_ps, r += runs[k].recompute_ps;
        opt_ps += runs[k].optimizer_ps, opt_bytes += runs[k].optimizer_state_bytes, params += runs[k].params;
        const ChunkShape& sh = plan.kinds[k];
        e.workspace = std::max(e.workspace, runs[k].workspace_bytes);
        e.backward_extra = std::max(e.backward_extra, runs[k].saved_activations_bytes - runs[k].saved_after_forward_bytes);
        if (middle && (sh.embedding || sh.head)) continue;
        e.after_forward_per_layer = std::max(e.after_forward_per_layer,
                                             (runs[k].saved_after_forward_bytes - stand_in_loss_bytes(plan, sh)) / double(std::max<int64_t>(1, sh.layers)));
    }
    e.forward = rf > 0 ? f / rf : 1, e.backward = rb > 0 ? b / rb : 1, e.recompute = rr > 0 ? r / rr : e.forward;
    e.optimizer_ps_per_param = params > 0 ? opt_ps / params : 0, e.optimizer_bytes_per_param = params > 0 ? opt_bytes / params : 0;
    return e;
}

}  // namespace archsim
