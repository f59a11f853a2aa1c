#include "tools/archsim/llm_run.h"
#include "workloads/load_workload.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "sim/base/error.h"
#include "traces/display_units.h"
#include "sim/engine/machine_setup.h"
#include "sim/engine/run_choice.h"
#include "tools/archsim/spawn.h"
#include "workloads/generators/llm.h"
#include "workloads/generators/workload_file.h"

namespace archsim::cli {

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
void run_phases(const std::string& self, std::vector<PhaseRun>& phases, const std::string& arch, const std::string& precision,
                const std::vector<std::string>& sets, int64_t batch, const std::string& detail, bool reference) {
    const size_t jobs = std::max(1u, std::thread::hardware_concurrency());
    std::map<pid_t, size_t> running;
    size_t next = 0;
    while (next < phases.size() || !running.empty()) {
        while (next < phases.size() && running.size() < jobs) {
            const PhaseRun& p = phases[next];
            fs::create_directories(p.dir);
            std::vector<std::string> args = {"run", p.model, "--arch", arch, "--out", p.dir, "--format", "json", "--quiet", "--batch",
                                             std::to_string(batch), "--detail", detail};
            if (!precision.empty()) args.insert(args.end(), {"--precision", precision});
            if (reference) args.push_back("--reference");
            for (const auto& s : sets) args.insert(args.end(), {"--set", s});
            running[spawn_self(self, args, p.dir + "/report.json", p.dir + "/stderr.log")] = next++;
        }
        int status = 0;
        const pid_t pid = waitpid(-1, &status, 0);
        auto it = running.find(pid);
        if (it == running.end()) continue;
        PhaseRun& p = phases[it->second];
        running.erase(it);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            throw UserError(p.model, "this phase failed: " + child_failure(status, p.dir + "/stderr.log") + " (log: " + p.dir + "/stderr.log)");
        std::ifstream in(p.dir + "/metrics.json");
        const auto m = nlohmann::json::parse(in);
        p.result = {m["total"]["latency_s"].get<double>(), m["total"]["energy_j"].get<double>()};
    }
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

int cmd_run_llm(const WorkloadArgs& w, const std::string& arch, const std::string& out_dir, const std::string& precision,
                const std::vector<std::string>& sets, const std::string& format, const std::string& detail, bool reference) {
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
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    fs::create_directories(out_dir);
    std::fprintf(stderr, "archsim: %s: prefill of %lld tokens and %lld decode steps, batch %lld, %s\n", w.model.c_str(),
                 static_cast<long long>(s.prompt), static_cast<long long>(s.generate - 1), static_cast<long long>(batch), prec.c_str());
    // decode step t (t = 0 .. generate-2) attends over prompt + t cached tokens
    const int64_t steps = std::max<int64_t>(0, s.generate - 1);
    const std::vector<int64_t> points = decode_step_samples(steps);
    std::vector<PhaseRun> phases{{w.model + "@prefill", out_dir + "/prefill", {}}};
    for (int64_t t : points)
        phases.push_back({w.model + "@decode=" + std::to_string(s.prompt + t), out_dir + "/decode_kv" + std::to_string(s.prompt + t), {}});
    run_phases(self, phases, arch, precision, sets, batch, detail, reference);
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
    std::ofstream(out_dir + "/llm.json") << j.dump(2) << "\n";
    if (format == "json") {
        std::fputs((j.dump(2) + "\n").c_str(), stdout);
        return 0;
    }
    // the unit policy (docs/units.md): three significant digits in an engineering unit
    std::string out = fmt::format("{} ({} parameters), batch {}, {} prompt + {} generated tokens, {}\n", w.model,
                                  with_unit(double(s.parameters()), ""), batch, s.prompt, s.generate, prec);
    out += fmt::format("time to first token    {} (prefill, {})\n", with_unit(prefill.latency_s, "s"), with_unit(prefill.energy_j, "J"));
    out += fmt::format("time per output token  {} (mean of {} decode steps)\n", with_unit(steps ? decode_s / double(steps) : 0.0, "s"), steps);
    out += fmt::format("tokens per second      {} (batch x generated over the whole request)\n",
                       in_unit(total_s > 0 ? tokens / total_s : 0.0, DisplayUnit{"", 1}));
    out += fmt::format("energy per token       {}\n", with_unit(tokens > 0 ? total_j / tokens : 0.0, "J"));
    out += "decode step at KV length:";
    for (const auto& [t, p] : sampled) out += fmt::format("  {}: {}", s.prompt + t, with_unit(p.latency_s, "s", 5));
    out += fmt::format("\nwrote {}/llm.json, per-phase traces under {}/prefill and {}/decode_kv*\n", out_dir, out_dir, out_dir);
    std::fputs(out.c_str(), stdout);
    return 0;
}

}  // namespace archsim::cli
