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
#include "sim/api/plan_pricing.h"
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
    double memory_bound_bytes = 0;     ///< memory_lower_bound_bytes
    double memory_estimate_bytes = 0;  ///< the larger of that and stage_memory of its modeled runs (plan_pricing.h)
    double step_ps = 0, memory_bytes = 0, tokens_per_s = 0, mfu = 0;  ///< once simulated
    std::string out_reason;  ///< why it is out
    std::vector<DeviceTask> tasks;
};

/// The priority of a candidate still in play: its estimate until its device runs give it a
/// tighter bound.
double key_of(const Candidate& c) { return c.stage == Stage::Bounded ? c.estimate_ps : c.bound_ps; }

json plan_json(const ParallelismSpec& s) {
    return {{"tp", s.tp}, {"pp", s.pp}, {"dp", s.dp}, {"ep", s.ep}, {"virtual_stages", s.virtual_stages}, {"microbatch", s.microbatch},
            {"schedule", s.schedule}, {"recompute", s.recompute}, {"sequence_parallel", s.sequence_parallel}, {"zero_stage", s.zero_stage}};
}

/// The --parallel assignments that give a child run exactly this plan.
std::vector<std::string> parallel_args(const ParallelismSpec& s) {
    return {"tp=" + std::to_string(s.tp), "pp=" + std::to_string(s.pp), "dp=" + std::to_string(s.dp), "ep=" + std::to_string(s.ep),
            "virtual_stages=" + std::to_string(s.virtual_stages), "microbatch=" + std::to_string(s.microbatch),
            "global_batch=" + std::to_string(s.global_batch), "zero_stage=" + std::to_string(s.zero_stage),
            "sequence_parallel=" + std::string(s.sequence_parallel ? "true" : "false"), "dp_overlap=" + std::string(s.dp_overlap ? "true" : "false"),
            "schedule=" + s.schedule, "recompute=" + s.recompute};
}

/// One search of a training job's plans: its candidates, what device runs measured, its counts
/// and its log; run() does it (JobContext::search_training).
class PlanSearch {
public:
    explicit PlanSearch(const JobContext& c)
        : m_c(c), m_where(c.job.where() + " on " + c.target.name), m_dir(c.args.out_dir + "/search"), m_devices(c.job.parallel.devices()),
          m_capacity(c.args.allow_over_capacity ? 0.0 : c.device.dram_capacity_bytes()), m_opt(job_options(c.job)) {}

    json run();

private:
    double elapsed_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count(); }
    void enumerate();
    void choose_reference();
    void run_tasks(const std::vector<size_t>& which);
    std::vector<ChunkRun> real_runs(const Candidate& c) const;
    void estimate(Candidate& c);
    void ran(Candidate& c);
    void simulate(const std::vector<size_t>& which);
    /// Whether its memory estimate is over the device's (such plans go last, and are not worth
    /// device runs once the minimum is evaluated).
    bool over(const Candidate& c) const { return m_capacity > 0 && c.stage == Stage::Bounded && c.memory_estimate_bytes > m_capacity; }
    /// A plan is worth its device runs while its estimate is below the best step (and it is
    /// estimated to fit), worth its simulation while its bound with them is; until the minimum is
    /// evaluated, every plan is.
    bool in_play(const Candidate& c) const {
        if (c.stage == Stage::Simulated || c.stage == Stage::Out) return false;
        return m_evaluated < m_c.args.search_min_plans || (key_of(c) < m_best_ps && !over(c));
    }
    json report(const std::vector<size_t>& done, const std::string& stopped);

    const JobContext& m_c;
    const std::string m_where, m_dir;
    const int64_t m_devices;
    const double m_capacity;
    const JobOptions m_opt;
    const std::chrono::steady_clock::time_point m_started = std::chrono::steady_clock::now();
    std::ofstream m_log;
    std::vector<Candidate> m_cands;
    size_t m_ref = 0;                  ///< the reference plan: the job's own when it is a candidate
    bool m_job_plan_candidate = false;
    double m_peak = 0;                 ///< the device's peak MACs/s at the run precision
    Efficiency m_ref_eff;              ///< what the reference's device runs measured
    std::map<RunKey, Efficiency> m_learned;
    std::set<RunKey> m_newly_learned;  ///< since the estimates were last refreshed
    double m_best_ps = std::numeric_limits<double>::infinity();
    int64_t m_enumerated = 0, m_evaluated = 0, m_rounds = 0;
    int64_t m_out_placement = 0, m_out_memory_bound = 0, m_out_memory = 0, m_out_failed = 0;
    size_t m_device_runs = 0;
};

