// The plan search of a serving job (JobContext::search_serving, job_parts.h): every split of its
// devices into tensor-parallel replicas, each with several of the engine's max_batch, then the
// best two with other token budgets, chunked prefill and the scheduler switched, each served in a
// child `archsim run --parallel ... --serving KEY=VALUE`, ranked by goodput within the job's
// latency objectives, then tokens/s.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "sim/api/job_parts.h"
#include "sim/api/process_pool.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"

namespace archsim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// How many of the best plans after the batch limits are also served with other token budgets,
/// chunked prefill switched and the other scheduler.
constexpr size_t kSettingsLeaders = 2;
/// The settings tried beside each: the token budget halved and doubled, chunked prefill and the
/// scheduler switched.
constexpr int64_t kSettingsPerLeader = 4;

/// One replica split the search served: its plan and what its run reported.
struct ServingPlan {
    ParallelPlan plan;
    int64_t max_batch = 0;  ///< the engine's, as run
    bool own_batch = true;  ///< the engine's own max_batch (no --serving max_batch)
    ServingSetting setting;  ///< the engine's token budget, chunked prefill and scheduler, as run
    bool own_tokens = true, own_chunked = true, own_scheduler = true;  ///< the engine's own settings
    int64_t peak_running = 0;  ///< its run's largest batch
    ServingRunSignals signals;  ///< what its run says of its settings
    std::string id;
    bool served = false;
    std::string why_not;  ///< a failed run's last line
    double output_tokens_per_s = 0, goodput_requests_per_s = 0, slo_attainment = 0, ttft_p99_s = 0, e2e_p99_s = 0;
};

/// Whether `a` serves better than `b`: more requests per second within the objectives (when the
/// job states any), then more output tokens per second, then a lower p99 end-to-end latency.
bool serves_better(const ServingPlan& a, const ServingPlan& b, bool slo) {
    if (slo && a.goodput_requests_per_s != b.goodput_requests_per_s) return a.goodput_requests_per_s > b.goodput_requests_per_s;
    if (a.output_tokens_per_s != b.output_tokens_per_s) return a.output_tokens_per_s > b.output_tokens_per_s;
    return a.e2e_p99_s < b.e2e_p99_s;
}

/// A plan's name (its folder under DIR/search): tp<t>_dp<d>_b<max_batch>, then _t<max_num_tokens>,
/// _chunked or _whole, and _<scheduler> where it departs from the engine's own.
std::string plan_id(const ServingPlan& p) {
    std::string id = fmt::format("tp{}_dp{}_b{}", p.plan.spec.tp, p.plan.spec.dp, p.max_batch);
    if (!p.own_tokens) id += fmt::format("_t{}", p.setting.max_num_tokens);
    if (!p.own_chunked) id += p.setting.chunked_prefill ? "_chunked" : "_whole";
    if (!p.own_scheduler) id += "_" + p.setting.scheduler;
    return id;
}

/// The `--serving KEY=VALUE` settings that make a run `p`: those that depart from the engine's own.
std::vector<std::string> engine_sets(const ServingPlan& p) {
    std::vector<std::string> out;
    if (!p.own_batch) out.push_back("max_batch=" + std::to_string(p.max_batch));
    if (!p.own_tokens) out.push_back("max_num_tokens=" + std::to_string(p.setting.max_num_tokens));
    if (!p.own_chunked) out.push_back(std::string("chunked_prefill=") + (p.setting.chunked_prefill ? "true" : "false"));
    if (!p.own_scheduler) out.push_back("scheduler=" + p.setting.scheduler);
    return out;
}

