#include "tools/archsim/job_run.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "arch/cluster/cluster_config.h"
#include "arch/cluster/targets.h"
#include "sim/cluster/job_builder.h"
#include "sim/cluster/job_sim.h"
#include "sim/common/atomic_file.h"
#include "sim/common/error.h"
#include "tools/archsim/commands.h"
#include "tools/archsim/spawn.h"
#include "workloads/jobs/llm_job.h"
#include "workloads/parallel/pipeline_schedule.h"

namespace archsim::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool on_off(const std::string& v, const std::string& flag, bool def) {
    if (v.empty()) return def;
    if (v == "on" || v == "true" || v == "1") return true;
    if (v == "off" || v == "false" || v == "0") return false;
    throw UserError(flag + " " + v, "must be on or off");
}

/// The job's model as an llm entry of archsim's workload format, for the device runs.
std::string workload_toml(const LlmJob& j) {
    const LlmShape& m = j.model;
    std::string t = fmt::format("# written by archsim run {} for its device simulations\n[job]\nfamily = \"llm\"\nmodel_family = \"{}\"\n", j.where(), m.model_family);
    t += fmt::format("hidden = {}\nlayers = {}\nheads = {}\nkv_heads = {}\nffn = {}\nvocab = {}\n", m.hidden, m.layers, m.heads, m.kv_heads, m.ffn, m.vocab);
    if (m.model_family == "moe") t += fmt::format("experts = {}\ntop_k = {}\n", m.experts, m.top_k);
    if (m.model_family == "gpt") t += fmt::format("max_positions = {}\n", std::max(m.max_positions, m.prompt + m.generate));
    t += fmt::format("dropout = {}\nsequence = {{ prompt = {}, generate = 0 }}\n", m.dropout, m.prompt);
    t += fmt::format("precision = {{ weights = \"{}\", activations = \"{}\" }}\n", m.weights_precision, m.activations_precision);
    return t;
}

double phase(const json& t, const char* name, const char* key) {
    const auto it = t["phases"].find(name);
    return it == t["phases"].end() ? 0.0 : it->value(key, 0.0);
}

ChunkRun read_chunk_run(const std::string& metrics_path) {
    std::ifstream in(metrics_path);
    const json m = json::parse(in);
    const json& t = m.at("training");
    ChunkRun r;
    r.forward_ps = phase(t, "forward", "latency_s") * 1e12, r.forward_j = phase(t, "forward", "energy_j");
    r.loss_ps = phase(t, "loss", "latency_s") * 1e12, r.loss_j = phase(t, "loss", "energy_j");
    r.recompute_ps = phase(t, "recompute", "latency_s") * 1e12, r.recompute_j = phase(t, "recompute", "energy_j");
    r.backward_ps = phase(t, "backward", "latency_s") * 1e12, r.backward_j = phase(t, "backward", "energy_j");
    r.optimizer_ps = phase(t, "optimizer", "latency_s") * 1e12, r.optimizer_j = phase(t, "optimizer", "energy_j");
    r.params = t.value("params", 0.0);
    const json& largest = t.at("memory").at("largest");
    r.weights_bytes = largest.value("weights_bytes", 0.0), r.gradients_bytes = largest.value("gradients_bytes", 0.0);
    r.optimizer_state_bytes = largest.value("optimizer_state_bytes", 0.0);
    r.saved_activations_bytes = largest.value("saved_activations_bytes", 0.0), r.workspace_bytes = largest.value("workspace_bytes", 0.0);
    r.peak_macs_per_s = m["total"].value("peak_macs_per_cycle", 0.0) * m.value("clock_hz", 0.0);
    r.capacity_bytes = t.at("memory").value("capacity_bytes", 0.0);
    return r;
}