void PlanSearch::enumerate() {
    const JobContext& c = m_c;
    for (const ParallelismSpec& s : enumerate_plans(c.job.model, c.job.parallel, m_devices, c.cl.devices_per_node)) {
        ++m_enumerated;
        Candidate k;
        k.plan = make_parallel_plan(c.job.model, s, c.job.where());
        try {
            check_placement(k.plan, c.cl, c.job.where());
        } catch (const UserError&) {
            ++m_out_placement;
            continue;
        }
        k.memory_bound_bytes = memory_lower_bound_bytes(k.plan);
        if (m_capacity > 0 && k.memory_bound_bytes > m_capacity) {
            ++m_out_memory_bound;
            continue;
        }
        k.id = plan_id(s);
        for (size_t i = 0; i < k.plan.kinds.size(); ++i) k.tasks.push_back({"train", i, train_run_dir(c.dev_dir, k.plan, i)});
        m_cands.push_back(std::move(k));
    }
    for (Candidate& k : m_cands)  // m_cands holds still from here on
        for (DeviceTask& t : k.tasks) t.plan = &k.plan;
    m_log << fmt::format("{} plans: {} do not fit the placement, {} cannot fit memory (lower bound), {} left ({:.2f} s)\n", m_enumerated,
                         m_out_placement, m_out_memory_bound, m_cands.size(), elapsed_s());
    if (m_cands.empty())
        throw UserError(m_where, fmt::format("no parallel plan on {} devices fits (placement: {}, memory lower bound: {} of {} plans)", m_devices,
                                             m_out_placement, m_out_memory_bound, m_enumerated));
}

void PlanSearch::choose_reference() {
    const ParallelPlan& own = m_c.plan;
    m_ref = m_cands.size();
    for (size_t i = 0; i < m_cands.size() && !own.kinds.empty(); ++i)
        if (m_cands[i].id == plan_id(own.spec)) m_ref = i;
    m_job_plan_candidate = m_ref < m_cands.size();
    if (!m_job_plan_candidate)  // the cheapest to simulate: fewest tokens per tensor-parallel rank
        m_ref = size_t(std::min_element(m_cands.begin(), m_cands.end(), [](const Candidate& a, const Candidate& b) {
                           const double wa = double(a.plan.spec.microbatch) / double(a.plan.spec.tp), wb = double(b.plan.spec.microbatch) / double(b.plan.spec.tp);
                           return wa != wb ? wa < wb : a.plan.layers_per_chunk < b.plan.layers_per_chunk;
                       }) -
                       m_cands.begin());
    run_tasks({m_ref});
    const std::vector<ChunkRun> runs = real_runs(m_cands[m_ref]);
    m_peak = runs.at(0).peak_macs_per_s;
    if (!(m_peak > 0)) throw UserError(m_where, "the device run " + m_cands[m_ref].tasks[0].dir + " gives no peak MACs/s to bound plans by");
    m_ref_eff = measured(m_cands[m_ref].plan, runs, m_peak);
    m_learned[run_key(m_cands[m_ref].plan.spec)] = m_ref_eff;
    m_log << fmt::format("reference {}: device time over roofline forward {:.3f}, backward {:.3f}, recompute {:.3f} ({:.2f} s)\n", m_cands[m_ref].id,
                         m_ref_eff.forward, m_ref_eff.backward, m_ref_eff.recompute, elapsed_s());
}

void PlanSearch::run_tasks(const std::vector<size_t>& which) {
    std::vector<DeviceTask> tasks;
    for (size_t i : which) tasks.insert(tasks.end(), m_cands[i].tasks.begin(), m_cands[i].tasks.end());
    std::sort(tasks.begin(), tasks.end(), [](const DeviceTask& a, const DeviceTask& b) { return a.dir < b.dir; });
    tasks.erase(std::unique(tasks.begin(), tasks.end(), [](const DeviceTask& a, const DeviceTask& b) { return a.dir == b.dir; }), tasks.end());
    m_device_runs += tasks.size();
    run_devices(m_c, tasks);
}

