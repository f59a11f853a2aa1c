// The plan search of a serving job (JobContext::search_serving, job_parts.h): every split of its
// devices into tensor-parallel replicas, each with several of the engine's max_batch, then a climb
// from the best two through the other settings (token budget, chunked prefill, scheduler,
// batching policy, prefill/decode disaggregation), each served in a child
// `archsim run --parallel ... --serving KEY=VALUE`, ranked by goodput within the job's latency
// objectives, then tokens/s.
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

/// How many of the best plans after the batch limits are also served with their other settings.
constexpr size_t kSettingsLeaders = 2;
/// How many times, after that, the search goes on from a new best plan's settings (a plan that
/// beat the one it departs from): each departs from it in one more setting, so settings that
/// help together are found together, as a coordinate search finds them.
constexpr int kClimbs = 3;

/// One replica split the search served: its plan and what its run reported.
struct ServingPlan {
    ParallelPlan plan;
    int64_t max_batch = 0;  ///< the engine's, as run
    ServingSetting setting;  ///< the engine's other settings and the replicas' roles, as run
    int64_t peak_running = 0;  ///< its run's largest batch
    ServingRunSignals signals;  ///< what its run says of its settings
    std::string id;
    bool served = false;
    bool expanded = false;  ///< its settings' variants were enumerated
    std::string why_not;  ///< a failed run's last line
    double output_tokens_per_s = 0, goodput_requests_per_s = 0, slo_attainment = 0, ttft_p99_s = 0, e2e_p99_s = 0;
};

/// The engine's own max_batch and settings (and the job's own replica roles): a plan names and
/// sets only what departs from them.
struct OwnSettings {
    int64_t max_batch = 0;
    ServingSetting setting;
};

/// Whether `a` serves better than `b`: more requests per second within the objectives (when the
/// job states any), then more output tokens per second, then a lower p99 end-to-end latency.
bool serves_better(const ServingPlan& a, const ServingPlan& b, bool slo) {
    if (slo && a.goodput_requests_per_s != b.goodput_requests_per_s) return a.goodput_requests_per_s > b.goodput_requests_per_s;
    if (a.output_tokens_per_s != b.output_tokens_per_s) return a.output_tokens_per_s > b.output_tokens_per_s;
    return a.e2e_p99_s < b.e2e_p99_s;
}

/// A plan's name (its folder under DIR/search): tp<t>_dp<d>_b<max_batch>, then _t<max_num_tokens>,
/// _chunked or _whole, _<scheduler>, _<policy> and _p<prefill replicas> where it departs from
/// the engine's own.
std::string plan_id(const ServingPlan& p, const OwnSettings& own) {
    std::string id = fmt::format("tp{}_dp{}_b{}", p.plan.spec.tp, p.plan.spec.dp, p.max_batch);
    const ServingSetting &s = p.setting, &o = own.setting;
    if (s.max_num_tokens != o.max_num_tokens) id += fmt::format("_t{}", s.max_num_tokens);
    if (s.chunked_prefill != o.chunked_prefill) id += s.chunked_prefill ? "_chunked" : "_whole";
    if (s.scheduler != o.scheduler) id += "_" + s.scheduler;
    if (s.policy != o.policy) id += "_" + s.policy;
    if (s.prefill_replicas != o.prefill_replicas) id += fmt::format("_p{}", s.prefill_replicas);
    return id;
}

/// The `--serving KEY=VALUE` settings that make a run `p`: those that depart from the engine's own.
std::vector<std::string> engine_sets(const ServingPlan& p, const OwnSettings& own) {
    std::vector<std::string> out;
    const ServingSetting &s = p.setting, &o = own.setting;
    if (p.max_batch != own.max_batch) out.push_back("max_batch=" + std::to_string(p.max_batch));
    if (s.max_num_tokens != o.max_num_tokens) out.push_back("max_num_tokens=" + std::to_string(s.max_num_tokens));
    if (s.chunked_prefill != o.chunked_prefill) out.push_back(std::string("chunked_prefill=") + (s.chunked_prefill ? "true" : "false"));
    if (s.scheduler != o.scheduler) out.push_back("scheduler=" + s.scheduler);
    if (s.policy != o.policy) out.push_back("policy=" + s.policy);
    if (s.prefill_replicas != o.prefill_replicas) out.push_back("prefill_replicas=" + std::to_string(s.prefill_replicas));
    return out;
}

