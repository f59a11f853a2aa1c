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
#include "arch/common/machine.h"
#include "arch/cluster/targets.h"
#include "sim/cluster/job_builder.h"
#include "sim/cluster/job_sim.h"
#include "sim/engine/machine_setup.h"
#include "sim/engine/run_choice.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "traces/display_units.h"
#include "sim/base/progress.h"
#include "tools/archsim/commands.h"
#include "tools/archsim/spawn.h"
#include "workloads/jobs/llm_job.h"
#include "workloads/parallel/pipeline_schedule.h"

namespace archsim::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// The summary line naming the precision and device runtime a job ran at, and where the precision
/// came from.
std::string choice_line(const RunChoice& precision, const std::string& runtime) {
    return "  precision            " + precision.value + " (" + precision.from + "), device runtime " +
           (runtime.empty() ? "the device config's" : runtime) + "\n";
}

bool on_off(const std::string& v, const std::string& flag, bool def) {
    if (v.empty()) return def;
    if (v == "on" || v == "true" || v == "1") return true;
    if (v == "off" || v == "false" || v == "0") return false;
    throw UserError(flag + " " + v, "must be on or off");
}

/// Adds to `not_modeled` (a JSON array) the settings of a job and its cluster that are read but
/// change nothing simulated, one line each (the cluster's, ClusterConfig::unmodeled_settings, and
/// a vendor fabric), and warns of each on stderr: once the job has run, so that a plan refused
/// before that stays one line.
void add_unmodeled_settings(const LlmJob& job, const ClusterConfig& cl, json& not_modeled) {
    std::vector<std::string> lines = cl.unmodeled_settings();
    if (job.tuning.fabric == "Vendor")
        lines.push_back("fabric = Vendor: a vendor fabric is not modeled; the cluster's network keys price the inter-node links");
    for (const std::string& line : lines) {
        not_modeled.push_back(line);
        std::fprintf(stderr, "archsim: warning: %s\n", line.c_str());
    }
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
    r.forward_macs = phase(t, "forward", "macs"), r.loss_macs = phase(t, "loss", "macs");
    r.recompute_macs = phase(t, "recompute", "macs"), r.backward_macs = phase(t, "backward", "macs");
    r.params = t.value("params", 0.0);
    r.model_flops = t.value("model_flops", 0.0);
    r.static_w = m.at("total").value("static_power_w", 0.0);
    const json& largest = t.at("memory").at("largest");
    r.weights_bytes = largest.value("weights_bytes", 0.0), r.gradients_bytes = largest.value("gradients_bytes", 0.0);
    r.optimizer_state_bytes = largest.value("optimizer_state_bytes", 0.0);
    r.saved_activations_bytes = largest.value("saved_activations_bytes", 0.0), r.workspace_bytes = largest.value("workspace_bytes", 0.0);
    r.peak_macs_per_s = m["total"].value("peak_macs_per_cycle", 0.0) * m.value("clock_hz", 0.0);
    r.capacity_bytes = t.at("memory").value("capacity_bytes", 0.0);
    return r;
}

/// One device simulation: a `run` of the job's workload phase into `dir`.
struct DeviceTask {
    std::string phase;                 ///< "train", "prefill", "decode=L"
    size_t kind = 0;                   ///< the chunk kind
    std::string dir;
};

/// Whether the device model prices CUDA-graph launches (a GPU: kernel.cuda_graphs).
bool device_launches_graphs(const MachineSetup& device) { return device.kind->kind == "gpu"; }