json row_json(const ServingPlan& p) {
    return {{"id", p.id}, {"parallelism", {{"tp", p.plan.spec.tp}, {"dp", p.plan.spec.dp}}}, {"max_batch", p.max_batch},
            {"max_num_tokens", p.setting.max_num_tokens}, {"chunked_prefill", p.setting.chunked_prefill}, {"scheduler", p.setting.scheduler},
            {"output_tokens_per_s", p.output_tokens_per_s},
            {"goodput_requests_per_s", p.goodput_requests_per_s}, {"slo_attainment", p.slo_attainment}, {"ttft_p99_s", p.ttft_p99_s},
            {"e2e_p99_s", p.e2e_p99_s}};
}

}  // namespace

std::vector<ServingSetting> serving_setting_variants(const ServingSetting& own, const ServingRunSignals& run) {
    std::vector<ServingSetting> out;
    const bool budget_bound = run.budget_limited_iterations > 0;
    if (own.max_num_tokens > 0) {  // no budget: nothing to vary, nothing to chunk for
        const int64_t half = std::max<int64_t>(1, own.max_num_tokens / 2);
        auto with = [&](int64_t budget, bool chunked) {
            ServingSetting v = own;
            v.max_num_tokens = budget, v.chunked_prefill = chunked;
            out.push_back(v);
        };
        if (budget_bound || half < run.peak_iteration_tokens) with(half, own.chunked_prefill);
        if (budget_bound) with(own.max_num_tokens * 2, own.chunked_prefill), with(own.max_num_tokens, !own.chunked_prefill);
    }
    if (run.kv_limited_iterations > 0 || run.preemptions > 0) {
        ServingSetting v = own;
        v.scheduler = own.scheduler == "max_utilization" ? "guaranteed_no_evict" : "max_utilization";
        out.push_back(v);
    }
    return out;
}

std::vector<int64_t> serving_batch_candidates(int64_t own, int64_t peak_running) {
    std::vector<int64_t> out{own};
    const int64_t cap = peak_running > 0 ? std::min(own, peak_running) : own;
    int64_t p = 1;
    while (p * 2 < cap) p *= 2;
    for (; p >= 1 && p < cap && out.size() < 5; p /= 2) out.push_back(p);
    return out;
}