/// A plan's split and settings (a failed plan's row: with its reason).
json settings_json(const ServingPlan& p) {
    return {{"id", p.id}, {"parallelism", {{"tp", p.plan.spec.tp}, {"dp", p.plan.spec.dp}}}, {"max_batch", p.max_batch},
            {"max_num_tokens", p.setting.max_num_tokens}, {"chunked_prefill", p.setting.chunked_prefill}, {"scheduler", p.setting.scheduler},
            {"policy", p.setting.policy}, {"prefill_replicas", p.setting.prefill_replicas}};
}

/// A served plan's row: its settings and figures.
json row_json(const ServingPlan& p) {
    json row = settings_json(p);
    row.update({{"output_tokens_per_s", p.output_tokens_per_s}, {"goodput_requests_per_s", p.goodput_requests_per_s},
                {"slo_attainment", p.slo_attainment}, {"ttft_p99_s", p.ttft_p99_s}, {"e2e_p99_s", p.e2e_p99_s}});
    return row;
}

/// The prefill-replica counts a plan with `own` on `scope` could also run: none, dp/4 and dp/2
/// (at least 1, below dp), distinct, without own's.
std::vector<int64_t> prefill_replica_counts(const ServingSetting& own, const ServingScope& scope) {
    std::vector<int64_t> out;
    if (scope.dp < 2) return out;
    for (const int64_t p : {int64_t(0), std::max<int64_t>(1, scope.dp / 4), scope.dp / 2})
        if (p != own.prefill_replicas && p < scope.dp && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    return out;
}

}  // namespace

int64_t serving_setting_candidates(const ServingSetting& own, const ServingScope& scope) {
    return 5 + int64_t(prefill_replica_counts(own, scope).size());
}

