// The parallel-plan search of a training job (JobContext::search_training, job_parts.h): the
// plan space of workloads/parallel/plan_space.h, bounds from sim/cluster/job_bound.h, device runs
// shared between plans, each candidate's step simulated in a child `archsim run`.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <thread>

#include "sim/api/job_parts.h"
#include "sim/api/process_pool.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/cluster/job_bound.h"
#include "workloads/parallel/plan_space.h"

namespace archsim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Where a candidate stands: waiting for its device runs, waiting for its step's simulation,
/// simulated, or out (it cannot fit, or its simulation failed).
enum class Stage { Bounded, Ran, Simulated, Out };

struct Candidate {
    ParallelPlan plan;
    std::string id;
    Stage stage = Stage::Bounded;
    double bound_ps = 0;     ///< a lower bound on its step: roofline device runs, then its own
    double estimate_ps = 0;  ///< the order to try it in: the bound with the reference plan's efficiency
    double memory_estimate_bytes = 0;  ///< its lower bound, then a figure from device runs of its tp, microbatch and recomputation
    double step_ps = 0, memory_bytes = 0, tokens_per_s = 0, mfu = 0;  ///< once simulated
    std::string out_reason;  ///< why it is out
    std::vector<DeviceTask> tasks;
};

/// The priority of a candidate still in play: its estimate until its device runs give it a
/// tighter bound.
double key_of(const Candidate& c) { return c.stage == Stage::Bounded ? c.estimate_ps : c.bound_ps; }

/// What the search prices a plan's chunks with: per pass, device time over roofline time (1: the
/// roofline, a lower bound), and the memory figures a device run gives; what device runs of one
/// tensor-parallel size, expert split, microbatch and recomputation measured, or (before any)
/// what the reference plan's runs and Korthikanti et al.'s counts suggest.
struct Efficiency {
    bool bound = true;  ///< times at the roofline with chunk_macs' lower-bound recomputation
    /// Device time over roofline time per pass; the recomputation's over its estimate basis
    /// (a full recomputation: the chunk's layers' forward; selective: chunk_macs').
    double forward = 1, backward = 1, recompute = 1;
    double optimizer_ps_per_param = 0, optimizer_bytes_per_param = 0;
    /// One microbatch's activations a layer keeps once its forward ends, tensor parallelism's
    /// replicated part whole (stage_memory splits it under sequence parallelism); -1: estimate it.
    double after_forward_per_layer = -1;
    double backward_extra = -1;  ///< what a chunk's backward adds to that (recomputed values); -1: estimate it
    double workspace = 0;        ///< a chunk's workspace, bytes
};

/// What device runs of one tensor-parallel size, expert split, microbatch and recomputation
/// measured (their chunks' sizes do not matter: time and memory per layer).
using RunKey = std::tuple<int64_t, int64_t, int64_t, std::string>;
RunKey run_key(const ParallelismSpec& s) { return {s.tp, s.ep, s.microbatch, s.recompute}; }

/// The chunk runs `plan` would have at `eff`: times from chunk_macs over the device's peak,
/// parameters from chunk_parameters; with eff.bound the times are lower bounds (memory unset).
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
            const double stand_in = k.head ? 0.0 : 2.0 * plan.activation_bytes;  // as stage_memory counts it
            r.saved_after_forward_bytes = stand_in + double(k.layers) * per_layer;
            r.saved_activations_bytes = r.saved_after_forward_bytes + (eff.backward_extra >= 0 ? eff.backward_extra : backward_extra_bytes_estimate(plan));
            r.workspace_bytes = eff.workspace;
        }
        runs.push_back(r);
    }
    return runs;
}

