#include "sim/api/llm_serving.h"
#include "workloads/load_workload.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "traces/display_units.h"
#include "sim/engine/machine_setup.h"
#include "sim/engine/run_choice.h"
#include "sim/api/process_pool.h"
#include "workloads/generators/llm.h"
#include "workloads/generators/workload_file.h"

namespace archsim {

namespace fs = std::filesystem;

namespace {

bool split(const std::string& model, std::string& file, std::string& name) {
    const WorkloadRef ref = parse_workload_ref(model);
    if (!ref.generated()) return false;
    file = ref.file, name = ref.entry;
    return name.find('@') == std::string::npos;
}

struct Phase {
    double latency_s = 0, energy_j = 0;
};

/// One phase to simulate: a `run` of `model` writing into `dir`.
struct PhaseRun {
    std::string model, dir;
    Phase result;
};

/// Simulates every phase, each a child `run` process, up to one per core at a time (the
/// phases are independent simulations); the longest (the prefill) should come first. Each
/// decides its precision by the one rule (run_choice.h): `precision` is --precision ("": none).
/// Throws UserError naming the first phase that failed, with its log's last line.
void run_phases(std::vector<PhaseRun>& phases, const std::string& arch, const std::string& precision, const std::vector<std::string>& sets,
                int64_t batch, const std::string& detail, bool reference, const std::string& mapper) {
    auto task = [&](size_t i) {
        const PhaseRun& p = phases[i];
        fs::create_directories(p.dir);
        std::vector<std::string> args = {"run", p.model, "--arch", arch, "--out", p.dir, "--format", "json", "--quiet", "--batch",
                                         std::to_string(batch), "--detail", detail};
        if (!precision.empty()) args.insert(args.end(), {"--precision", precision});
        if (reference) args.push_back("--reference");
        args.insert(args.end(), {"--mapper", mapper});
        for (const auto& s : sets) args.insert(args.end(), {"--set", s});
        return ChildTask{args, p.dir + "/report.json", p.dir + "/stderr.log"};
    };
    auto done = [&](size_t i, int status) {
        PhaseRun& p = phases[i];
        if (!exited_ok(status))
            throw UserError(p.model, "this phase failed: " + child_failure(status, p.dir + "/stderr.log") + " (log: " + p.dir + "/stderr.log)");
        std::ifstream in(p.dir + "/metrics.json");
        const auto m = nlohmann::json::parse(in);
        p.result = {m["total"]["latency_s"].get<double>(), m["total"]["energy_j"].get<double>()};
    };
    run_children(self_program(), phases.size(), 0, task, done);
}

}  // namespace

bool is_llm_workload(const std::string& model) {
    std::string file, name;
    if (!split(model, file, name)) return false;
    LlmShape shape;
    int64_t batch = 1;
    return read_llm_entry(file, name, shape, batch);
}

std::string llm_training_workload(const std::string& model, const std::vector<std::string>& sets, bool& train) {
    std::string file, name;
    split(model, file, name);
    LlmShape s;
    int64_t batch = 1;
    read_llm_entry(file, name, s, batch, sets);
    if (s.generate == 0 || read_workload_run_fields(file, name, sets).train) train = true;
    return model + "@train";
}

nlohmann::json run_llm_serving(const WorkloadArgs& w, const std::string& arch, const std::string& out_dir, const std::string& precision,
                               const std::vector<std::string>& sets, const std::string& detail, bool reference,
                               const std::string& mapper, const std::function<void(const std::string&)>& note) {
    if (!w.workload_sets.empty())
        throw UserError(w.model, "workload sets ('" + w.workload_sets.front() + "') are not applied to an llm entry's serving phases; "
                                 "write the value into the entry");
    std::string file, name;
    split(w.model, file, name);
    LlmShape s;
    int64_t batch = 1;
    read_llm_entry(file, name, s, batch);
    if (w.batch > 0) batch = w.batch;
    // the precision every phase runs at, by the one rule (run_choice.h); each phase decides the same
    std::vector<KeyOverride> overrides = set_overrides(sets);
    const RunChoice prec_choice = choose_precision(precision, overrides, read_workload_run_fields(file, name).precision, name,
                                                   load_machine(arch, "", overrides), false);
    const std::string prec = prec_choice.value;
    fs::create_directories(out_dir);
    if (note) note(fmt::format("{}: prefill of {} tokens and {} decode steps, batch {}, {}", w.model, s.prompt, s.generate - 1, batch, prec));
    // decode step t (t = 0 .. generate-2) attends over prompt + t cached tokens
    const int64_t steps = std::max<int64_t>(0, s.generate - 1);
    const std::vector<int64_t> points = decode_step_samples(steps);
    std::vector<PhaseRun> phases{{w.model + "@prefill", out_dir + "/prefill", {}}};
    for (int64_t t : points)
        phases.push_back({w.model + "@decode=" + std::to_string(s.prompt + t), out_dir + "/decode_kv" + std::to_string(s.prompt + t), {}});
    run_phases(phases, arch, precision, sets, batch, detail, reference, mapper);
    const Phase prefill = phases[0].result;
    std::map<int64_t, Phase> sampled;
    for (size_t i = 0; i < points.size(); ++i) sampled[points[i]] = phases[i + 1].result;
    double decode_s = 0, decode_j = 0;
    for (int64_t t = 0; t < steps; ++t) {
        auto hi = sampled.lower_bound(t);
        if (hi->first == t) {
            decode_s += hi->second.latency_s, decode_j += hi->second.energy_j;
            continue;
        }
        auto lo = std::prev(hi);
        const double f = double(t - lo->first) / double(hi->first - lo->first);
        decode_s += lo->second.latency_s + f * (hi->second.latency_s - lo->second.latency_s);
        decode_j += lo->second.energy_j + f * (hi->second.energy_j - lo->second.energy_j);
    }
    const double tokens = double(batch * s.generate);
    const double total_s = prefill.latency_s + decode_s, total_j = prefill.energy_j + decode_j;
    nlohmann::json j;
    j["model"] = w.model, j["config"] = arch, j["precision"] = prec, j["precision_from"] = prec_choice.from, j["batch"] = batch;
    j["prompt_tokens"] = s.prompt, j["generated_tokens"] = s.generate, j["parameters"] = s.parameters();
    j["time_to_first_token_s"] = prefill.latency_s;
    j["time_per_output_token_s"] = steps ? decode_s / double(steps) : 0.0;
    j["tokens_per_s"] = total_s > 0 ? tokens / total_s : 0.0;
    j["energy_per_token_j"] = tokens > 0 ? total_j / tokens : 0.0;
    j["prefill"] = {{"latency_s", prefill.latency_s}, {"energy_j", prefill.energy_j}};
    j["decode"] = {{"steps", steps}, {"latency_s", decode_s}, {"energy_j", decode_j}};
    for (const auto& [t, p] : sampled)
        j["decode_points"].push_back({{"kv_length", s.prompt + t}, {"latency_s", p.latency_s}, {"energy_j", p.energy_j}});
    write_file_atomically(out_dir + "/llm.json", j.dump(2) + "\n");
    return j;
}

}  // namespace archsim