/// Simulates every chunk kind whose metrics.json is not there yet, up to one process per core.
void run_chunks(const ParallelPlan& plan, const LlmJob& job, const ClusterConfig& cl, const std::string& dir, const std::string& precision,
                const std::string& runtime, const std::vector<std::string>& device_sets) {
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    const std::string wl = dir + "/workload.toml";
    write_file_atomically(wl, workload_toml(job));
    std::vector<size_t> todo;
    for (size_t k = 0; k < plan.kinds.size(); ++k)
        if (!fs::exists(dir + "/chunk" + std::to_string(k) + "/metrics.json")) todo.push_back(k);
    const size_t jobs = std::max(1u, std::thread::hardware_concurrency());
    std::map<pid_t, size_t> running;
    size_t next = 0;
    while (next < todo.size() || !running.empty()) {
        while (next < todo.size() && running.size() < jobs) {
            const size_t k = todo[next++];
            const ChunkShape& sh = plan.kinds[k];
            const std::string out = dir + "/chunk" + std::to_string(k);
            fs::create_directories(out);
            std::vector<std::string> a = {"run", wl + "#job@train", "--arch", cl.device, "--out", out, "--format", "json", "--detail", "kernel",
                                          "--train", "--batch", std::to_string(plan.spec.microbatch), "--precision", precision,
                                          "--recompute", plan.spec.recompute, "--optimizer", plan.spec.optimizer,
                                          "--loss", sh.head ? "cross_entropy" : "mse"};
            for (const auto& [key, val] : std::vector<std::pair<std::string, std::string>>{
                     {"shard.tp", std::to_string(plan.spec.tp)}, {"shard.layers", std::to_string(sh.layers)},
                     {"shard.embedding", sh.embedding ? "true" : "false"}, {"shard.head", sh.head ? "true" : "false"}})
                a.insert(a.end(), {"--workload-set", key + "=" + val});
            if (!runtime.empty()) a.insert(a.end(), {"--runtime", runtime});
            for (const auto& s : device_sets) a.insert(a.end(), {"--set", s});
            running[spawn_self(self, a, out + "/report.json", out + "/stderr.log")] = k;
        }
        int status = 0;
        const pid_t pid = waitpid(-1, &status, 0);
        auto it = running.find(pid);
        if (it == running.end()) continue;
        const std::string out = dir + "/chunk" + std::to_string(it->second);
        running.erase(it);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            throw UserError(job.where(), "the device simulation of chunk " + out + " failed: " + last_line(read_file(out + "/stderr.log")) +
                                             " (log: " + out + "/stderr.log)");
    }
}

std::string si(double v, const char* unit) {
    const char* p[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    while (std::abs(v) >= 1000 && i < 5) v /= 1000, ++i;
    return fmt::format("{:.3g} {}{}", v, p[i], unit);
}

}  // namespace