/// What `runs` (the device runs of `plan`'s chunk kinds) measured against the roofline.
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
        const double stand_in = sh.head ? 0.0 : 2.0 * plan.activation_bytes;
        e.after_forward_per_layer = std::max(e.after_forward_per_layer, (runs[k].saved_after_forward_bytes - stand_in) / double(std::max<int64_t>(1, sh.layers)));
    }
    e.forward = rf > 0 ? f / rf : 1, e.backward = rb > 0 ? b / rb : 1, e.recompute = rr > 0 ? r / rr : e.forward;
    e.optimizer_ps_per_param = params > 0 ? opt_ps / params : 0, e.optimizer_bytes_per_param = params > 0 ? opt_bytes / params : 0;
    return e;
}

json plan_json(const ParallelismSpec& s) {
    return {{"tp", s.tp}, {"pp", s.pp}, {"dp", s.dp}, {"ep", s.ep}, {"virtual_stages", s.virtual_stages}, {"microbatch", s.microbatch},
            {"schedule", s.schedule}, {"recompute", s.recompute}, {"sequence_parallel", s.sequence_parallel}, {"zero_stage", s.zero_stage}};
}

/// The --parallel assignments that give a child run exactly this plan.
std::vector<std::string> parallel_args(const ParallelismSpec& s) {
    std::vector<std::string> a;
    for (const auto& kv : std::vector<std::string>{
             "tp=" + std::to_string(s.tp), "pp=" + std::to_string(s.pp), "dp=" + std::to_string(s.dp), "ep=" + std::to_string(s.ep),
             "virtual_stages=" + std::to_string(s.virtual_stages), "microbatch=" + std::to_string(s.microbatch),
             "global_batch=" + std::to_string(s.global_batch), "zero_stage=" + std::to_string(s.zero_stage),
             "sequence_parallel=" + std::string(s.sequence_parallel ? "true" : "false"), "dp_overlap=" + std::string(s.dp_overlap ? "true" : "false"),
             "schedule=" + s.schedule, "recompute=" + s.recompute})
        a.insert(a.end(), {"--parallel", kv});
    return a;
}

}  // namespace