/// Runs every task whose metrics.json is not there yet, or was made by another command or from
/// other inputs (the job's workload text, the device config and the command line are kept in
/// signature.txt beside it), up to one process per core: an interrupted job resumes where it
/// stopped, and an edited one reruns what changed. `device_prices_graphs`: the device model prices
/// CUDA-graph launches (device_launches_graphs), so a job's cuda_graphs is passed on to it.
void run_devices(const ParallelPlan& plan, const LlmJob& job, const ClusterConfig& cl, const std::string& dev_dir, const std::vector<DeviceTask>& tasks,
                 const std::string& precision, const std::string& runtime, const std::vector<std::string>& device_sets, bool quiet,
                 bool device_prices_graphs, int64_t split = 1) {
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    const std::string wl = dev_dir + "/workload.toml", text = workload_toml(job);
    write_file_atomically(wl, text);
    const std::string inputs = text + read_file(cl.device);  // what every run's signature starts with
    const bool graphs = job.tuning.cuda_graphs && device_prices_graphs;
    // each task's command line; with the workload text, what a finished run's signature must match
    auto command = [&](const DeviceTask& t) {
        const ChunkShape& sh = plan.kinds[t.kind];
        std::vector<std::string> a = {"run", wl + "#job@" + t.phase, "--arch", cl.device, "--out", t.dir, "--format", "json", "--quiet", "--detail", "kernel",
                                      "--batch", std::to_string(plan.spec.microbatch / split), "--precision", precision};
        if (t.phase == "train")  // the job checks its plan's memory itself (stage_memory): a chunk's own peak is not the stage's
            a.insert(a.end(), {"--train", "--recompute", plan.spec.recompute, "--optimizer", plan.spec.optimizer, "--loss", sh.head ? "cross_entropy" : "mse",
                               "--allow-over-capacity"});
        for (const auto& [key, val] : std::vector<std::pair<std::string, std::string>>{
                 {"shard.tp", std::to_string(plan.spec.tp)}, {"shard.ep", std::to_string(plan.spec.ep)}, {"shard.layers", std::to_string(sh.layers)},
                 {"shard.embedding", sh.embedding ? "true" : "false"}, {"shard.head", sh.head ? "true" : "false"}})
            a.insert(a.end(), {"--workload-set", key + "=" + val});
        if (!runtime.empty()) a.insert(a.end(), {"--runtime", runtime});
        if (graphs) a.insert(a.end(), {"--set", "kernel.cuda_graphs=true"});
        for (const auto& s : device_sets) a.insert(a.end(), {"--set", s});
        return a;
    };
    auto signature = [&](const std::vector<std::string>& a) {
        std::string sig = inputs;
        for (const auto& x : a) sig += "\n" + x;
        return sig;
    };
    // resumable: a run whose metrics.json exists was made by the same command on the same inputs
    std::vector<const DeviceTask*> todo;
    for (const auto& t : tasks)
        if (!fs::exists(t.dir + "/metrics.json") || read_file(t.dir + "/signature.txt") != signature(command(t))) todo.push_back(&t);
    const size_t jobs = std::max(1u, std::thread::hardware_concurrency());
    std::map<pid_t, const DeviceTask*> running;
    size_t next = 0, done = 0;
    Progress progress("device runs", todo.size(), !quiet);
    while (next < todo.size() || !running.empty()) {
        while (next < todo.size() && running.size() < jobs) {
            const DeviceTask& t = *todo[next++];
            fs::create_directories(t.dir);
            fs::remove(t.dir + "/metrics.json");
            const std::vector<std::string> a = command(t);
            write_file_atomically(t.dir + "/signature.txt", signature(a));
            running[spawn_self(self, a, t.dir + "/report.json", t.dir + "/stderr.log")] = &t;
        }
        int status = 0;
        const pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid == 0) {  // all still running: report, then look again shortly
            std::string now;
            for (const auto& [p, t] : running) now += (now.empty() ? "" : ", ") + fs::path(t->dir).filename().string();
            progress.update(done, now);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        auto it = running.find(pid);
        if (it == running.end()) continue;
        const DeviceTask& t = *it->second;
        running.erase(it);
        ++done;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            throw UserError(job.where(), "the device simulation " + t.dir + " failed: " + child_failure(status, t.dir + "/stderr.log") +
                                             " (log: " + t.dir + "/stderr.log)");
    }
}

/// A finished device run's total latency (ps) and energy (J); its MACs, the device's peak MACs/s
/// and its static power (W) into `macs`, `peak` and `static_w` when given.
std::pair<double, double> run_total(const std::string& dir, double* macs = nullptr, double* peak = nullptr, double* static_w = nullptr) {
    std::ifstream in(dir + "/metrics.json");
    const json m = json::parse(in);
    if (macs) *macs = m.at("total").value("macs", 0.0);
    if (peak) *peak = m.at("total").value("peak_macs_per_cycle", 0.0) * m.value("clock_hz", 0.0);
    if (static_w) *static_w = m.at("total").value("static_power_w", 0.0);
    return {m.at("total").at("latency_s").get<double>() * 1e12, m.at("total").at("energy_j").get<double>()};
}

/// The static energy one device per stage draws while it does not compute, J: `static_w` over the
/// part of `span_ps` (a training step, a serving request) outside the stage's compute. Its device
/// runs charge static power only while they compute; the device draws it through the whole span.
double waiting_static_j(const JobResult& res, double static_w, double span_ps) {
    double j = 0;
    for (const auto& st : res.stages) j += static_w * std::max(0.0, span_ps - st.compute_ps) * 1e-12;
    return j;
}

/// Power drawn outside the devices by the nodes a job of `devices` devices occupies
/// (ClusterConfig::node_overhead_w: host CPUs and NICs, as the cluster file cites them), beside
/// `devices_w` (the devices' power, W): {"nodes", "per_node_w", "host_w", "nics_w", "total_w",
/// "job_with_nodes_w", "not_modeled"}.
json node_power_json(const ClusterConfig& cl, int64_t devices, double devices_w) {
    const int64_t nodes = cl.nodes_for(devices);
    const double total = double(nodes) * cl.node_overhead_w();
    std::string nm = "network switches";
    if (cl.host_w == 0) nm += ", host CPUs (node.host_w = 0)";
    if (cl.nic_w == 0) nm += ", NICs (network.nic_w = 0)";
    return {{"nodes", nodes}, {"per_node_w", cl.node_overhead_w()}, {"host_w", cl.host_w}, {"nics_w", double(cl.nics_per_node) * cl.nic_w},
            {"total_w", total}, {"job_with_nodes_w", devices_w + total}, {"not_modeled", nm}};
}

