#include "tools/archsim/training_report.h"

#include <fmt/format.h>

#include <map>

#include "traces/reducer.h"
#include "workloads/training/training_step.h"

namespace archsim::cli {

nlohmann::ordered_json training_json(const TrainingStep& step, const Metrics& m) {
    const double step_s = m.latency_ps * 1e-12;
    const double peak_flops = 2.0 * m.peak_macs_per_cycle * m.clock_hz;
    const int64_t model_flops = 2 * (step.forward_macs + step.backward_macs);
    struct Phase {
        double latency_ps = 0, energy_pj = 0, compute_ps = 0;
        int64_t macs = 0;
        size_t ops = 0;
    };
    std::map<TrainingPhase, Phase> phases;
    for (const TrainingPhase p : {TrainingPhase::Forward, TrainingPhase::Loss, TrainingPhase::Backward, TrainingPhase::Optimizer})
        phases[p];
    for (const OpMetrics& o : m.ops) {
        Phase& p = phases[training_phase(o.name)];
        p.latency_ps += o.latency_ps, p.energy_pj += o.energy_pj, p.macs += o.macs, ++p.ops;
        if (o.bound == "compute") p.compute_ps += o.latency_ps;
    }
    nlohmann::ordered_json j;
    j["optimizer"] = step.optimizer;
    j["loss"] = step.loss;
    j["samples_per_step"] = step.samples;
    j["samples_per_s"] = step_s > 0 ? static_cast<double>(step.samples) / step_s : 0.0;
    if (step.tokens > 0) {
        j["tokens_per_step"] = step.tokens;
        j["tokens_per_s"] = step_s > 0 ? static_cast<double>(step.tokens) / step_s : 0.0;
    }
    j["params"] = step.params;
    j["model_flops"] = model_flops;
    j["hardware_flops"] = 2 * m.macs;
    j["mfu"] = step_s > 0 && peak_flops > 0 ? static_cast<double>(model_flops) / (step_s * peak_flops) : 0.0;
    j["energy_j"] = m.energy_pj * 1e-12;
    nlohmann::ordered_json ph;
    for (const auto& [p, v] : phases)
        ph[to_string(p)] = {{"latency_s", v.latency_ps * 1e-12},
                            {"energy_j", v.energy_pj * 1e-12},
                            {"macs", v.macs},
                            {"operators", v.ops},
                            {"compute_bound_share", v.latency_ps > 0 ? v.compute_ps / v.latency_ps : 0.0}};
    j["phases"] = ph;
    j["no_gradient"] = step.no_gradient;
    j["not_modeled"] = "memory footprint by category, activation recomputation and gradient accumulation (issue 16, to come)";
    return j;
}

std::string training_text(const nlohmann::ordered_json& t) {
    std::string out = fmt::format("\ntraining step ({} loss, {}): {:.6g} samples/s", t["loss"].get<std::string>(),
                                  t["optimizer"].get<std::string>(), t["samples_per_s"].get<double>());
    if (t.contains("tokens_per_s")) out += fmt::format(", {:.6g} tokens/s", t["tokens_per_s"].get<double>());
    out += fmt::format(", model {:.6g} GFLOP, hardware {:.6g} GFLOP, MFU {:.2f}%\n", t["model_flops"].get<int64_t>() * 1e-9,
                       t["hardware_flops"].get<int64_t>() * 1e-9, 100 * t["mfu"].get<double>());
    out += fmt::format("  {:<10} {:>12} {:>12} {:>16} {:>14}\n", "phase", "time ms", "energy mJ", "MACs", "compute-bound");
    for (const auto& [name, p] : t["phases"].items())
        out += fmt::format("  {:<10} {:>12.4f} {:>12.4f} {:>16} {:>13.1f}%\n", name, p["latency_s"].get<double>() * 1e3,
                           p["energy_j"].get<double>() * 1e3, p["macs"].get<int64_t>(), 100 * p["compute_bound_share"].get<double>());
    if (!t["no_gradient"].empty())
        out += fmt::format("  forward only (no gradient rule, --allow-unsupported): {} operator(s)\n", t["no_gradient"].size());
    out += "  not modeled yet: " + t["not_modeled"].get<std::string>() + "\n";
    return out;
}

}  // namespace archsim::cli