json JobContext::search_training() const {
    const auto started = std::chrono::steady_clock::now();
    auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    const std::string where = job.where() + " on " + target.name;
    const int64_t devices = job.parallel.devices();
    if (devices > cl.devices())
        throw UserError(where, "the job's tp x pp x dp = " + std::to_string(devices) + " devices; the target has " + std::to_string(cl.devices()));
    const std::string dir = args.out_dir + "/search";
    fs::create_directories(dir);
    std::ofstream log(dir + "/search_log.txt");
    log << fmt::format("search of {}: {} devices, global batch {}\n", where, devices, job.parallel.global_batch);
    const double capacity = args.allow_over_capacity ? 0.0 : device.dram_capacity_bytes();
    const JobOptions opt = job_options(job);

    // the space, and what cannot fit before anything is simulated
    std::vector<Candidate> cands;
    int64_t enumerated = 0, out_placement = 0, out_memory_bound = 0, out_memory = 0, out_failed = 0;
    for (const ParallelismSpec& s : enumerate_plans(job.model, job.parallel, devices, cl.devices_per_node)) {
        ++enumerated;
        Candidate c;
        c.plan = make_parallel_plan(job.model, s, job.where());
        try {
            check_placement(c.plan, cl, job.where());
        } catch (const UserError&) {
            ++out_placement;
            continue;
        }
        if (capacity > 0 && memory_lower_bound_bytes(c.plan) > capacity) {
            ++out_memory_bound;
            continue;
        }
        c.id = plan_id(s);
        for (size_t k = 0; k < c.plan.kinds.size(); ++k) c.tasks.push_back({"train", k, train_run_dir(dev_dir, c.plan, k)});
        cands.push_back(std::move(c));
    }
    log << fmt::format("{} plans: {} do not fit the placement, {} cannot fit memory (lower bound), {} left ({:.2f} s)\n", enumerated, out_placement,
                       out_memory_bound, cands.size(), elapsed_s());
    if (cands.empty())
        throw UserError(where, fmt::format("no parallel plan of the {} on {} devices fits (placement: {}, memory lower bound: {} of {} plans)", job.where(),
                                           devices, out_placement, out_memory_bound, enumerated));
    for (size_t i = 0; i < cands.size(); ++i)
        for (size_t k = 0; k < cands[i].tasks.size(); ++k) cands[i].tasks[k].plan = &cands[i].plan;

    // the reference: the job's own plan when it is a candidate, else the one cheapest to simulate
    size_t ref = cands.size();
    for (size_t i = 0; i < cands.size() && !plan.kinds.empty(); ++i)
        if (plan_id(cands[i].plan.spec) == plan_id(plan.spec)) ref = i;
    const bool job_plan_candidate = ref < cands.size();
    if (!job_plan_candidate)
        ref = size_t(std::min_element(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
                         const double wa = double(a.plan.spec.microbatch) / double(a.plan.spec.tp), wb = double(b.plan.spec.microbatch) / double(b.plan.spec.tp);
                         return wa != wb ? wa < wb : a.plan.layers_per_chunk < b.plan.layers_per_chunk;
                     }) - cands.begin());
    size_t device_runs = 0;
    auto run_tasks = [&](const std::vector<size_t>& which) {
        std::vector<DeviceTask> tasks;
        for (size_t i : which) tasks.insert(tasks.end(), cands[i].tasks.begin(), cands[i].tasks.end());
        std::sort(tasks.begin(), tasks.end(), [](const DeviceTask& a, const DeviceTask& b) { return a.dir < b.dir; });
        tasks.erase(std::unique(tasks.begin(), tasks.end(), [](const DeviceTask& a, const DeviceTask& b) { return a.dir == b.dir; }), tasks.end());
        device_runs += tasks.size();
        run_devices(*this, tasks);
    };
    auto real_runs = [&](const Candidate& c) {
        std::vector<ChunkRun> runs;
        for (const DeviceTask& t : c.tasks) runs.push_back(read_chunk_run(t.dir + "/metrics.json"));
        return runs;
    };
    run_tasks({ref});
    const std::vector<ChunkRun> ref_runs = real_runs(cands[ref]);
    const double peak = ref_runs.at(0).peak_macs_per_s;
    if (!(peak > 0)) throw UserError(where, "the device run " + cands[ref].tasks[0].dir + " gives no peak MACs/s to bound plans by");
    // what device runs measured, by tp, ep, microbatch and recomputation; the reference's for the rest
    std::map<RunKey, Efficiency> learned;
    const Efficiency eff = measured(cands[ref].plan, ref_runs, peak);  // the reference's
    learned[run_key(cands[ref].plan.spec)] = eff;
    log << fmt::format("reference {}: device time over roofline forward {:.3f}, backward {:.3f}, recompute {:.3f} ({:.2f} s)\n", cands[ref].id, eff.forward,
                       eff.backward, eff.recompute, elapsed_s());
    // a candidate's estimate: its roofline at the efficiency measured for its tp, ep, microbatch
    // and recomputation (else for the same without the recomputation, else the reference's), and
    // its memory with the activations per layer measured there (else Korthikanti et al.'s counts)
    auto estimate = [&](Candidate& c) {
        const ParallelismSpec& p = c.plan.spec;
        Efficiency e = eff;  // the reference's times and optimizer; memory per layer estimated, workspace scaled by tokens per rank
        e.after_forward_per_layer = e.backward_extra = -1;
        e.workspace = eff.workspace * (double(p.microbatch) / double(p.tp)) / (double(cands[ref].plan.spec.microbatch) / double(cands[ref].plan.spec.tp));
        if (auto it = learned.find(run_key(p)); it != learned.end()) {
            e = it->second;
        } else {
            for (const auto& [k, v] : learned)
                if (std::get<0>(k) == p.tp && std::get<1>(k) == p.ep && std::get<2>(k) == p.microbatch)
                    e.forward = v.forward, e.backward = v.backward, e.workspace = v.workspace;
        }
        c.estimate_ps = std::max(c.bound_ps, step_lower_bound_ps(build_job(c.plan, cl, modeled_runs(c.plan, peak, e), opt, job.where())));
        double most = 0;
        for (const StageMemory& m : stage_memory(c.plan, modeled_runs(c.plan, peak, e))) most = std::max(most, m.total());
        c.memory_estimate_bytes = std::max(memory_lower_bound_bytes(c.plan), most);
    };
    for (Candidate& c : cands) {
        c.bound_ps = step_lower_bound_ps(build_job(c.plan, cl, modeled_runs(c.plan, peak, Efficiency{}), opt, job.where()));
        estimate(c);
    }
    log << fmt::format("bounds and estimates of {} plans ({:.2f} s)\n", cands.size(), elapsed_s());
    // plans whose memory estimate is over the capacity go last
    auto over = [&](const Candidate& c) { return capacity > 0 && c.stage == Stage::Bounded && c.memory_estimate_bytes > capacity; };

    // a candidate whose device runs are done: its exact memory, then its bound from its own runs
    std::set<RunKey> newly_learned;
    auto ran = [&](Candidate& c) {
        const std::vector<ChunkRun> runs = real_runs(c);
        if (learned.emplace(run_key(c.plan.spec), measured(c.plan, runs, peak)).second) newly_learned.insert(run_key(c.plan.spec));
        double most = 0;
        for (const StageMemory& m : stage_memory(c.plan, runs)) most = std::max(most, m.total());
        if (capacity > 0 && most > capacity) {
            c.stage = Stage::Out, c.out_reason = fmt::format("needs {:.1f} GB per device", most / 1e9);
            ++out_memory;
            log << fmt::format("  {}: estimate {:.3f} s, memory estimate {:.1f} GB; {}\n", c.id, c.estimate_ps * 1e-12, c.memory_estimate_bytes / 1e9,
                               c.out_reason);
            return;
        }
        c.bound_ps = std::max(c.bound_ps, step_lower_bound_ps(build_job(c.plan, cl, runs, opt, job.where())));
        c.stage = Stage::Ran;
        log << fmt::format("  {}: estimate {:.3f} s, bound with its device runs {:.3f} s, memory {:.1f} GB\n", c.id, c.estimate_ps * 1e-12,
                           c.bound_ps * 1e-12, most / 1e9);
    };

    // best first: the lowest key among the plans still in play, a round of device runs and
    // step simulations at a time
    double best_ps = std::numeric_limits<double>::infinity();
    int64_t evaluated = 0, rounds = 0;
    const size_t width = 2 * std::max<size_t>(1, std::thread::hardware_concurrency());
    // a plan is worth its device runs while its estimate is below the best step and its memory
    // estimate within the device's, and worth its simulation while its bound with them is below
    // the best step (until the minimum is evaluated, every plan is, those estimated to fit first)
    auto in_play = [&](const Candidate& c) {
        if (c.stage == Stage::Simulated || c.stage == Stage::Out) return false;
        return evaluated < args.search_min_plans || (key_of(c) < best_ps && !over(c));
    };
    std::string stopped = "no plan left is estimated below the best step within the memory (plans_left: those whose roofline bound still is)";
    auto simulate = [&](const std::vector<size_t>& which) {
        std::vector<ChildTask> children;
        for (size_t i : which) {
            const std::string out = dir + "/" + cands[i].id;
            fs::create_directories(out);
            std::vector<std::string> a = {"run", args.workload, "--out", out, "--format", "json", "--quiet", "--detail", "kernel", "--devices-dir", dev_dir,
                                          "--search", "off"};
            const std::vector<std::string> common = child_job_args(args), par = parallel_args(cands[i].plan.spec);
            a.insert(a.end(), common.begin(), common.end());
            a.insert(a.end(), par.begin(), par.end());
            if (!args.phase.empty()) a.insert(a.end(), {"--phase", args.phase});
            if (args.allow_over_capacity) a.push_back("--allow-over-capacity");
            children.push_back({a, out + "/report.json", out + "/stderr.log"});
        }
        run_children(self_program(), children.size(), 0, [&](size_t k) { return children[k]; },
                     [&](size_t k, int status) {
                         Candidate& c = cands[which[k]];
                         if (!exited_ok(status)) {
                             c.stage = Stage::Out, c.out_reason = child_failure(status, children[k].err_path);
                             ++out_failed;
                             return;
                         }
                         std::ifstream in(dir + "/" + c.id + "/last_run.json");
                         const json r = json::parse(in);
                         c.stage = Stage::Simulated, ++evaluated;
                         c.step_ps = r.at("step_time_s").get<double>() * 1e12, c.memory_bytes = r.value("memory_per_device_bytes", 0.0);
                         c.tokens_per_s = r.value("tokens_per_s", 0.0), c.mfu = r.value("mfu", 0.0);
                     });
        for (size_t i : which)
            if (cands[i].stage == Stage::Simulated) best_ps = std::min(best_ps, cands[i].step_ps);
    };
    // the job's own plan is always evaluated: what the search is measured against
    if (job_plan_candidate) {
        ran(cands[ref]);
        if (cands[ref].stage == Stage::Ran) simulate({ref});
    }
    while (true) {
        std::vector<size_t> live;
        for (size_t i = 0; i < cands.size(); ++i)
            if (in_play(cands[i])) live.push_back(i);
        if (live.empty()) break;
        if (args.search_budget_s > 0 && elapsed_s() > args.search_budget_s && evaluated >= args.search_min_plans) {
            stopped = fmt::format("the budget of {:g} s was spent", args.search_budget_s);
            break;
        }
        std::stable_sort(live.begin(), live.end(), [&](size_t a, size_t b) {
            const bool oa = over(cands[a]), ob = over(cands[b]);
            return oa != ob ? ob : key_of(cands[a]) < key_of(cands[b]);
        });
        if (live.size() > width) live.resize(width);
        std::vector<size_t> need_runs, to_simulate;
        for (size_t i : live)
            if (cands[i].stage == Stage::Bounded) need_runs.push_back(i);
        if (!need_runs.empty()) run_tasks(need_runs);
        for (size_t i : live) {
            Candidate& c = cands[i];
            if (c.stage == Stage::Bounded) ran(c);
            if (c.stage == Stage::Ran && (evaluated + int64_t(to_simulate.size()) < args.search_min_plans || c.bound_ps < best_ps))
                to_simulate.push_back(i);
        }
        if (!to_simulate.empty()) simulate(to_simulate);
        // what this round's device runs measured sharpens the estimates of the plans that share it
        if (!newly_learned.empty()) {
            for (Candidate& c : cands) {
                if (c.stage != Stage::Bounded) continue;
                const ParallelismSpec& p = c.plan.spec;
                for (const RunKey& k : newly_learned)
                    if (std::get<0>(k) == p.tp && std::get<1>(k) == p.ep && std::get<2>(k) == p.microbatch) {
                        estimate(c);
                        break;
                    }
            }
            newly_learned.clear();
        }
        ++rounds;
        log << fmt::format("round {}: {} plans with device runs, {} simulated; {} evaluated, best {:.4f} s ({:.2f} s)\n", rounds, need_runs.size(),
                           to_simulate.size(), evaluated, best_ps * 1e-12, elapsed_s())
            << std::flush;  // a long search's log can be followed
    }
    std::vector<size_t> done;
    double lowest_left = std::numeric_limits<double>::infinity();  // the lowest bound of the plans the budget left
    int64_t pruned = 0, left = 0;
    for (size_t i = 0; i < cands.size(); ++i) {
        if (cands[i].stage == Stage::Simulated) done.push_back(i);
        else if (cands[i].stage != Stage::Out && cands[i].bound_ps >= best_ps) ++pruned;
        else if (cands[i].stage != Stage::Out) lowest_left = std::min(lowest_left, cands[i].bound_ps), ++left;
    }
    if (done.empty()) {
        std::string why = "every plan's device runs exceed the memory";
        for (const Candidate& c : cands)
            if (c.stage == Stage::Out && !c.out_reason.empty()) why = c.out_reason;
        throw UserError(where, "no plan's step could be simulated: " + why);
    }
    std::stable_sort(done.begin(), done.end(), [&](size_t a, size_t b) {
        const Candidate &x = cands[a], &y = cands[b];
        return x.step_ps != y.step_ps ? x.step_ps < y.step_ps : x.memory_bytes < y.memory_bytes;
    });
    const Candidate& best = cands[done[0]];
    const double search_s = elapsed_s();
    log << fmt::format("best {} at {:.4f} s; {} evaluated, {} device runs, {:.2f} s\n", best.id, best.step_ps * 1e-12, evaluated, device_runs, search_s);

    // the best plan's own run, as a plain run of it
    const JobContext best_run{job, target, cl, best.plan, args, device, precision, runtime, dev_dir, t0};
    json out = best_run.run_training();
    json top = json::array();
    for (size_t k = 0; k < done.size() && k < 10; ++k) {
        const Candidate& c = cands[done[k]];
        json row = {{"id", c.id}, {"parallelism", plan_json(c.plan.spec)}};
        row["step_time_s"] = c.step_ps * 1e-12, row["memory_per_device_bytes"] = c.memory_bytes;
        row["tokens_per_s"] = c.tokens_per_s, row["mfu"] = c.mfu;
        top.push_back(row);
    }
    json yours = {{"id", plan.kinds.empty() ? "" : plan_id(plan.spec)}};
    if (plan.kinds.empty()) yours["status"] = "not valid on this target";
    else if (!job_plan_candidate) yours["status"] = "does not fit the devices' memory (lower bound)";
    else if (cands[ref].stage == Stage::Simulated) yours["status"] = "evaluated", yours["step_time_s"] = cands[ref].step_ps * 1e-12;
    else yours["status"] = cands[ref].stage == Stage::Out ? "out: " + cands[ref].out_reason : "pruned by its bound";
    const json best_j = {{"id", best.id}, {"parallelism", plan_json(best.plan.spec)}, {"step_time_s", best.step_ps * 1e-12}};
    out["search"] = {
        {"method", "best first over enumerate_plans (workloads/parallel/plan_space.h): plans ordered by a roofline bound on their step scaled by "
                   "the reference plan's device efficiency, device runs shared by plans that give a device the same work, a plan dropped once "
                   "its lower bound (step_lower_bound_ps with its own device runs) is not below the best simulated step"},
        {"devices", devices},
        {"plans_enumerated", enumerated},
        {"plans_infeasible", out_placement + out_memory_bound + out_memory + out_failed},
        {"infeasible_by", {{"placement", out_placement}, {"memory_lower_bound", out_memory_bound}, {"memory", out_memory}, {"simulation_failed", out_failed}}},
        {"plans_evaluated", evaluated},
        {"plans_pruned", pruned},
        {"plans_left", left},
        {"device_runs", device_runs},
        {"rounds", rounds},
        {"stopped", stopped},
        {"gap_to_lowest_bound_left", left > 0 ? (best.step_ps - lowest_left) / best.step_ps : 0.0},
        {"best", best_j},
        {"top", top},
        {"job_plan", yours},
        {"wall_s", search_s},
        {"log", dir + "/search_log.txt"}};
    write_file_atomically(args.out_dir + "/last_run.json", out.dump(2) + "\n");
    return out;
}

}  // namespace archsim