/// The job's collectives, one row per scope, collective, algorithm and protocol.
json comm_json(const JobResult& res) {
    json comm = json::array();
    for (const auto& c : res.comm)
        comm.push_back({{"scope", c.scope}, {"collective", c.kind}, {"algorithm", c.algorithm}, {"protocol", c.protocol}, {"count", c.count},
                        {"bytes", c.bytes}, {"time_s", c.time_ps * 1e-12}, {"exposed_s", c.exposed_ps * 1e-12},
                        {"hidden_s", (c.time_ps - c.exposed_ps) * 1e-12}});
    return comm;
}

/// The job's custom keys, as given.
json custom_json(const LlmJob& job) {
    json custom = json::object();
    for (const auto& [k, v] : job.custom) custom[k] = json::parse(v);
    return custom;
}

/// Prints a job's power lines from its last_run.json figures `out`: per device, and the nodes'
/// overhead beside the devices' total.
void print_power_lines(const json& out) {
    const json& o = out["node_overhead_power"];
    std::printf("  power                %s per device; nodes' overhead %s (%lld node(s) x %s: host %s, NICs %s; not modeled: %s); "
                "devices and nodes %s\n",
                with_unit(out["power_per_device_w"].get<double>(), "W").c_str(), with_unit(o["total_w"].get<double>(), "W").c_str(),
                (long long)o["nodes"].get<int64_t>(), with_unit(o["per_node_w"].get<double>(), "W").c_str(), with_unit(o["host_w"].get<double>(), "W").c_str(),
                with_unit(o["nics_w"].get<double>(), "W").c_str(), o["not_modeled"].get<std::string>().c_str(),
                with_unit(o["job_with_nodes_w"].get<double>(), "W").c_str());
}

