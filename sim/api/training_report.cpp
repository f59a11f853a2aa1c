#include "sim/api/training_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "traces/reducer.h"
#include "workloads/graph/op_graph.h"
#include "workloads/training/memory_footprint.h"
#include "workloads/training/training_step.h"

namespace archsim {

namespace {

nlohmann::ordered_json bytes_json(const MemoryBytes& b) {
    return {{"weights_bytes", b.weights},
            {"gradients_bytes", b.gradients},
            {"optimizer_state_bytes", b.optimizer_state},
            {"saved_activations_bytes", b.saved_activations},
            {"workspace_bytes", b.workspace}};
}

}  // namespace

nlohmann::ordered_json training_json(const TrainingStep& step, const OpGraph& plan, const Metrics& m, const MemoryFootprint& mem,
                                     double capacity_bytes) {
    const double peak_flops = 2.0 * m.peak_macs_per_cycle * m.clock_hz;
    const int64_t model_flops = 2 * (step.forward_macs + step.backward_macs);
    struct Phase {
        double latency_ps = 0, energy_pj = 0, compute_ps = 0;
        int64_t macs = 0, flops = 0;
        size_t ops = 0;
    };
    std::map<TrainingPhase, Phase> phases;
    for (const TrainingPhase p : {TrainingPhase::Forward, TrainingPhase::Loss, TrainingPhase::Backward, TrainingPhase::Optimizer})
        phases[p];
    if (step.recompute != "none") phases[TrainingPhase::Recompute];
    if (step.setup) phases[TrainingPhase::Setup];
    std::map<std::string, int64_t> flops_of;  // kernel name -> its floating-point operations
    std::map<std::string, TrainingPhase> phase_of;  // kernel name -> the phase it runs in
    for (const Operator& k : plan.ops()) flops_of[k.name] = k.cost.flops, phase_of[k.name] = k.phase;
    for (const OpMetrics& o : m.ops) {
        const auto known = phase_of.find(o.name);
        Phase& p = phases[known != phase_of.end() ? known->second : TrainingPhase::Forward];  // every kernel is the plan's
        p.latency_ps += o.latency_ps, p.energy_pj += o.energy_pj, p.macs += o.macs, ++p.ops;
        if (auto it = flops_of.find(o.name); it != flops_of.end()) p.flops += it->second;
        if (o.bound == "compute") p.compute_ps += o.latency_ps;
    }
    // kernels run one after another, the setup's first: the step is the rest of the run
    const double setup_ps = step.setup ? phases[TrainingPhase::Setup].latency_ps : 0.0;
    const double step_s = std::max(0.0, m.latency_ps - setup_ps) * 1e-12;
    nlohmann::ordered_json j;
    j["optimizer"] = step.optimizer;
    j["loss"] = step.loss;
    j["recompute"] = step.recompute;
    j["microbatches"] = step.microbatches;
    j["mixed_precision"] = step.mixed_precision;
    j["setup_included"] = step.setup;
    j["step_time_s"] = step_s;
    j["samples_per_step"] = step.samples;
    j["samples_per_s"] = step_s > 0 ? static_cast<double>(step.samples) / step_s : 0.0;
    if (step.tokens > 0) {
        j["tokens_per_step"] = step.tokens;
        j["tokens_per_s"] = step_s > 0 ? static_cast<double>(step.tokens) / step_s : 0.0;
    }
    j["params"] = step.params;
    j["model_flops"] = model_flops;
    j["hardware_flops"] = 2 * m.macs;
    j["recompute_flops"] = 2 * step.recompute_macs;
    j["mfu"] = step_s > 0 && peak_flops > 0 ? static_cast<double>(model_flops) / (step_s * peak_flops) : 0.0;
    j["hfu"] = step_s > 0 && peak_flops > 0 ? static_cast<double>(2 * m.macs) / (step_s * peak_flops) : 0.0;
    j["energy_j"] = (m.energy_pj - (step.setup ? phases[TrainingPhase::Setup].energy_pj : 0.0)) * 1e-12;
    nlohmann::ordered_json ph;
    for (const auto& [p, v] : phases)
        ph[to_string(p)] = {{"latency_s", v.latency_ps * 1e-12},
                            {"energy_j", v.energy_pj * 1e-12},
                            {"macs", v.macs},
                            {"flops", v.flops},
                            {"utilization", v.latency_ps > 0 && peak_flops > 0 ? 2.0 * v.macs / (v.latency_ps * 1e-12 * peak_flops) : 0.0},
                            {"operators", v.ops},
                            {"compute_bound_share", v.latency_ps > 0 ? v.compute_ps / v.latency_ps : 0.0}};
    j["phases"] = ph;
    nlohmann::ordered_json mj;
    mj["peak_bytes"] = mem.peak_bytes;
    mj["peak_kernel"] = mem.peak_kernel;
    mj["at_peak"] = bytes_json(mem.at_peak);
    mj["largest"] = bytes_json(mem.largest);
    mj["saved_after_forward_bytes"] = mem.saved_after_forward;
    mj["capacity_bytes"] = capacity_bytes;
    if (capacity_bytes > 0) mj["fits"] = static_cast<double>(mem.peak_bytes) <= capacity_bytes;
    j["memory"] = mj;
    j["no_gradient"] = step.no_gradient;
    j["not_modeled"] = "a library's scratch workspace inside a kernel and allocator fragmentation are not in the footprint; "
                       "a fused attention kernel's softmax statistics (4 bytes per query row) are not in it either";
    return j;
}

std::string training_text(const nlohmann::ordered_json& t) {
    std::string out = fmt::format("\ntraining step ({} loss, {}{}): {:.6g} ms{}, {:.6g} samples/s", t["loss"].get<std::string>(),
                                  t["optimizer"].get<std::string>(),
                                  t["microbatches"].get<int64_t>() > 1
                                      ? fmt::format(", {} microbatches", t["microbatches"].get<int64_t>())
                                      : std::string(),
                                  t["step_time_s"].get<double>() * 1e3,
                                  t["setup_included"].get<bool>() ? " after the setup (total.latency_s covers both)" : "",
                                  t["samples_per_s"].get<double>());
    if (t.contains("tokens_per_s")) out += fmt::format(", {:.6g} tokens/s", t["tokens_per_s"].get<double>());
    out += fmt::format(", model {:.6g} GFLOP, hardware {:.6g} GFLOP, MFU {:.2f}% (model FLOPs), HFU {:.2f}% (hardware FLOPs)\n",
                       t["model_flops"].get<int64_t>() * 1e-9, t["hardware_flops"].get<int64_t>() * 1e-9, 100 * t["mfu"].get<double>(),
                       100 * t["hfu"].get<double>());
    out += fmt::format("  {:<10} {:>12} {:>12} {:>16} {:>16} {:>8} {:>14}\n", "phase", "time ms", "energy mJ", "MACs", "FLOPs", "util",
                       "compute-bound");
    for (const auto& [name, p] : t["phases"].items())
        out += fmt::format("  {:<10} {:>12.4f} {:>12.4f} {:>16} {:>16} {:>7.1f}% {:>13.1f}%\n", name, p["latency_s"].get<double>() * 1e3,
                           p["energy_j"].get<double>() * 1e3, p["macs"].get<int64_t>(), p["flops"].get<int64_t>(),
                           100 * p["utilization"].get<double>(), 100 * p["compute_bound_share"].get<double>());
    const auto& mem = t["memory"];
    const auto& at = mem["at_peak"];
    out += fmt::format("  memory peak {:.4g} GiB at '{}': weights {:.4g}, gradients {:.4g}, optimizer state {:.4g}, saved activations "
                       "{:.4g}, workspace {:.4g} GiB",
                       mem["peak_bytes"].get<int64_t>() / kBytesPerGiB, mem["peak_kernel"].get<std::string>(),
                       at["weights_bytes"].get<int64_t>() / kBytesPerGiB, at["gradients_bytes"].get<int64_t>() / kBytesPerGiB,
                       at["optimizer_state_bytes"].get<int64_t>() / kBytesPerGiB,
                       at["saved_activations_bytes"].get<int64_t>() / kBytesPerGiB, at["workspace_bytes"].get<int64_t>() / kBytesPerGiB);
    if (mem.contains("fits"))
        out += fmt::format("; {} the machine's {:.4g} GiB\n", mem["fits"].get<bool>() ? "fits in" : "DOES NOT FIT in",
                           mem["capacity_bytes"].get<double>() / kBytesPerGiB);
    else
        out += "; the machine gives no memory capacity (not checked)\n";
    if (t["recompute"].get<std::string>() != "none")
        out += fmt::format("  {} recomputation: {:.6g} GFLOP recomputed (hardware, not model, FLOPs)\n", t["recompute"].get<std::string>(),
                           t["recompute_flops"].get<int64_t>() * 1e-9);
    if (!t["no_gradient"].empty())
        out += fmt::format("  forward only (no gradient rule, --allow-unsupported): {} operator(s)\n", t["no_gradient"].size());
    out += "  not modeled yet: " + t["not_modeled"].get<std::string>() + "\n";
    return out;
}

}  // namespace archsim
