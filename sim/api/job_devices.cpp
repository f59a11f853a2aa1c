#include "sim/api/job_parts.h"
#include "sim/base/version.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "arch/common/machine.h"
#include "sim/api/process_pool.h"
#include "sim/api/run_model.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/progress.h"

namespace archsim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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

}  // namespace

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
    r.forward_macs = phase(t, "forward", "macs"), r.loss_macs = phase(t, "loss", "macs");
    r.recompute_macs = phase(t, "recompute", "macs"), r.backward_macs = phase(t, "backward", "macs");
    r.params = t.value("params", 0.0);
    r.model_flops = t.value("model_flops", 0.0);
    r.static_w = m.at("total").value("static_power_w", 0.0);
    const json& largest = t.at("memory").at("largest");
    r.weights_bytes = largest.value("weights_bytes", 0.0), r.gradients_bytes = largest.value("gradients_bytes", 0.0);
    r.optimizer_state_bytes = largest.value("optimizer_state_bytes", 0.0);
    r.saved_activations_bytes = largest.value("saved_activations_bytes", 0.0), r.workspace_bytes = largest.value("workspace_bytes", 0.0);
    r.saved_after_forward_bytes = t.at("memory").value("saved_after_forward_bytes", r.saved_activations_bytes);
    r.peak_macs_per_s = m["total"].value("peak_macs_per_cycle", 0.0) * m.value("clock_hz", 0.0);
    r.capacity_bytes = t.at("memory").value("capacity_bytes", 0.0);
    return r;
}

std::string train_run_dir(const std::string& dev_dir, const ParallelPlan& plan, size_t kind) {
    const ParallelismSpec& s = plan.spec;
    const ChunkShape& k = plan.kinds.at(kind);
    const char* ends = k.embedding && k.head ? "whole" : k.embedding ? "first" : k.head ? "last" : "middle";
    return fmt::format("{}/train_tp{}_ep{}_mb{}_{}{}_l{}_{}", dev_dir, s.tp, s.ep, s.microbatch, s.recompute,
                       s.sequence_parts() > 1 ? "_sp" : "", k.layers, ends);
}

std::vector<std::string> child_job_args(const JobRunArgs& args) {
    std::vector<std::string> a = {"--target", args.target};
    auto opt = [&](const char* flag, const std::string& v) {
        if (!v.empty()) a.insert(a.end(), {flag, v});
    };
    opt("--global-batch", args.global_batch > 0 ? std::to_string(args.global_batch) : "");
    opt("--cuda-graphs", args.cuda_graphs), opt("--gpudirect-rdma", args.gpudirect_rdma), opt("--fabric", args.fabric), opt("--virt", args.virt);
    opt("--runtime", args.runtime), opt("--precision", args.precision), opt("--mapper", args.mapper == "auto" ? "" : args.mapper);
    for (const auto& s : args.cluster_sets) a.insert(a.end(), {"--cluster-set", s});
    for (const auto& s : args.device_sets) a.insert(a.end(), {"--set", s});
    return a;
}

ChildTask plan_run_task(const JobContext& c, const std::string& out, const std::vector<std::string>& parallel,
                        const std::vector<std::string>& serving) {
    fs::create_directories(out);
    std::vector<std::string> a = {"run", c.args.workload, "--out", out, "--format", "json", "--quiet", "--detail", "kernel", "--devices-dir", c.dev_dir,
                                  "--search", "off"};
    for (const std::string& kv : parallel) a.insert(a.end(), {"--parallel", kv});
    const std::vector<std::string> common = child_job_args(c.args);
    a.insert(a.end(), common.begin(), common.end());
    for (const std::string& kv : c.args.serving_sets) a.insert(a.end(), {"--serving", kv});
    for (const std::string& kv : serving) a.insert(a.end(), {"--serving", kv});
    if (!c.args.phase.empty()) a.insert(a.end(), {"--phase", c.args.phase});
    if (c.args.allow_over_capacity) a.push_back("--allow-over-capacity");
    return {a, out + "/report.json", out + "/stderr.log"};
}

bool device_launches_graphs(const MachineSetup& device) { return device.kind->kind == "gpu"; }