/// The inference half of cmd_run_job: prefill and decode device runs per chunk kind, the request
/// simulated over every stage, last_run.json with TTFT, time per output token and tokens/s.
int run_inference(const LlmJob& job, const Target& target, const ClusterConfig& cl, const ParallelPlan& plan, const JobRunArgs& args,
                  const std::string& dev_dir, const MachineSetup& device, const RunChoice& precision, const std::string& runtime,
                  std::chrono::steady_clock::time_point t0) {
    const LlmShape& m = job.model;
    const ParallelismSpec& s = plan.spec;
    const int64_t steps = std::max<int64_t>(0, m.generate - 1);  // the prefill makes the first token
    const int64_t mbs = inference_microbatches(s.microbatch, s.pp);  // the batch pipelined through the stages
    std::vector<int64_t> kvs;  // the KV lengths of the sampled decode steps
    for (const int64_t t : decode_step_samples(steps)) kvs.push_back(m.prompt + t);
    // what each device holds: its share of the weights and the KV cache of the sequences in flight
    const double e = double(m.activation_elem_bytes());
    const double hd = double(m.hidden / m.heads), kv_local = double(std::max<int64_t>(1, m.kv_heads / s.tp));
    const double weights = double(m.parameters()) / double(s.tp * s.pp) * double(m.weight_elem_bytes());
    const double kv_cache = 2.0 * double(m.layers / s.pp) * double(s.microbatch) * double(m.prompt + m.generate) * kv_local * hd * e;
    const double capacity = device.dram_capacity_bytes();
    if (capacity > 0 && weights + kv_cache > capacity && !args.allow_over_capacity)
        throw UserError(job.where() + " on " + target.name,
                        over_capacity_reason(weights + kv_cache, {{"weights", weights}, {"KV cache", kv_cache}}, capacity,
                                             "the device's dram.capacity_gib"));
    std::vector<DeviceTask> tasks;
    for (size_t k = 0; k < plan.kinds.size(); ++k) {
        tasks.push_back({"prefill", k, dev_dir + "/prefill" + std::to_string(k)});
        for (int64_t kv : kvs) tasks.push_back({"decode=" + std::to_string(kv), k, dev_dir + "/decode" + std::to_string(k) + "_kv" + std::to_string(kv)});
    }
    run_devices(plan, job, cl, dev_dir, tasks, precision.value, runtime, args.device_sets, args.quiet, device_launches_graphs(device), mbs);
    std::vector<ChunkServeRun> runs(plan.kinds.size());
    double peak = 0, static_w = 0;
    for (size_t k = 0; k < plan.kinds.size(); ++k) {
        std::tie(runs[k].prefill_ps, runs[k].prefill_j) =
            run_total(dev_dir + "/prefill" + std::to_string(k), &runs[k].prefill_macs, &peak, &static_w);
        for (int64_t kv : kvs) {
            double macs = 0;
            runs[k].decode.push_back({kv, run_total(dev_dir + "/decode" + std::to_string(k) + "_kv" + std::to_string(kv), &macs)});
            if (runs[k].decode.size() == 1) runs[k].decode_macs = macs;
        }
    }
    JobOptions opt;
    opt.gpudirect_rdma = job.tuning.gpudirect_rdma;
    JobModel model = build_inference_job(plan, cl, runs, steps, mbs, opt, job.where());
    model.name = job.where(), model.target = target.name, model.precision = precision.value, model.device_peak_macs_per_s = peak;
    const JobResult res = simulate_job(model, args.out_dir + "/trace.h5", args.detail);
    const double ttft = res.pass_end_ps.front() * 1e-12, total = res.pass_end_ps.back() * 1e-12;
    const double tpot = steps > 0 ? (total - ttft) / double(steps) : 0.0;
    const double tokens = double(s.dp * s.microbatch * m.generate);
    // a middle decode step as one microbatch's path through every stage: its compute, its
    // tensor-parallel collectives (the same cost model the simulation ran) and the hand-offs
    double step_comm = 0, path = 0;
    const size_t mid = model.passes[0].size() / 2;
    for (const auto& st : model.passes) {
        path += st[mid].compute_ps;
        for (const CommOp& op : st[mid].comm) {
            const double t = collective_cost(op.kind, op.bytes, model.tensor).time_ps;
            path += t;
            if (op.scope == CommScope::Tensor) step_comm += t;
        }
    }
    path += double(s.pp - 1) * collective_cost(Collective::SendRecv, double(s.microbatch / mbs) * double(m.hidden) * e, model.p2p_pair()).time_ps;
    double energy = 0;
    for (const auto& st : res.stages) energy += st.energy_j;
    const double waiting_j = waiting_static_j(res, static_w, res.pass_end_ps.back());  // waiting for the other stages
    energy += waiting_j;
    const double n = double(res.stages.size()), devices = double(s.devices());
    json out;
    out["workload"] = job.where(), out["target"] = target.name, out["cluster"] = cl.file, out["device"] = cl.device, out["framework"] = job.framework;
    out["device_runtime"] = runtime.empty() ? "the device config's" : runtime;
    out["mode"] = "inference";
    out["devices"] = s.devices();
    out["model"] = {{"family", m.model_family}, {"hidden", m.hidden}, {"layers", m.layers}, {"heads", m.heads}, {"kv_heads", m.kv_heads},
                    {"vocab", m.vocab}, {"ffn", m.ffn}, {"parameters", m.parameters()}, {"precision", precision.value}, {"precision_from", precision.from}};
    out["parallelism"] = {{"tp", s.tp}, {"pp", s.pp}, {"dp", s.dp}, {"batch_per_replica", s.microbatch}, {"pipeline_microbatches", mbs}};
    out["prompt_tokens"] = m.prompt, out["generated_tokens"] = m.generate;
    out["ttft_s"] = ttft;
    out["time_per_output_token_s"] = tpot;
    out["request_s"] = total;
    out["tokens_per_s"] = total > 0 ? tokens / total : 0.0;
    out["tensor_comm_per_token_s"] = step_comm * 1e-12;
    out["tensor_comm_share_of_token"] = path > 0 ? step_comm / path : 0.0;
    out["tensor_comm_note"] = "one microbatch's path through every stage for a middle decode step: its tensor-parallel collectives over "
                              "the path's compute, collectives and hand-offs (with pp = 1 the path is the time per output token)";
    out["decode_points"] = json::array();
    for (int64_t kv : kvs) {
        double ps = 0;
        for (int64_t st = 0; st < s.pp; ++st)
            for (int64_t c = 0; c < s.virtual_stages; ++c) ps += runs[plan.kind_of[size_t(st)][size_t(c)]].decode_at(kv).first;
        out["decode_points"].push_back({{"kv_length", kv}, {"device_compute_s", ps * 1e-12}});
    }
    out["communication"] = comm_json(res);
    out["memory_per_device_bytes"] = weights + kv_cache;
    out["memory"] = {{"weights_bytes", weights}, {"kv_cache_bytes", kv_cache}};
    out["memory_capacity_bytes"] = capacity;
    out["memory_fits"] = capacity <= 0 || weights + kv_cache <= capacity;
    out["energy_per_device_j"] = energy / n, out["energy_job_j"] = energy / n * devices;
    out["static_while_waiting_per_device_j"] = waiting_j / n;
    out["energy_per_token_j"] = tokens > 0 ? energy / n * devices / tokens : 0.0;
    out["power_per_device_w"] = total > 0 ? energy / n / total : 0.0;
    out["node_overhead_power"] = node_power_json(cl, s.devices(), total > 0 ? energy / n * devices / total : 0.0);
    out["not_modeled"] = {"node overheads: " + out["node_overhead_power"]["not_modeled"].get<std::string>(), "continuous batching and request arrival (schedule.phases): one request batch end to end",
                          "activation memory of the prefill"};
    add_unmodeled_settings(job, cl, out["not_modeled"]);
    out["custom"] = custom_json(job);
    out["simulation"] = {{"events", res.events}, {"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
                         {"device_runs", tasks.size()}};
    write_file_atomically(args.out_dir + "/last_run.json", out.dump(2) + "\n");
    if (args.format == "json") {
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::printf("%s on %s: %lld devices (tp %lld x pp %lld x dp %lld), batch %lld per replica, %lld prompt + %lld generated tokens\n",
                job.where().c_str(), target.name.c_str(), (long long)s.devices(), (long long)s.tp, (long long)s.pp, (long long)s.dp,
                (long long)s.microbatch, (long long)m.prompt, (long long)m.generate);
    std::fputs(choice_line(precision, runtime).c_str(), stdout);
    std::printf("  time to first token   %s\n  time per output token %s (tensor-parallel collectives %s a microbatch's token, %.1f%% of its path)\n",
                with_unit(ttft, "s").c_str(), with_unit(tpot, "s").c_str(), with_unit(step_comm * 1e-12, "s").c_str(), path > 0 ? 100 * step_comm / path : 0.0);
    std::printf("  tokens per second     %s (all replicas)\n  memory per device     %s (weights %s, KV cache %s)\n",
                in_unit(total > 0 ? tokens / total : 0.0, DisplayUnit{"", 1}).c_str(),
                with_unit(weights + kv_cache, "B").c_str(), with_unit(weights, "B").c_str(), with_unit(kv_cache, "B").c_str());
    print_power_lines(out);
    std::printf("  wrote %s/last_run.json\n", args.out_dir.c_str());
    return 0;
}

}  // namespace

/// A job with schedule.phases: each phase simulated in its own process (`run ... --phase NAME`
/// under OUT/phases/NAME, in turn: each already runs its device simulations in parallel), then
/// OUT/last_run.json holds every phase's figures and their means weighted by duration.
static int run_phases(const LlmJob& job, const JobRunArgs& args, std::chrono::steady_clock::time_point t0) {
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    json phases = json::array();
    double minutes = 0;
    std::map<std::string, double> weighted;
    static const std::vector<std::string> keys = {"step_time_s", "tokens_per_s", "tflops_per_device", "mfu", "ttft_s", "time_per_output_token_s",
                                                  "power_per_device_w", "power_job_w"};
    for (const JobPhase& ph : job.phases) {
        const std::string dir = args.out_dir + "/phases/" + ph.name;
        fs::create_directories(dir);
        std::vector<std::string> a = {"run", args.workload, "--target", args.target, "--out", dir, "--phase", ph.name, "--format", "json", "--detail", args.detail};
        auto opt = [&](const char* flag, const std::string& v) {
            if (!v.empty()) a.insert(a.end(), {flag, v});
        };
        opt("--microbatch", args.microbatch > 0 ? std::to_string(args.microbatch) : "");
        opt("--global-batch", args.global_batch > 0 ? std::to_string(args.global_batch) : "");
        opt("--cuda-graphs", args.cuda_graphs), opt("--gpudirect-rdma", args.gpudirect_rdma), opt("--fabric", args.fabric), opt("--virt", args.virt);
        opt("--runtime", args.runtime);
        for (const auto& s : args.cluster_sets) a.insert(a.end(), {"--cluster-set", s});
        for (const auto& s : args.device_sets) a.insert(a.end(), {"--set", s});
        std::fprintf(stderr, "archsim: %s: phase %s (%g minutes)\n", job.where().c_str(), ph.name.c_str(), ph.duration_minutes);
        const pid_t pid = spawn_self(self, a, dir + "/report.json", dir + "/stderr.log");
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            throw UserError(job.where() + "@" + ph.name, "this phase failed: " + child_failure(status, dir + "/stderr.log") + " (log: " + dir + "/stderr.log)");
        std::ifstream in(dir + "/last_run.json");
        const json r = json::parse(in);
        json row = {{"name", ph.name}, {"duration_minutes", ph.duration_minutes}, {"tokens_scale", ph.tokens_scale},
                    {"request_profile", ph.request_profile}, {"out", dir}};
        if (!ph.custom.empty()) {
            json c = json::object();
            for (const auto& [k, v] : ph.custom) c[k] = json::parse(v);
            row["custom"] = c;
        }
        for (const auto& k : keys)
            if (r.contains(k)) row[k] = r[k], weighted[k] += r[k].get<double>() * ph.duration_minutes;
        phases.push_back(row);
        minutes += ph.duration_minutes;
    }
    json out;
    out["workload"] = job.where(), out["target"] = args.target, out["mode"] = job.training() ? "training" : "inference";
    out["phases"] = phases;
    out["duration_minutes"] = minutes;
    for (const auto& [k, v] : weighted) out[k] = minutes > 0 ? v / minutes : 0.0;
    out["weighting"] = "each figure is the mean of the phases' weighted by duration_minutes";
    if (out.contains("tokens_per_s")) out["tokens_over_schedule"] = out["tokens_per_s"].get<double>() * minutes * 60.0;
    out["custom"] = custom_json(job);
    out["simulation"] = {{"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
    write_file_atomically(args.out_dir + "/last_run.json", out.dump(2) + "\n");
    if (args.format == "json") {
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::printf("%s on %s: %zu phases over %g minutes\n", job.where().c_str(), args.target.c_str(), job.phases.size(), minutes);
    for (const auto& p : phases)
        std::printf("  %-16s %6g min  x%-5g %-12s tokens/s %s  power %s per device\n", p["name"].get<std::string>().c_str(),
                    p["duration_minutes"].get<double>(), p["tokens_scale"].get<double>(), p["request_profile"].get<std::string>().c_str(),
                    p.contains("tokens_per_s") ? fmt::format("{:.1f}", p["tokens_per_s"].get<double>()).c_str() : "-",
                    p.contains("power_per_device_w") ? fmt::format("{:.1f} W", p["power_per_device_w"].get<double>()).c_str() : "-");
    if (out.contains("tokens_per_s")) std::printf("  weighted by duration: %.1f tokens/s\n", out["tokens_per_s"].get<double>());
    std::printf("  wrote %s/last_run.json (each phase under %s/phases/)\n", args.out_dir.c_str(), args.out_dir.c_str());
    return 0;
}

int cmd_run_job(const JobRunArgs& args) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto hash = args.workload.find('#');
    if (hash == std::string::npos)
        throw UserError("archsim run " + args.workload + " --target " + args.target,
                        "a parallel job is WORKLOADS.yaml#NAME, or FILE.toml#NAME of an llm entry with a parallelism table");
    const std::string wfile = args.workload.substr(0, hash), wname = args.workload.substr(hash + 1);
    const std::string ext = fs::path(wfile).extension().string();
    if (ext == ".toml" && !args.phase.empty()) throw UserError("--phase " + args.phase, "schedule phases are a workloads.yaml feature");
    if (args.format != "table" && args.format != "json")
        throw UserError("--format " + args.format, "a job reports as table or json (each device run's metrics.json is under OUT/devices/)");
    LlmJob job = ext == ".toml" ? read_llm_job_toml(wfile, wname) : read_llm_job_yaml(wfile, wname, args.phase);
    for (const auto& w : job.warnings) std::fprintf(stderr, "archsim: warning: %s\n", w.c_str());
    // the output folder, and no result of an earlier run that would look like this one's
    std::error_code ec;
    fs::create_directories(args.out_dir, ec);
    if (ec || !fs::is_directory(args.out_dir)) throw UserError(args.out_dir, "cannot create the output directory: " + ec.message());
    fs::remove(fs::path(args.out_dir) / "last_run.json", ec);
    if (args.phase.empty() && !job.phases.empty()) return run_phases(job, args, t0);
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
    check_placement(plan, cl, job.where());
    // the device runs
    const std::string dev_dir = args.out_dir + "/devices";
    fs::create_directories(dev_dir);
    // the one rule (sim/engine/run_choice.h): --precision or a device --set, else the workload
    const std::vector<KeyOverride> device_overrides = set_overrides(args.device_sets);
    const MachineSetup device = load_machine(cl.device, "", device_overrides);
    const RunChoice precision =
        choose_precision(args.precision, device_overrides, job.model.weights_precision, job.where(), device, job.training());
    std::string runtime = args.runtime;
    if (runtime.empty() && fs::exists(runtimes_dir() + "/" + job.framework + ".toml")) runtime = job.framework;
    if (!job.training()) return run_inference(job, target, cl, plan, args, dev_dir, device, precision, runtime, t0);
    std::vector<DeviceTask> tasks;
    for (size_t k = 0; k < plan.kinds.size(); ++k) tasks.push_back({"train", k, dev_dir + "/chunk" + std::to_string(k)});
    run_devices(plan, job, cl, dev_dir, tasks, precision.value, runtime, args.device_sets, args.quiet, device_launches_graphs(device));
    std::vector<ChunkRun> runs;
    for (size_t k = 0; k < plan.kinds.size(); ++k) runs.push_back(read_chunk_run(dev_dir + "/chunk" + std::to_string(k) + "/metrics.json"));
    // the plan must fit each device's memory (unless asked to simulate it anyway)
    const std::vector<StageMemory> stage_mem = stage_memory(plan, runs);
    if (const double cap = runs[0].capacity_bytes; cap > 0 && !args.allow_over_capacity)
        for (size_t i = 0; i < stage_mem.size(); ++i)
            if (const StageMemory& sm = stage_mem[i]; sm.total() > cap)
                throw UserError(job.where() + " on " + target.name,
                                "pipeline stage " + std::to_string(i) + " " +
                                    over_capacity_reason(sm.total(), {{"weights", sm.weights}, {"gradients", sm.gradients},
                                                                      {"optimizer state", sm.optimizer_state}, {"activations", sm.activations},
                                                                      {"workspace", sm.workspace}},
                                                         cap, "the device's dram.capacity_gib"));
    JobOptions opt;
    opt.gpudirect_rdma = job.tuning.gpudirect_rdma;
    JobModel model = build_job(plan, cl, runs, opt, job.where());
    model.name = job.where(), model.target = target.name, model.precision = precision.value, model.device_peak_macs_per_s = runs[0].peak_macs_per_s;
    const JobResult res = simulate_job(model, args.out_dir + "/trace.h5", args.detail);

    // the report
    const ParallelismSpec& s = plan.spec;
    const double step_s = res.step_ps * 1e-12, devices = double(s.devices());
    // model FLOPs: Megatron's formula for a GPT (what its paper and table count), else the device
    // runs' own (2 x forward and gradient MACs of each chunk, per microbatch)
    double run_flops = 0, run_recompute_flops = 0;
    for (int64_t st = 0; st < s.pp; ++st)
        for (int64_t c = 0; c < s.virtual_stages; ++c) {
            const auto& r = runs[plan.kind_of[size_t(st)][size_t(c)]];
            run_flops += r.model_flops, run_recompute_flops += 2.0 * r.recompute_macs;
        }
    run_flops *= double(plan.microbatches) * double(s.tp * s.dp);
    run_recompute_flops *= double(plan.microbatches) * double(s.tp * s.dp);
    const bool megatron = job.model.model_family == "gpt";
    const double flops = megatron ? megatron_flops_per_iteration(job.model, s.global_batch) : run_flops;
    const double per_dev = flops / devices / step_s, peak = runs[0].peak_macs_per_s * 2.0;
    // MFU and HFU as Korthikanti et al. (2022) define them: model FLOPs (no recomputation) and
    // hardware FLOPs (recomputation included) over the peak
    const double model_flops = megatron ? gpt_model_flops_per_iteration(job.model, s.global_batch) : run_flops;
    const double hardware_flops =
        megatron ? gpt_hardware_flops_per_iteration(job.model, s.global_batch, s.recompute) : run_flops + run_recompute_flops;
    const double mfu = peak > 0 ? model_flops / devices / step_s / peak : 0.0, hfu = peak > 0 ? hardware_flops / devices / step_s / peak : 0.0;
    const size_t crit = size_t(std::max_element(res.stages.begin(), res.stages.end(), [](auto& a, auto& b) { return a.end_ps < b.end_ps; }) - res.stages.begin());
    double compute = 0, exposed = 0, idle = 0, energy_dev = 0;
    std::map<std::string, double> exposed_by;
    for (const auto& st : res.stages) {
        compute += st.compute_ps, exposed += st.exposed_comm_ps, idle += st.idle_ps, energy_dev += st.energy_j;
        for (const auto& [k, v] : st.exposed_by) exposed_by[k] += v * 1e-12 / double(res.stages.size());
    }
    const double n = double(res.stages.size());
    const double waiting_j = waiting_static_j(res, runs[0].static_w, res.step_ps);  // bubbles, exposed communication
    energy_dev += waiting_j;
    const double energy_job = energy_dev / n * devices;
    json out;
    out["workload"] = job.where();
    out["target"] = target.name, out["cluster"] = cl.file, out["device"] = cl.device, out["framework"] = job.framework;
    out["device_runtime"] = runtime.empty() ? "the device config's" : runtime;
    out["devices"] = s.devices();
    out["model"] = {{"family", job.model.model_family}, {"hidden", job.model.hidden}, {"layers", job.model.layers}, {"heads", job.model.heads},
                    {"vocab", job.model.vocab}, {"ffn", job.model.ffn}, {"sequence", job.model.prompt},
                    {"parameters", job.model.parameters()}, {"precision", precision.value}, {"precision_from", precision.from}};
    out["parallelism"] = {{"tp", s.tp}, {"pp", s.pp}, {"dp", s.dp}, {"ep", s.ep}, {"virtual_stages", s.virtual_stages},
                          {"schedule", s.schedule}, {"microbatch", s.microbatch}, {"global_batch", s.global_batch},
                          {"microbatches_per_pipeline", plan.microbatches}, {"sequence_parallel", s.sequence_parallel},
                          {"zero_stage", s.zero_stage}, {"dp_overlap", s.dp_overlap}, {"recompute", s.recompute}, {"optimizer", s.optimizer}};
    out["step_time_s"] = step_s;
    out["tokens_per_s"] = double(s.global_batch) * double(job.model.prompt) / step_s;
    out["samples_per_s"] = double(s.global_batch) / step_s;
    out["model_flops_per_iteration"] = flops;
    out["flops_formula"] = megatron ? "Megatron-LM: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) (Narayanan et al. SC21 eq. 3)"
                                    : "the device runs' model FLOPs: 2 x forward and gradient MACs (recomputation excluded)";
    out["model_flops_from_device_runs"] = run_flops;
    out["tflops_per_device"] = per_dev / 1e12;
    out["peak_tflops_per_device"] = peak / 1e12;
    out["mfu"] = mfu;
    out["hfu"] = hfu;
    out["mfu_formula"] = megatron ? "model FLOPs, recomputation excluded: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (Korthikanti et al. 2022)"
                                  : "the device runs' model FLOPs (recomputation excluded)";
    out["hfu_formula"] = megatron ? "hardware FLOPs with recompute = " + s.recompute + " (Korthikanti et al. 2022; full: Megatron's formula)"
                                  : "the device runs' model FLOPs plus their recomputation's forward FLOPs";
    out["breakdown_s"] = {{"compute", compute * 1e-12 / n}, {"exposed_communication", exposed * 1e-12 / n}, {"bubble", idle * 1e-12 / n},
                          {"exposed_by", exposed_by}, {"note", "mean over the pipeline stages' devices; compute + exposed + bubble = step"}};
    out["pipeline"] = {{"schedule", s.schedule}, {"bubble_fraction_ideal", bubble_fraction(s.pp, s.virtual_stages, plan.microbatches)},
                       {"critical_stage", crit}};
    out["communication"] = comm_json(res);
    out["communication_note"] = "summed over one device per pipeline stage (each stands for its tensor and data-parallel peers)";
    json stages = json::array();
    for (size_t i = 0; i < res.stages.size(); ++i) {
        const auto& st = res.stages[i];
        stages.push_back({{"stage", i}, {"compute_s", st.compute_ps * 1e-12}, {"exposed_communication_s", st.exposed_comm_ps * 1e-12},
                          {"bubble_s", st.idle_ps * 1e-12}, {"end_s", st.end_ps * 1e-12}, {"energy_j", st.energy_j},
                          {"memory_bytes", stage_mem[i].total()},
                          {"memory_fits", runs[0].capacity_bytes <= 0 || stage_mem[i].total() <= runs[0].capacity_bytes}});
    }
    out["stages"] = stages;
    double most_memory = 0;
    for (const StageMemory& sm : stage_mem) most_memory = std::max(most_memory, sm.total());
    out["memory_per_device_bytes"] = most_memory;
    out["memory_capacity_bytes"] = runs[0].capacity_bytes;
    out["energy_per_device_j"] = energy_dev / n;
    out["static_while_waiting_per_device_j"] = waiting_j / n;
    out["energy_job_j"] = energy_job;
    out["power_per_device_w"] = energy_dev / n / step_s;
    out["power_job_w"] = energy_job / step_s;
    out["node_overhead_power"] = node_power_json(cl, s.devices(), energy_job / step_s);
    out["link_bytes"] = {{"intra", res.intra_bytes}, {"inter", res.inter_bytes}, {"link_contention_s", res.link_queued_ps * 1e-12}};
    json nm = json::array();
    if (job.tuning.cuda_graphs && !device_launches_graphs(device))
        nm.push_back("cuda_graphs: this device model has no CUDA-graph launch cost (kernels keep its own launch overhead)");
    if (job.tuning.virt == "sriov") nm.push_back("virt = sriov: virtualization overheads are not modeled");
    if (cl.intra_pj_per_byte == 0 || cl.inter_pj_per_byte == 0) nm.push_back("link energy: the cluster gives no pJ/byte for a link level, so its transfers cost no energy");
    if (runs[0].static_w == 0) nm.push_back("device static/idle power: this device config models none (energy.static_w = 0)");
    nm.push_back("node overheads: " + out["node_overhead_power"]["not_modeled"].get<std::string>());
    nm.push_back("gradient clipping's norm all-reduce and the loss-scale check: small, not simulated");
    if (!job.phases.empty()) nm.push_back("schedule.phases: read and kept, not yet simulated phase by phase (the step is the steady state)");
    add_unmodeled_settings(job, cl, nm);
    out["not_modeled"] = nm;
    out["custom"] = custom_json(job);
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
    std::fputs(choice_line(precision, runtime).c_str(), stdout);
    std::printf("  step time            %s\n", with_unit(step_s, "s").c_str());
    std::printf("  per-device           %.1f TFLOP/s (%s), MFU %.1f%% (model FLOPs), HFU %.1f%% (recomputation included)\n", per_dev / 1e12,
                megatron ? "Megatron's formula" : "model FLOPs of the device runs", 100 * mfu, 100 * hfu);
    std::printf("  split (mean device)  compute %s, exposed communication %s, bubble %s\n", with_unit(compute * 1e-12 / n, "s").c_str(),
                with_unit(exposed * 1e-12 / n, "s").c_str(), with_unit(idle * 1e-12 / n, "s").c_str());
    for (const auto& [k, v] : exposed_by) std::printf("    exposed %-14s %s\n", k.c_str(), with_unit(v, "s").c_str());
    for (const auto& c : res.comm)
        std::printf("  %-9s %-14s %-12s %-6s x%-7lld %s, %s of it hidden\n", c.scope.c_str(), c.kind.c_str(), c.algorithm.c_str(), c.protocol.c_str(),
                    (long long)c.count, with_unit(c.time_ps * 1e-12, "s").c_str(), with_unit((c.time_ps - c.exposed_ps) * 1e-12, "s").c_str());
    const double most = out["memory_per_device_bytes"].get<double>();
    std::printf("  memory per device    %s (peak stage)%s\n", with_unit(most, "B").c_str(),
                runs[0].capacity_bytes > 0 && most > runs[0].capacity_bytes ? fmt::format(": over the device's {}", with_unit(runs[0].capacity_bytes, "B")).c_str() : "");
    std::printf("  energy               %s per device, %s per job\n", with_unit(energy_dev / n, "J").c_str(), with_unit(energy_job, "J").c_str());
    print_power_lines(out);
    std::printf("  wrote %s/last_run.json and %s/trace.h5 (archsim trace summary / export --perfetto)\n", args.out_dir.c_str(), args.out_dir.c_str());
    return 0;
}

}  // namespace archsim::cli