std::vector<ServingSetting> serving_setting_variants(const ServingSetting& own, const ServingRunSignals& run, const ServingScope& scope) {
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
    const bool missed = run.slo_attainment < 1;
    if ((scope.ttft_slo || scope.tpot_slo) && missed)
        for (const int64_t p : prefill_replica_counts(own, scope)) {
            ServingSetting v = own;
            v.prefill_replicas = p;
            out.push_back(v);
        }
    if (own.policy == "static" || (scope.tpot_slo && missed)) {
        ServingSetting v = own;
        v.policy = own.policy == "static" ? "continuous" : "static";
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
    const OwnSettings own{engine.max_batch, {engine.max_num_tokens, engine.chunked_prefill, engine.scheduler, engine.policy, spec.prefill_replicas}};
    const int64_t own_batch = own.max_batch;
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
        p.max_batch = own_batch, p.setting = own.setting;
        p.id = plan_id(p, own);
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
                                             engine_sets(p, own)));
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
                                      sv.value("kv_limited_iterations", int64_t(0)), sv.value("preemptions", int64_t(0)),
                                      sv.value("slo_attainment", 1.0)};
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
            q.max_batch = limits[k], q.served = false, q.why_not.clear();
            q.id = plan_id(q, own);
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
    // the best two so far with their other settings, one departing at a time: the token budget
    // halved and doubled (where there is one) trades a prompt's wait for the decodes' iteration
    // time (Sarathi-Serve's chunk size), chunked prefill lets a long prompt share iterations, the
    // scheduler reserves a request's whole output in the KV cache or takes blocks as tokens come
    // (preempting when none is left), disaggregation gives prompts replicas of their own, static
    // batching keeps prompts out of running batches. Only settings that change the run
    // (serving_setting_variants: a budget that held nothing back is not raised, nor chunked
    // prefill switched; half of it only below the largest iteration it ran; the other scheduler
    // only where the KV cache bound; disaggregation and the policy only where an objective was
    // missed). Then, while a variant beats every plan so far, the same from it (kClimbs at
    // most): settings that help together are found together.
    std::vector<std::string> seen;
    for (const ServingPlan& p : plans) seen.push_back(p.id);
    std::vector<std::string> expanded;  // the plans whose variants were enumerated, in order
    int64_t pruned = 0;  // settings their base run shows would change nothing
    auto expand = [&](size_t at) {
        plans[at].expanded = true;
        expanded.push_back(plans[at].id);
        const ServingPlan base = plans[at];  // a copy: plans grows below
        const ServingScope scope{base.plan.spec.dp, spec.slo_ttft_ms > 0, spec.slo_tpot_ms > 0};
        const std::vector<ServingSetting> variants = serving_setting_variants(base.setting, base.signals, scope);
        pruned += serving_setting_candidates(base.setting, scope) - int64_t(variants.size());
        for (const ServingSetting& v : variants) {
            ServingPlan q = base;
            q.setting = v, q.served = false, q.expanded = false, q.why_not.clear(), q.id = plan_id(q, own);
            if (std::find(seen.begin(), seen.end(), q.id) != seen.end()) continue;  // back to a plan already served
            seen.push_back(q.id);
            plans.push_back(std::move(q));
        }
    };
    const std::vector<size_t> leaders = ranked();
    size_t next = plans.size();
    for (size_t r = 0; r < std::min<size_t>(kSettingsLeaders, leaders.size()); ++r) expand(leaders[r]);
    serve(next);
    for (int climb = 0; climb < kClimbs; ++climb) {
        const std::vector<size_t> now = ranked();
        if (now.empty() || plans[now[0]].expanded) break;  // no variant beat the plans it came from
        next = plans.size();
        expand(now[0]);
        serve(next);
    }
    const std::vector<size_t> served = ranked();
    if (served.empty()) throw UserError(where, "no replica split could be served: " + plans.back().why_not);
    const ServingPlan& best = plans[served[0]];
    const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::ofstream(dir + "/search_log.txt") << fmt::format("search of {}: {} splits ({} hold the model), {} plans with their engine settings, {} served, "
                                                          "best {} ({:.2f} s)\n", where, enumerated, splits, plans.size(), served.size(), best.id, search_s);
    // the best plan's own run, as a plain run of it
    LlmJob best_job = job;
    best_job.serving.max_batch = best.max_batch;
    const ServingSetting &bs = best.setting, &os = own.setting;
    if (bs.max_num_tokens != os.max_num_tokens) best_job.serving.max_num_tokens = bs.max_num_tokens;
    if (bs.chunked_prefill != os.chunked_prefill) best_job.serving.chunked_prefill = bs.chunked_prefill;
    if (bs.scheduler != os.scheduler) best_job.serving.scheduler = bs.scheduler;
    if (bs.policy != os.policy) best_job.serving.policy = bs.policy;
    best_job.serving.prefill_replicas = bs.prefill_replicas;
    const JobContext best_run{best_job, target, cl, best.plan, args, device, precision, runtime, dev_dir, t0};
    json out = best_run.run_serving();
    json top = json::array(), failed = json::array();
    for (size_t i : served) top.push_back(row_json(plans[i]));
    for (const ServingPlan& p : plans)
        if (!p.served) {
            json row = settings_json(p);
            row["why"] = p.why_not;
            failed.push_back(row);
        }
    ServingPlan job_plan;  // the job's own split with the engine's own settings
    job_plan.plan = plan, job_plan.max_batch = own_batch, job_plan.setting = own.setting;
    json yours = {{"id", plan_id(job_plan, own)}, {"status", "not a split the search served"}};
    for (const ServingPlan& p : plans)
        if (!plan.kinds.empty() && plan.spec.pp == 1 && p.plan.spec.tp == plan.spec.tp && p.max_batch == own.max_batch && p.setting == own.setting)
            yours = p.served ? row_json(p) : json{{"id", p.id}, {"status", "failed: " + p.why_not}};
    out["search"] = {
        {"method", "every split of the devices into tensor-parallel replicas (tp dividing the heads and the feed-forward, within a node or whole "
                   "nodes; dp the rest; pp 1) at the engine's max_batch, then each at the four largest powers of two below the largest batch "
                   "that run held, then the best two with one setting changed at a time: the engine's token budget halved (where that "
                   "is below the largest iteration they ran, or their budget held work back) and doubled and chunked prefill switched "
                   "(where their budget held work back), the other scheduler (where their KV cache held a request back or preempted "
                   "one), prefill/decode disaggregation with none, dp/4 and dp/2 prefill replicas and static batching (where a TTFT "
                   "or TPOT objective, a TPOT objective for the policy, was missed); then, while a variant beats every plan so far, "
                   "its own variants (up to 3 times: settings that help together are found together), each served over time in its "
                   "own run"},
        {"objective", slo ? "goodput within the latency objectives, then output tokens/s, then a lower p99 end-to-end latency"
                          : "output tokens/s, then a lower p99 end-to-end latency (the job states no latency objectives)"},
        {"not_searched", "a grid of every setting with every other (the search climbs from the best plans instead), the tensor-parallel "
                         "size of prefill and decode replicas apart (both run the split's tp) and pipeline parallelism (a replica runs pp = 1)"},
        {"devices", devices},
        {"splits", enumerated},
        {"plans_enumerated", int64_t(plans.size()) + (enumerated - splits)},  // a split that cannot hold the model counts once
        {"plans_infeasible", int64_t(plans.size()) + (enumerated - splits) - int64_t(served.size())},
        {"plans_evaluated", int64_t(served.size())},
        {"plans_pruned", pruned},
        {"expanded", expanded},
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