std::vector<ChunkRun> PlanSearch::real_runs(const Candidate& c) const {
    std::vector<ChunkRun> runs;
    for (const DeviceTask& t : c.tasks) runs.push_back(read_chunk_run(t.dir + "/metrics.json"));
    return runs;
}

void PlanSearch::estimate(Candidate& c) {
    // its roofline at the efficiency measured for its tp, ep, microbatch, recomputation and
    // sequence parallelism (else for the same tp, ep and microbatch, else the reference's), its
    // memory with what was measured there (else Korthikanti et al.'s counts, the workspace
    // scaled by tokens per rank)
    const ParallelismSpec& p = c.plan.spec;
    const ParallelismSpec& r = m_cands[m_ref].plan.spec;
    Efficiency e = m_ref_eff;
    e.after_forward_per_layer = e.backward_extra = -1;
    e.workspace = m_ref_eff.workspace * (double(p.microbatch) / double(p.tp)) / (double(r.microbatch) / double(r.tp));
    if (auto it = m_learned.find(run_key(p)); it != m_learned.end()) {
        e = it->second;
    } else {
        for (const auto& [k, v] : m_learned)
            if (std::get<0>(k) == p.tp && std::get<1>(k) == p.ep && std::get<2>(k) == p.microbatch) e.forward = v.forward, e.backward = v.backward, e.workspace = v.workspace;
    }
    const std::vector<ChunkRun> runs = modeled_runs(c.plan, m_peak, e);
    c.estimate_ps = std::max(c.bound_ps, step_lower_bound_ps(build_job(c.plan, m_c.cl, runs, m_opt, m_c.job.where())));
    double most = 0;
    for (const StageMemory& m : stage_memory(c.plan, runs)) most = std::max(most, m.total());
    c.memory_estimate_bytes = std::max(c.memory_bound_bytes, most);
}

void PlanSearch::ran(Candidate& c) {
    // its device runs are done: what they measured, its exact memory, its bound with them
    const std::vector<ChunkRun> runs = real_runs(c);
    if (m_learned.emplace(run_key(c.plan.spec), measured(c.plan, runs, m_peak)).second) m_newly_learned.insert(run_key(c.plan.spec));
    double most = 0;
    for (const StageMemory& m : stage_memory(c.plan, runs)) most = std::max(most, m.total());
    if (m_capacity > 0 && most > m_capacity) {
        c.stage = Stage::Out, c.out_reason = fmt::format("needs {:.1f} GB per device", most / 1e9);
        ++m_out_memory;
        m_log << fmt::format("  {}: estimate {:.3f} s, memory estimate {:.1f} GB; {}\n", c.id, c.estimate_ps * 1e-12, c.memory_estimate_bytes / 1e9,
                             c.out_reason);
        return;
    }
    c.bound_ps = std::max(c.bound_ps, step_lower_bound_ps(build_job(c.plan, m_c.cl, runs, m_opt, m_c.job.where())));
    c.stage = Stage::Ran;
    m_log << fmt::format("  {}: estimate {:.3f} s, bound with its device runs {:.3f} s, memory {:.1f} GB\n", c.id, c.estimate_ps * 1e-12,
                         c.bound_ps * 1e-12, most / 1e9);
}

void PlanSearch::simulate(const std::vector<size_t>& which) {
    std::vector<ChildTask> children;
    for (size_t i : which) children.push_back(plan_run_task(m_c, m_dir + "/" + m_cands[i].id, parallel_args(m_cands[i].plan.spec)));
    run_children(self_program(), children.size(), 0, [&](size_t k) { return children[k]; },
                 [&](size_t k, int status) {
                     Candidate& c = m_cands[which[k]];
                     if (!exited_ok(status)) {
                         c.stage = Stage::Out, c.out_reason = child_failure(status, children[k].err_path);
                         ++m_out_failed;
                         return;
                     }
                     std::ifstream in(m_dir + "/" + c.id + "/last_run.json");
                     const json r = json::parse(in);
                     c.stage = Stage::Simulated, ++m_evaluated;
                     c.step_ps = r.at("step_time_s").get<double>() * 1e12, c.memory_bytes = r.value("memory_per_device_bytes", 0.0);
                     c.tokens_per_s = r.value("tokens_per_s", 0.0), c.mfu = r.value("mfu", 0.0);
                     m_best_ps = std::min(m_best_ps, c.step_ps);
                 });
}