int cmd_run_job(const JobRunArgs& args) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto hash = args.workload.find('#');
    const std::string wfile = args.workload.substr(0, hash), wname = hash == std::string::npos ? "" : args.workload.substr(hash + 1);
    const std::string ext = fs::path(wfile).extension().string();
    LlmJob job = ext == ".toml" ? read_llm_job_toml(wfile, wname) : read_llm_job_yaml(wfile, wname);
    if (!job.training())
        throw UserError(job.where() + ".sequence.generate = " + std::to_string(job.model.generate),
                        "parallel inference jobs are not built yet (training entries have generate = 0)");
    // CLI flags over runtime_tuning
    if (args.microbatch > 0) job.tuning.microbatch = args.microbatch, job.parallel.microbatch = args.microbatch;
    if (args.global_batch > 0) job.parallel.global_batch = args.global_batch;
    job.tuning.cuda_graphs = on_off(args.cuda_graphs, "--cuda-graphs", job.tuning.cuda_graphs);
    job.tuning.gpudirect_rdma = on_off(args.gpudirect_rdma, "--gpudirect-rdma", job.tuning.gpudirect_rdma);
    if (!args.fabric.empty()) job.tuning.fabric = args.fabric;
    if (!args.virt.empty()) job.tuning.virt = args.virt;
    // the target
    Target target;
    if (args.target.empty()) throw UserError("archsim run " + args.workload, "a job needs --target TARGETS.yaml#NAME (or a cluster .toml)");
    const auto th = args.target.find('#');
    std::vector<std::string> csets = args.cluster_sets;
    if (th != std::string::npos) {
        target = read_target_yaml(args.target.substr(0, th), args.target.substr(th + 1));
    } else {
        target.name = fs::path(args.target).stem().string(), target.cluster = args.target;
    }
    if (target.nodes > 0) csets.insert(csets.begin(), "nodes=" + std::to_string(target.nodes));
    if (job.tuning.fabric == "IB") csets.push_back("network.kind=\"ib\"");
    if (job.tuning.fabric == "RoCE") csets.push_back("network.kind=\"roce\"");
    const ClusterConfig cl = load_cluster(target.cluster, csets);
    const ParallelPlan plan = make_parallel_plan(job.model, job.parallel, job.where());
    if (plan.spec.devices() > cl.devices())
        throw UserError(job.where(), "needs tp x pp x dp = " + std::to_string(plan.spec.devices()) + " devices; the target " + target.name +
                                         " has " + std::to_string(cl.devices()));
    // the device runs
    const std::string dev_dir = args.out_dir + "/devices";
    fs::create_directories(dev_dir);
    std::string precision = job.model.weights_precision == "fp8" ? "int8" : job.model.weights_precision;
    std::string runtime = args.runtime;
    if (runtime.empty() && fs::exists(runtimes_dir() + "/" + job.framework + ".toml")) runtime = job.framework;
    run_chunks(plan, job, cl, dev_dir, precision, runtime, args.device_sets);
    std::vector<ChunkRun> runs;
    for (size_t k = 0; k < plan.kinds.size(); ++k) runs.push_back(read_chunk_run(dev_dir + "/chunk" + std::to_string(k) + "/metrics.json"));
    JobOptions opt;
    opt.gpudirect_rdma = job.tuning.gpudirect_rdma;
    const JobModel model = build_job(plan, cl, runs, opt, job.where());
    const JobResult res = simulate_job(model);
    const std::vector<double> mem = stage_memory_bytes(plan, runs);

    // the report
    const ParallelismSpec& s = plan.spec;
    const double step_s = res.step_ps * 1e-12, devices = double(s.devices());
    const double flops = megatron_flops_per_iteration(job.model, s.global_batch);
    const double per_dev = flops / devices / step_s, peak = runs[0].peak_macs_per_s * 2.0;
    const size_t crit = size_t(std::max_element(res.stages.begin(), res.stages.end(), [](auto& a, auto& b) { return a.end_ps < b.end_ps; }) - res.stages.begin());
    double compute = 0, exposed = 0, idle = 0, energy_dev = 0;
    std::map<std::string, double> exposed_by;
    for (const auto& st : res.stages) {
        compute += st.compute_ps, exposed += st.exposed_comm_ps, idle += st.idle_ps, energy_dev += st.energy_j;
        for (const auto& [k, v] : st.exposed_by) exposed_by[k] += v * 1e-12 / double(res.stages.size());
    }
    const double n = double(res.stages.size());
    const double energy_job = energy_dev / n * devices;
    json out;
    out["workload"] = job.where();
    out["target"] = target.name, out["cluster"] = cl.file, out["device"] = cl.device, out["framework"] = job.framework;
    out["device_runtime"] = runtime.empty() ? "the device config's" : runtime;
    out["devices"] = s.devices();
    out["model"] = {{"family", job.model.model_family}, {"hidden", job.model.hidden}, {"layers", job.model.layers}, {"heads", job.model.heads},
                    {"vocab", job.model.vocab}, {"ffn", job.model.ffn}, {"sequence", job.model.prompt},
                    {"parameters", job.model.parameters()}, {"precision", precision}};
    out["parallelism"] = {{"tp", s.tp}, {"pp", s.pp}, {"dp", s.dp}, {"ep", s.ep}, {"virtual_stages", s.virtual_stages},
                          {"schedule", s.schedule}, {"microbatch", s.microbatch}, {"global_batch", s.global_batch},
                          {"microbatches_per_pipeline", plan.microbatches}, {"sequence_parallel", s.sequence_parallel},
                          {"zero_stage", s.zero_stage}, {"dp_overlap", s.dp_overlap}, {"recompute", s.recompute}, {"optimizer", s.optimizer}};
    out["step_time_s"] = step_s;
    out["tokens_per_s"] = double(s.global_batch) * double(job.model.prompt) / step_s;
    out["samples_per_s"] = double(s.global_batch) / step_s;
    out["model_flops_per_iteration"] = flops;
    out["flops_formula"] = "Megatron-LM: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) (Narayanan et al. SC21 eq. 3)";
    out["tflops_per_device"] = per_dev / 1e12;
    out["peak_tflops_per_device"] = peak / 1e12;
    out["mfu"] = peak > 0 ? per_dev / peak : 0.0;
    out["breakdown_s"] = {{"compute", compute * 1e-12 / n}, {"exposed_communication", exposed * 1e-12 / n}, {"bubble", idle * 1e-12 / n},
                          {"exposed_by", exposed_by}, {"note", "mean over the pipeline stages' devices; compute + exposed + bubble = step"}};
    out["pipeline"] = {{"schedule", s.schedule}, {"bubble_fraction_ideal", bubble_fraction(s.pp, s.virtual_stages, plan.microbatches)},
                       {"critical_stage", crit}};
    json comm = json::array();
    for (const auto& c : res.comm)
        comm.push_back({{"scope", c.scope}, {"collective", c.kind}, {"algorithm", c.algorithm}, {"protocol", c.protocol}, {"count", c.count},
                        {"bytes", c.bytes}, {"time_s", c.time_ps * 1e-12}, {"exposed_s", c.exposed_ps * 1e-12},
                        {"hidden_s", (c.time_ps - c.exposed_ps) * 1e-12}});
    out["communication"] = comm;
    out["communication_note"] = "summed over one device per pipeline stage (each stands for its tensor and data-parallel peers)";
    json stages = json::array();
    for (size_t i = 0; i < res.stages.size(); ++i) {
        const auto& st = res.stages[i];
        stages.push_back({{"stage", i}, {"compute_s", st.compute_ps * 1e-12}, {"exposed_communication_s", st.exposed_comm_ps * 1e-12},
                          {"bubble_s", st.idle_ps * 1e-12}, {"end_s", st.end_ps * 1e-12}, {"energy_j", st.energy_j},
                          {"memory_bytes", mem[i]}, {"memory_fits", runs[0].capacity_bytes <= 0 || mem[i] <= runs[0].capacity_bytes}});
    }
    out["stages"] = stages;
    out["memory_per_device_bytes"] = *std::max_element(mem.begin(), mem.end());
    out["memory_capacity_bytes"] = runs[0].capacity_bytes;
    out["energy_per_device_j"] = energy_dev / n;
    out["energy_job_j"] = energy_job;
    out["power_per_device_w"] = energy_dev / n / step_s;
    out["power_job_w"] = energy_job / step_s;
    out["link_bytes"] = {{"intra", res.intra_bytes}, {"inter", res.inter_bytes}, {"link_contention_s", res.link_queued_ps * 1e-12}};
    json nm = json::array();
    if (job.tuning.cuda_graphs) nm.push_back("cuda_graphs: CUDA-graph launch savings are not modeled yet (kernels keep the device config's launch overhead)");
    if (job.tuning.virt == "sriov") nm.push_back("virt = sriov: virtualization overheads are not modeled");
    if (cl.intra_pj_per_byte == 0 || cl.inter_pj_per_byte == 0) nm.push_back("link energy: the cluster gives no pJ/byte for a link level, so its transfers cost no energy");
    nm.push_back("device static/idle power during the bubble: the device configs model none (static_w = 0)");
    nm.push_back("gradient clipping's norm all-reduce and the loss-scale check: small, not simulated");
    if (!job.phases.empty()) nm.push_back("schedule.phases: read and kept, not yet simulated phase by phase (the step is the steady state)");
    out["not_modeled"] = nm;
    json custom = json::object();
    for (const auto& [k, v] : job.custom) custom[k] = v;
    out["custom"] = custom;
    out["simulation"] = {{"events", res.events}, {"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
                         {"device_runs", plan.kinds.size()}};
    write_file_atomically(args.out_dir + "/last_run.json", out.dump(2) + "\n");

    if (args.format == "json") {
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::printf("%s on %s: %lld devices (tp %lld x pp %lld x dp %lld), %s schedule, %lld microbatches of %lld\n", job.where().c_str(), target.name.c_str(),
                (long long)s.devices(), (long long)s.tp, (long long)s.pp, (long long)s.dp, s.schedule.c_str(), (long long)plan.microbatches,
                (long long)s.microbatch);
    std::printf("  step time            %s\n", si(step_s, "s").c_str());
    std::printf("  per-device           %.1f TFLOP/s (Megatron formula), MFU %.1f%%\n", per_dev / 1e12, peak > 0 ? 100 * per_dev / peak : 0.0);
    std::printf("  split (mean device)  compute %s, exposed communication %s, bubble %s\n", si(compute * 1e-12 / n, "s").c_str(),
                si(exposed * 1e-12 / n, "s").c_str(), si(idle * 1e-12 / n, "s").c_str());
    for (const auto& [k, v] : exposed_by) std::printf("    exposed %-14s %s\n", k.c_str(), si(v, "s").c_str());
    for (const auto& c : res.comm)
        std::printf("  %-9s %-14s %-12s %-6s x%-7lld %s, %s of it hidden\n", c.scope.c_str(), c.kind.c_str(), c.algorithm.c_str(), c.protocol.c_str(),
                    (long long)c.count, si(c.time_ps * 1e-12, "s").c_str(), si((c.time_ps - c.exposed_ps) * 1e-12, "s").c_str());
    std::printf("  memory per device    %s (peak stage)\n", si(out["memory_per_device_bytes"].get<double>(), "B").c_str());
    std::printf("  energy               %s per device, %s per job; power %s per device\n", si(energy_dev / n, "J").c_str(), si(energy_job, "J").c_str(),
                si(energy_dev / n / step_s, "W").c_str());
    std::printf("  wrote %s/last_run.json\n", args.out_dir.c_str());
    return 0;
}

}  // namespace archsim::cli