json JobContext::search_serving() const {
    const auto started = std::chrono::steady_clock::now();
    const std::string where = job.where() + " on " + target.name, dir = args.out_dir + "/search";
    const int64_t devices = job.parallel.devices();
    if (devices > cl.devices())
        throw UserError(where, "the job's tp x pp x dp = " + std::to_string(devices) + " devices; the target has " + std::to_string(cl.devices()));
    const ServingSpec& spec = job.serving;
    const bool slo = spec.slo_ttft_ms > 0 || spec.slo_tpot_ms > 0 || spec.slo_e2e_ms > 0;
    // every tensor-parallel size a replica can take on these devices (serving runs pp = 1)
    std::vector<ServingPlan> plans;
    int64_t enumerated = 0, splits = 0;
    const ServingEngine engine = job_engine(runtime, spec);
    const int64_t own_batch = engine.max_batch;
    for (int64_t tp = 1; tp <= devices; ++tp) {
        if (devices % tp != 0) continue;
        ++enumerated;
        ParallelismSpec s = job.parallel;
        s.tp = tp, s.pp = 1, s.dp = devices / tp, s.virtual_stages = 1, s.schedule = "1f1b";
        ServingPlan p;
        try {
            p.plan = make_parallel_plan(job.model, s, job.where());
            check_placement(p.plan, cl, job.where());
        } catch (const UserError&) {  // tp does not divide the heads, or spans nodes unevenly
            continue;
        }
        p.max_batch = own_batch, p.setting = {engine.max_num_tokens, engine.chunked_prefill, engine.scheduler};
        p.id = plan_id(p);
        plans.push_back(std::move(p));
        ++splits;
    }
    if (plans.empty()) throw UserError(where, fmt::format("no tensor-parallel split of the {} devices fits the model and the nodes", devices));
    fs::create_directories(dir);
    // serves plans [from, plans.size()), each in a child, one at a time: each runs its own device
    // runs on every core
    auto serve = [&](size_t from) {
        if (from >= plans.size()) return;
        std::vector<ChildTask> children;
        for (size_t i = from; i < plans.size(); ++i) {
            const ServingPlan& p = plans[i];
            children.push_back(plan_run_task(*this, dir + "/" + p.id, {"tp=" + std::to_string(p.plan.spec.tp), "pp=1", "dp=" + std::to_string(p.plan.spec.dp)},
                                             engine_sets(p)));
        }
        run_children(self_program(), children.size(), 1, [&](size_t k) { return children[k]; },
                     [&](size_t k, int status) {
                         ServingPlan& p = plans[from + k];
                         if (!exited_ok(status)) {
                             p.why_not = child_failure(status, children[k].err_path);
                             return;
                         }
                         std::ifstream in(dir + "/" + p.id + "/last_run.json");
                         const json sv = json::parse(in).at("serving");
                         p.served = true;
                         p.output_tokens_per_s = sv.at("output_tokens_per_s").get<double>();
                         p.goodput_requests_per_s = sv.value("goodput_requests_per_s", 0.0), p.slo_attainment = sv.value("slo_attainment", 0.0);
                         p.ttft_p99_s = sv.at("ttft_s").at("p99").get<double>(), p.e2e_p99_s = sv.at("e2e_s").at("p99").get<double>();
                         p.peak_running = sv.value("peak_running", int64_t(0));
                         p.signals = {sv.value("peak_iteration_tokens", int64_t(0)), sv.value("budget_limited_iterations", int64_t(0)),
                                      sv.value("kv_limited_iterations", int64_t(0)), sv.value("preemptions", int64_t(0))};
                     });
    };
    // every split at the engine's own max_batch, then each served one at the limits below the
    // largest batch it ran (a limit at or above that never binds: it runs as the engine's own)
    serve(0);
    const size_t first_round = plans.size();
    for (size_t i = 0; i < first_round; ++i) {
        if (!plans[i].served) continue;
        const std::vector<int64_t> limits = serving_batch_candidates(own_batch, plans[i].peak_running);
        for (size_t k = 1; k < limits.size(); ++k) {
            ServingPlan q = plans[i];
            q.max_batch = limits[k], q.own_batch = false, q.served = false, q.why_not.clear();
            q.id = plan_id(q);
            plans.push_back(std::move(q));
        }
    }
    serve(first_round);
    // the plans served so far, best first
    auto ranked = [&] {
        std::vector<size_t> out;
        for (size_t i = 0; i < plans.size(); ++i)
            if (plans[i].served) out.push_back(i);
        std::stable_sort(out.begin(), out.end(), [&](size_t a, size_t b) { return serves_better(plans[a], plans[b], slo); });
        return out;
    };
    // the best two so far with the engine's token budget halved and doubled (where it has one),
    // chunked prefill and the scheduler switched: the budget trades a prompt's wait for the
    // decodes' iteration time (Sarathi-Serve's chunk size), chunked prefill lets a long prompt
    // share iterations, the scheduler reserves a request's whole output in the KV cache or takes
    // blocks as tokens come (preempting when none is left). Only settings that change the run
    // (serving_setting_variants): a budget that held nothing back is not raised, nor chunked
    // prefill switched; half of it only below the largest iteration it ran; the other scheduler
    // only where the KV cache bound.
    const size_t second_round = plans.size();
    const std::vector<size_t> leaders = ranked();
    int64_t pruned = 0;  // settings their base run shows would change nothing
    for (size_t r = 0; r < std::min<size_t>(kSettingsLeaders, leaders.size()); ++r) {
        const ServingPlan& base = plans[leaders[r]];
        const std::vector<ServingSetting> variants = serving_setting_variants(base.setting, base.signals);
        pruned += kSettingsPerLeader - int64_t(variants.size());
        for (const ServingSetting& v : variants) {
            ServingPlan q = base;
            q.own_tokens = v.max_num_tokens == base.setting.max_num_tokens, q.own_chunked = v.chunked_prefill == base.setting.chunked_prefill;
            q.own_scheduler = v.scheduler == base.setting.scheduler;
            q.setting = v;
            q.served = false, q.why_not.clear(), q.id = plan_id(q);
            plans.push_back(std::move(q));
        }
    }
    serve(second_round);
    const std::vector<size_t> served = ranked();
    if (served.empty()) throw UserError(where, "no replica split could be served: " + plans.back().why_not);
    const ServingPlan& best = plans[served[0]];
    const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::ofstream(dir + "/search_log.txt") << fmt::format("search of {}: {} splits ({} hold the model), {} plans with their engine settings, {} served, "
                                                          "best {} ({:.2f} s)\n", where, enumerated, splits, plans.size(), served.size(), best.id, search_s);
    // the best plan's own run, as a plain run of it
    LlmJob best_job = job;
    best_job.serving.max_batch = best.max_batch;
    if (!best.own_tokens) best_job.serving.max_num_tokens = best.setting.max_num_tokens;
    if (!best.own_chunked) best_job.serving.chunked_prefill = best.setting.chunked_prefill;
    if (!best.own_scheduler) best_job.serving.scheduler = best.setting.scheduler;
    const JobContext best_run{best_job, target, cl, best.plan, args, device, precision, runtime, dev_dir, t0};
    json out = best_run.run_serving();
    json top = json::array(), failed = json::array();
    for (size_t i : served) top.push_back(row_json(plans[i]));
    for (const ServingPlan& p : plans)
        if (!p.served) failed.push_back({{"id", p.id}, {"why", p.why_not}});
    json yours = {{"id", fmt::format("tp{}_dp{}_b{}", plan.spec.tp, plan.spec.dp, own_batch)}, {"status", "not a split the search served"}};
    for (const ServingPlan& p : plans)
        if (!plan.kinds.empty() && plan.spec.pp == 1 && p.plan.spec.tp == plan.spec.tp && p.own_batch && p.own_tokens && p.own_chunked && p.own_scheduler)
            yours = p.served ? row_json(p) : json{{"id", p.id}, {"status", "failed: " + p.why_not}};
    out["search"] = {
        {"method", "every split of the devices into tensor-parallel replicas (tp dividing the heads and the feed-forward, within a node or whole "
                   "nodes; dp the rest; pp 1) at the engine's max_batch, then each at the four largest powers of two below the largest batch "
                   "that run held, then the best two with the engine's token budget halved (where that is below the largest iteration "
                   "they ran, or their budget held work back) and doubled and chunked prefill switched (where their budget held work "
                   "back) and the other scheduler (where their KV cache held a request back or preempted one), each served over time "
                   "in its own run"},
        {"objective", slo ? "goodput within the latency objectives, then output tokens/s, then a lower p99 end-to-end latency"
                          : "output tokens/s, then a lower p99 end-to-end latency (the job states no latency objectives)"},
        {"not_searched", "the engine's batching policy (continuous, as every engine profile runs), its token budget, chunked prefill and "
                         "scheduler together (each is varied alone), prefill/decode disaggregation (serving.prefill_replicas) and pipeline "
                         "parallelism (a replica runs pp = 1)"},
        {"devices", devices},
        {"splits", enumerated},
        {"plans_enumerated", int64_t(plans.size()) + (enumerated - splits)},  // a split that cannot hold the model counts once
        {"plans_infeasible", int64_t(plans.size()) + (enumerated - splits) - int64_t(served.size())},
        {"plans_evaluated", int64_t(served.size())},
        {"plans_pruned", pruned},
        {"best", row_json(best)},
        {"top", top},
        {"failed", failed},
        {"job_plan", yours},
        {"wall_s", search_s},
        {"log", dir + "/search_log.txt"}};
    write_file_atomically(args.out_dir + "/last_run.json", out.dump(2) + "\n");
    return out;
}

}  // namespace archsim