void run_devices(const JobContext& c, const std::vector<DeviceTask>& tasks, int64_t split) {
    const ParallelPlan& plan = c.plan;
    const LlmJob& job = c.job;
    const std::string& precision = c.precision.value;
    const std::string& runtime = c.runtime;
    const std::vector<std::string>& device_sets = c.args.device_sets;
    const bool device_prices_graphs = device_launches_graphs(c.device);
    const std::string wl = c.dev_dir + "/workload.toml", text = workload_toml(job);
    write_file_atomically(wl, text);
    // what every run's signature starts with: this build (a run cached by another build is run
    // again), the workload and the device
    const std::string inputs = build_identity() + "\n" + text + read_file(c.cl.device);
    const bool graphs = job.tuning.cuda_graphs && device_prices_graphs;
    // each task's command line; with the workload text, what a finished run's signature must match
    auto command = [&](const DeviceTask& t) {
        const ParallelPlan& p = t.plan ? *t.plan : plan;
        const ChunkShape& sh = p.kinds[t.kind];
        std::vector<std::string> a = {"run", wl + "#job@" + t.phase, "--arch", c.cl.device, "--out", t.dir, "--format", "json", "--quiet", "--detail", "kernel",
                                      "--batch", std::to_string(t.batch > 0 ? t.batch : p.spec.microbatch / split), "--precision", precision};
        if (t.phase == "train")  // the job checks its plan's memory itself (stage_memory): a chunk's own peak is not the stage's
            a.insert(a.end(), {"--train", "--recompute", p.spec.recompute, "--optimizer", p.spec.optimizer, "--loss", sh.head ? "cross_entropy" : "mse",
                               "--allow-over-capacity"});
        for (const auto& [key, val] : std::vector<std::pair<std::string, std::string>>{
                 {"shard.tp", std::to_string(p.spec.tp)}, {"shard.ep", std::to_string(p.spec.ep)}, {"shard.layers", std::to_string(sh.layers)},
                 {"shard.embedding", sh.embedding ? "true" : "false"}, {"shard.head", sh.head ? "true" : "false"}})
            a.insert(a.end(), {"--workload-set", key + "=" + val});
        // sequence parallelism in training (Megatron-LM's): the chunk's norms, dropouts and
        // residual sums on 1/tp of the tokens (LlmShard::sequence_parallel)
        if (t.phase == "train" && p.spec.sequence_parts() > 1) a.insert(a.end(), {"--workload-set", "shard.sequence_parallel=true"});
        for (const auto& ws : t.workload_sets) a.insert(a.end(), {"--workload-set", ws});
        if (!runtime.empty()) a.insert(a.end(), {"--runtime", runtime});
        if (c.args.mapper != "auto") a.insert(a.end(), {"--mapper", c.args.mapper});
        if (graphs) a.insert(a.end(), {"--set", "kernel.cuda_graphs=true"});
        for (const auto& s : device_sets) a.insert(a.end(), {"--set", s});
        return a;
    };
    auto signature = [&](const std::vector<std::string>& a) {
        std::string sig = inputs;
        for (const auto& x : a) sig += "\n" + x;
        return sig;
    };
    // resumable: a run whose metrics.json exists was made by the same command on the same inputs;
    // tasks of one folder (plans that give a device the same work) run once
    std::vector<const DeviceTask*> todo;
    std::set<std::string> queued;
    for (const auto& t : tasks)
        if ((!fs::exists(t.dir + "/metrics.json") || read_file(t.dir + "/signature.txt") != signature(command(t))) && queued.insert(t.dir).second)
            todo.push_back(&t);
    Progress progress("device runs", todo.size(), !c.args.quiet);
    size_t done = 0;
    auto start = [&](size_t i) {
        const DeviceTask& t = *todo[i];
        fs::create_directories(t.dir);
        fs::remove(t.dir + "/metrics.json");
        const std::vector<std::string> a = command(t);
        write_file_atomically(t.dir + "/signature.txt", signature(a));
        return ChildTask{a, t.dir + "/report.json", t.dir + "/stderr.log"};
    };
    auto finished = [&](size_t i, int status) {
        const DeviceTask& t = *todo[i];
        ++done;
        if (!exited_ok(status))
            throw UserError(job.where(), "the device simulation " + t.dir + " failed: " + child_failure(status, t.dir + "/stderr.log") +
                                             " (log: " + t.dir + "/stderr.log)");
    };
    auto waiting = [&](const std::vector<size_t>& running) {
        std::string now;
        for (size_t i : running) now += (now.empty() ? "" : ", ") + fs::path(todo[i]->dir).filename().string();
        progress.update(done, now);
    };
    run_children(self_program(), todo.size(), 0, start, finished, waiting);
}