json PlanSearch::run() {
    fs::create_directories(m_dir);
    m_log.open(m_dir + "/search_log.txt");
    m_log << fmt::format("search of {}: {} devices, global batch {}\n", m_where, m_devices, m_c.job.parallel.global_batch);
    if (m_devices > m_c.cl.devices())
        throw UserError(m_where, "the job's tp x pp x dp = " + std::to_string(m_devices) + " devices; the target has " + std::to_string(m_c.cl.devices()));
    enumerate();
    choose_reference();
    for (Candidate& c : m_cands) {
        c.bound_ps = step_lower_bound_ps(build_job(c.plan, m_c.cl, modeled_runs(c.plan, m_peak, Efficiency{}), m_opt, m_c.job.where()));
        estimate(c);
    }
    m_log << fmt::format("bounds and estimates of {} plans ({:.2f} s)\n", m_cands.size(), elapsed_s());
    // the job's own plan is always evaluated: what the search is measured against
    if (m_job_plan_candidate) {
        ran(m_cands[m_ref]);
        if (m_cands[m_ref].stage == Stage::Ran) simulate({m_ref});
    }
    // best first: a round takes the plans in play with the lowest keys (those estimated to fit
    // first), runs the devices of those without device runs, simulates those whose bound is
    // below the best step
    const size_t width = 2 * std::max<size_t>(1, std::thread::hardware_concurrency());
    std::string stopped = "no plan left is estimated below the best step within the memory (plans_left: those whose roofline bound still is)";
    while (true) {
        std::vector<size_t> live;
        for (size_t i = 0; i < m_cands.size(); ++i)
            if (in_play(m_cands[i])) live.push_back(i);
        if (live.empty()) break;
        const JobRunArgs& args = m_c.args;
        if (args.search_budget_s > 0 && elapsed_s() > args.search_budget_s && m_evaluated >= args.search_min_plans) {
            stopped = fmt::format("the budget of {:g} s was spent", args.search_budget_s);
            break;
        }
        std::stable_sort(live.begin(), live.end(), [&](size_t a, size_t b) {
            const bool oa = over(m_cands[a]), ob = over(m_cands[b]);
            return oa != ob ? ob : key_of(m_cands[a]) < key_of(m_cands[b]);
        });
        if (live.size() > width) live.resize(width);
        std::vector<size_t> need_runs, to_simulate;
        for (size_t i : live)
            if (m_cands[i].stage == Stage::Bounded) need_runs.push_back(i);
        if (!need_runs.empty()) run_tasks(need_runs);
        for (size_t i : live) {
            Candidate& c = m_cands[i];
            if (c.stage == Stage::Bounded) ran(c);
            if (c.stage == Stage::Ran && (m_evaluated + int64_t(to_simulate.size()) < args.search_min_plans || c.bound_ps < m_best_ps))
                to_simulate.push_back(i);
        }
        if (!to_simulate.empty()) simulate(to_simulate);
        // what this round's device runs measured sharpens the estimates of the plans that share it
        for (Candidate& c : m_cands) {
            if (c.stage != Stage::Bounded) continue;
            const ParallelismSpec& p = c.plan.spec;
            if (std::any_of(m_newly_learned.begin(), m_newly_learned.end(), [&](const RunKey& k) {
                    return std::get<0>(k) == p.tp && std::get<1>(k) == p.ep && std::get<2>(k) == p.microbatch;
                }))
                estimate(c);
        }
        m_newly_learned.clear();
        ++m_rounds;
        m_log << fmt::format("round {}: {} plans with device runs, {} simulated; {} evaluated, best {:.4f} s ({:.2f} s)\n", m_rounds, need_runs.size(),
                             to_simulate.size(), m_evaluated, m_best_ps * 1e-12, elapsed_s())
              << std::flush;  // a long search's log can be followed
    }
    std::vector<size_t> done;
    for (size_t i = 0; i < m_cands.size(); ++i)
        if (m_cands[i].stage == Stage::Simulated) done.push_back(i);
    if (done.empty()) {
        std::string why = "every plan's device runs exceed the memory";
        for (const Candidate& c : m_cands)
            if (c.stage == Stage::Out && !c.out_reason.empty()) why = c.out_reason;
        throw UserError(m_where, "no plan's step could be simulated: " + why);
    }
    std::stable_sort(done.begin(), done.end(), [&](size_t a, size_t b) {
        const Candidate &x = m_cands[a], &y = m_cands[b];
        return x.step_ps != y.step_ps ? x.step_ps < y.step_ps : x.memory_bytes < y.memory_bytes;
    });
    return report(done, stopped);
}

