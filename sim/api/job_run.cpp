#include "sim/api/job_run.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "sim/api/job_parts.h"
#include "sim/api/process_pool.h"
#include "sim/api/run_model.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"

namespace archsim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool on_off(const std::string& v, const std::string& flag, bool def) {
    if (v.empty()) return def;
    if (v == "on" || v == "true" || v == "1") return true;
    if (v == "off" || v == "false" || v == "0") return false;
    throw UserError(flag + " " + v, "must be on or off");
}

/// A job with schedule.phases: each phase simulated in its own process (`run ... --phase NAME`
/// under OUT/phases/NAME, in turn: each already runs its device simulations in parallel), then
/// OUT/last_run.json holds every phase's figures and their means weighted by duration.
json run_phases(const LlmJob& job, const JobRunArgs& args, std::chrono::steady_clock::time_point t0) {
    json phases = json::array();
    std::vector<std::pair<json, double>> served;  // a serving job's phase runs
    double minutes = 0;
    std::map<std::string, double> weighted;
    static const std::vector<std::string> keys = {"step_time_s", "tokens_per_s", "tflops_per_device", "mfu", "ttft_s", "time_per_output_token_s",
                                                  "power_per_device_w", "power_job_w"};
    for (const JobPhase& ph : job.phases) {
        const std::string dir = args.out_dir + "/phases/" + ph.name;
        fs::create_directories(dir);
        std::vector<std::string> a = {"run", args.workload, "--out", dir, "--phase", ph.name, "--format", "json", "--detail", args.detail,
                                      "--devices-dir", args.out_dir + "/devices"};
        const std::vector<std::string> common = child_job_args(args);
        a.insert(a.end(), common.begin(), common.end());
        if (args.microbatch > 0) a.insert(a.end(), {"--microbatch", std::to_string(args.microbatch)});
        for (const auto& s : args.parallel_sets) a.insert(a.end(), {"--parallel", s});
        for (const auto& s : args.serving_sets) a.insert(a.end(), {"--serving", s});
        if (!args.search.empty()) a.insert(a.end(), {"--search", args.search});
        if (args.note) args.note(fmt::format("{}: phase {} ({:g} minutes)", job.where(), ph.name, ph.duration_minutes));
        const int status = run_child(self_program(), {a, dir + "/report.json", dir + "/stderr.log"});
        if (!exited_ok(status))
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
        if (r.contains("serving")) served.push_back({r, ph.duration_minutes});
        minutes += ph.duration_minutes;
    }
    json out;
    out["workload"] = job.where(), out["target"] = args.target, out["mode"] = job.training() ? "training" : job.serving.given ? "serving" : "inference";
    out["phases"] = phases;
    out["duration_minutes"] = minutes;
    for (const auto& [k, v] : weighted) out[k] = minutes > 0 ? v / minutes : 0.0;
    out["weighting"] = "each figure is the mean of the phases' weighted by duration_minutes";
    if (!served.empty()) out["serving"] = schedule_serving(served);
    if (out.contains("tokens_per_s")) out["tokens_over_schedule"] = out["tokens_per_s"].get<double>() * minutes * 60.0;
    out["custom"] = custom_json(job);
    out["simulation"] = {{"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
    write_file_atomically(args.out_dir + "/last_run.json", out.dump(2) + "\n");
    return out;
}

}  // namespace

json run_job(const JobRunArgs& args) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto hash = args.workload.find('#');
    if (hash == std::string::npos)
        throw UserError("archsim run " + args.workload + " --target " + args.target,
                        "a parallel job is WORKLOADS.yaml#NAME, or FILE.toml#NAME of an llm entry with a parallelism table");
    const std::string wfile = args.workload.substr(0, hash), wname = args.workload.substr(hash + 1);
    const std::string ext = fs::path(wfile).extension().string();
    if (ext == ".toml" && !args.phase.empty()) throw UserError("--phase " + args.phase, "schedule phases are a workloads.yaml feature");
    LlmJob job = ext == ".toml" ? read_llm_job_toml(wfile, wname) : read_llm_job_yaml(wfile, wname, args.phase);
    if (args.warn)
        for (const auto& w : job.warnings) args.warn(w);
    // the output folder, and no result of an earlier run that would look like this one's
    std::error_code ec;
    fs::create_directories(args.out_dir, ec);
    if (ec || !fs::is_directory(args.out_dir)) throw UserError(args.out_dir, "cannot create the output directory: " + ec.message());
    fs::remove(fs::path(args.out_dir) / "last_run.json", ec);
    if (args.phase.empty() && !job.phases.empty()) return run_phases(job, args, t0);
    // CLI flags over runtime_tuning
    if (args.microbatch > 0) job.tuning.microbatch = args.microbatch, job.parallel.microbatch = args.microbatch;
    if (args.global_batch > 0) job.parallel.global_batch = args.global_batch;
    for (const std::string& a : args.parallel_sets) set_parallel_field(job.parallel, a);
    for (const std::string& a : args.serving_sets) set_serving_field(job.serving, a);
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
    // the fabric: InfiniBand or RoCE as the network's kind (with its routing default), or the
    // target's own vendor fabric
    if (job.tuning.fabric == "IB") csets.push_back("network.kind=\"ib\"");
    if (job.tuning.fabric == "RoCE") csets.push_back("network.kind=\"roce\"");
    if (job.tuning.fabric == "Vendor") {
        if (target.vendor_fabric.empty())
            throw UserError(job.where() + ".runtime_tuning.fabric = Vendor",
                            "the target " + target.name + " names no vendor_fabric (a mapping of its network keys, e.g. { nic_gbit: 800, "
                            "efficiency: 0.9 }: archsim params cluster lists them)");
        csets.insert(csets.end(), target.vendor_fabric.begin(), target.vendor_fabric.end());
    }
    const ClusterConfig cl = load_cluster(target.cluster, csets);
    const bool search = args.search == "on" || (args.search.empty() && job.track == "best");
    if (search && !job.training() && !job.serving.given && args.warn)
        args.warn(job.where() + ": the plan search covers training and serving jobs; this inference job (one request batch) runs its own plan");
    // a searched job starts from its own plan when that plan is valid here (the search's
    // reference), else from none: the search replaces it
    ParallelPlan plan;
    try {
        plan = make_parallel_plan(job.model, job.parallel, job.where());
        check_placement(plan, cl, job.where());
    } catch (const UserError&) {
        if (!(search && (job.training() || job.serving.given))) throw;
        plan = ParallelPlan{};
    }
    // the device runs
    const std::string dev_dir = args.devices_dir.empty() ? args.out_dir + "/devices" : args.devices_dir;
    fs::create_directories(dev_dir);
    // the one rule (sim/engine/run_choice.h): --precision or a device --set, else the workload
    const std::vector<KeyOverride> device_overrides = set_overrides(args.device_sets);
    const MachineSetup device = load_machine(cl.device, "", device_overrides);
    const RunChoice precision =
        choose_precision(args.precision, device_overrides, job.model.weights_precision, job.where(), device, job.training());
    std::string runtime = args.runtime;
    if (runtime.empty() && fs::exists(runtimes_dir() + "/" + job.framework + ".toml")) runtime = job.framework;
    const JobContext c{job, target, cl, plan, args, device, precision, runtime, dev_dir, t0};
    if (search && job.training()) return c.search_training();
    if (search && job.serving.given) return c.search_serving();
    return job.training() ? c.run_training() : job.serving.given ? c.run_serving() : c.run_inference();
}

}  // namespace archsim