std::pair<double, double> run_total(const std::string& dir, double* macs, double* peak, double* static_w) {
    std::ifstream in(dir + "/metrics.json");
    const json m = json::parse(in);
    if (macs) *macs = m.at("total").value("macs", 0.0);
    if (peak) *peak = m.at("total").value("peak_macs_per_cycle", 0.0) * m.value("clock_hz", 0.0);
    if (static_w) *static_w = m.at("total").value("static_power_w", 0.0);
    return {m.at("total").at("latency_s").get<double>() * 1e12, m.at("total").at("energy_j").get<double>()};
}

double waiting_static_j(const JobResult& res, double static_w, double span_ps) {
    double j = 0;
    for (const auto& st : res.stages) j += static_w * std::max(0.0, span_ps - st.compute_ps) * 1e-12;
    return j;
}

json node_power_json(const ClusterConfig& cl, int64_t devices, double devices_w) {
    const int64_t nodes = cl.nodes_for(devices);
    const double total = double(nodes) * cl.node_overhead_w();
    std::string nm = "network switches";
    if (cl.host_w == 0) nm += ", host CPUs (node.host_w = 0)";
    if (cl.nic_w == 0) nm += ", NICs (network.nic_w = 0)";
    return {{"nodes", nodes}, {"per_node_w", cl.node_overhead_w()}, {"host_w", cl.host_w}, {"nics_w", double(cl.nics_per_node) * cl.nic_w},
            {"total_w", total}, {"job_with_nodes_w", devices_w + total}, {"not_modeled", nm}};
}

json comm_json(const JobResult& res) {
    json comm = json::array();
    for (const auto& c : res.comm)
        comm.push_back({{"scope", c.scope}, {"collective", c.kind}, {"algorithm", c.algorithm}, {"protocol", c.protocol}, {"count", c.count},
                        {"bytes", c.bytes}, {"time_s", c.time_ps * 1e-12}, {"exposed_s", c.exposed_ps * 1e-12},
                        {"hidden_s", (c.time_ps - c.exposed_ps) * 1e-12}});
    return comm;
}

json custom_json(const LlmJob& job) {
    json custom = json::object();
    for (const auto& [k, v] : job.custom) custom[k] = json::parse(v);
    return custom;
}

json JobContext::identity_json(const std::string& mode) const {
    const LlmShape& m = job.model;
    json out;
    out["workload"] = job.where(), out["target"] = target.name, out["cluster"] = cl.file, out["device"] = cl.device, out["framework"] = job.framework;
    out["device_runtime"] = runtime.empty() ? "the device config's" : runtime;
    out["mode"] = mode;
    out["devices"] = plan.spec.devices();
    out["model"] = {{"family", m.model_family}, {"hidden", m.hidden}, {"layers", m.layers}, {"heads", m.heads}, {"kv_heads", m.kv_heads},
                    {"vocab", m.vocab}, {"ffn", m.ffn}, {"parameters", m.parameters()}, {"precision", precision.value}, {"precision_from", precision.from}};
    return out;
}

json over_duration_json(double minutes, double iteration_s, double tokens, double energy_j) {
    const double n = iteration_s > 0 ? std::floor(minutes * 60.0 / iteration_s) : 0.0;
    return {{"minutes", minutes}, {"iterations", n}, {"tokens", n * tokens}, {"energy_j", n * energy_j}};
}

JobOptions job_options(const LlmJob& job) {
    JobOptions o;
    o.gpudirect_rdma = job.tuning.gpudirect_rdma;
    o.sriov = job.tuning.virt == "sriov";
    return o;
}

void add_unmodeled_settings(const LlmJob& job, const ClusterConfig& cl, json& not_modeled, const JobRunArgs& args) {
    std::vector<std::string> lines = cl.unmodeled_settings();
    if (args.runtime.empty() && !std::filesystem::exists(runtimes_dir() + "/" + job.framework + ".toml"))
        lines.push_back("framework = " + job.framework + ": no runtime profile of that name (configs/runtimes; archsim params runtime); "
                        "the device's default runtime runs the job, with its kernels, not that framework's");
    if (job.tuning.virt == "sriov")
        lines.push_back("virt = sriov: inter-node bandwidth x 0.98 (SR-IOV's measured loss); its added latency and any compute overhead "
                        "in the VM are not modeled");
    for (const std::string& line : lines) {
        not_modeled.push_back(line);
        if (args.warn) args.warn(line);
    }
}

}  // namespace archsim