json PlanSearch::report(const std::vector<size_t>& done, const std::string& stopped) {
    const Candidate& best = m_cands[done[0]];
    const double search_s = elapsed_s();
    m_log << fmt::format("best {} at {:.4f} s; {} evaluated, {} device runs, {:.2f} s\n", best.id, best.step_ps * 1e-12, m_evaluated, m_device_runs,
                         search_s);
    double lowest_left = std::numeric_limits<double>::infinity();  // the lowest bound of the plans left unevaluated
    int64_t pruned = 0, left = 0;
    for (const Candidate& c : m_cands) {
        if (c.stage == Stage::Simulated || c.stage == Stage::Out) continue;
        if (c.bound_ps >= m_best_ps) ++pruned;
        else lowest_left = std::min(lowest_left, c.bound_ps), ++left;
    }
    // the best plan's own run, as a plain run of it
    const JobContext& c = m_c;
    const JobContext best_run{c.job, c.target, c.cl, best.plan, c.args, c.device, c.precision, c.runtime, c.dev_dir, c.t0};
    json out = best_run.run_training();
    json top = json::array();
    for (size_t k = 0; k < done.size() && k < 10; ++k) {
        const Candidate& x = m_cands[done[k]];
        top.push_back({{"id", x.id}, {"parallelism", plan_json(x.plan.spec)}, {"step_time_s", x.step_ps * 1e-12}, {"memory_per_device_bytes", x.memory_bytes},
                       {"tokens_per_s", x.tokens_per_s}, {"mfu", x.mfu}});
    }
    const Candidate& ref = m_cands[m_ref];
    json yours = {{"id", c.plan.kinds.empty() ? "" : plan_id(c.plan.spec)}};
    if (c.plan.kinds.empty()) yours["status"] = "not valid on this target";
    else if (!m_job_plan_candidate) yours["status"] = "does not fit the devices' memory (lower bound)";
    else if (ref.stage == Stage::Simulated) yours["status"] = "evaluated", yours["step_time_s"] = ref.step_ps * 1e-12;
    else yours["status"] = "out: " + ref.out_reason;
    out["search"] = {
        {"method", "best first over enumerate_plans (workloads/parallel/plan_space.h): plans ordered by an estimate of their step (their MACs at "
                   "the device efficiency and memory per layer device runs of their tp, microbatch, recomputation and sequence parallelism measured), device runs "
                   "shared by plans that give a device the same work, a plan simulated while its lower bound with its own device runs "
                   "(sim/cluster/job_bound.h) is below the best step"},
        {"devices", m_devices},
        {"plans_enumerated", m_enumerated},
        {"plans_infeasible", m_out_placement + m_out_memory_bound + m_out_memory + m_out_failed},
        {"infeasible_by",
         {{"placement", m_out_placement}, {"memory_lower_bound", m_out_memory_bound}, {"memory", m_out_memory}, {"simulation_failed", m_out_failed}}},
        {"plans_evaluated", m_evaluated},
        {"plans_pruned", pruned},
        {"plans_left", left},
        {"device_runs", m_device_runs},
        {"rounds", m_rounds},
        {"stopped", stopped},
        {"gap_to_lowest_bound_left", left > 0 ? (best.step_ps - lowest_left) / best.step_ps : 0.0},
        {"best", {{"id", best.id}, {"parallelism", plan_json(best.plan.spec)}, {"step_time_s", best.step_ps * 1e-12}}},
        {"top", top},
        {"job_plan", yours},
        {"wall_s", search_s},
        {"log", m_dir + "/search_log.txt"}};
    write_file_atomically(c.args.out_dir + "/last_run.json", out.dump(2) + "\n");
    return out;
}

}  // namespace

json JobContext::search_training() const { return PlanSearch(*this).run(); }

}  // namespace archsim
