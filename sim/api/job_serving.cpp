// A serving job: requests over time on each model replica (sim/serving), every iteration costed
// from device runs of the job's model on its device.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "sim/api/job_parts.h"
#include "sim/api/run_model.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/serving/arrivals.h"
#include "sim/serving/disaggregated.h"
#include "sim/serving/iteration_cost.h"
#include "sim/serving/serving_trace.h"
#include "workloads/lowering/runtime_profile.h"

namespace archsim {

using nlohmann::json;

namespace {

/// A finished device run's time and energy per kernel class (sim/serving/iteration_cost.h).
ClassCost class_cost(const std::string& dir) {
    std::ifstream in(dir + "/metrics.json");
    const json m = json::parse(in);
    ClassCost c;
    for (const auto& op : m.at("ops"))
        c.add(kernel_class(op.value("name", ""), op.value("op_type", "")), op.value("latency_s", 0.0), op.value("energy_j", 0.0));
    return c;
}

/// Powers of two from 1 up to the first at or above `n`.
std::vector<int64_t> powers_to(int64_t n) {
    std::vector<int64_t> v{1};
    while (v.back() < n) v.push_back(v.back() * 2);
    return v;
}

/// The engine: profile `name`'s serving section with the job's serving block over it.
ServingEngine engine_of(const std::string& name, const ServingSpec& spec) {
    ServingEngine e = load_runtime(name, runtimes_dir()).serving;
    if (spec.policy) e.policy = *spec.policy;
    if (spec.scheduler) e.scheduler = *spec.scheduler;
    if (spec.max_batch) e.max_batch = *spec.max_batch;
    if (spec.max_num_tokens) e.max_num_tokens = *spec.max_num_tokens;
    if (spec.kv_block_tokens) e.kv_block_tokens = *spec.kv_block_tokens;
    if (spec.chunked_prefill) e.chunked_prefill = *spec.chunked_prefill;
    if (spec.kv_cache_fraction) e.kv_cache_fraction = *spec.kv_cache_fraction;
    if (spec.preemption) e.preemption = *spec.preemption;
    if (spec.swap_space_gib) e.swap_space_gib = *spec.swap_space_gib;
    return e;
}

/// The run's state over time (its samples) and, since the previous sample, per device the power
/// (the iterations' energy and `static_w` while idle) and the replica's (`tp` devices') energy per
/// output token; null where an interval has no time or no token.
json timeline_json(const std::vector<ServingSample>& samples, double static_w, int64_t tp) {
    json tl = json::array();
    for (size_t k = 0; k < samples.size(); ++k) {
        const ServingSample& x = samples[k];
        json row = {{"t_s", x.t_s}, {"queued", x.queued}, {"running", x.running}, {"kv_tokens", x.kv_tokens}, {"power_w", nullptr},
                    {"energy_per_token_j", nullptr}};
        if (k > 0 && x.t_s > samples[k - 1].t_s) {
            const ServingSample& p = samples[k - 1];
            const double dt = x.t_s - p.t_s;
            const double e = x.energy_j - p.energy_j + static_w * std::max(0.0, dt - (x.busy_s - p.busy_s));
            row["power_w"] = e / dt;
            if (x.output_tokens > p.output_tokens) row["energy_per_token_j"] = e * double(tp) / double(x.output_tokens - p.output_tokens);
        }
        tl.push_back(row);
    }
    return tl;
}

/// Goodput under the objectives `slo` of the requests `r` describes (`served`), over `replicas`
/// alike: the objectives, the requests that met them, their share and the goodput.
void add_goodput(json& sv, const ServingResult& r, const std::vector<ServingRequest>& served, const ServingSlo& slo, double replicas) {
    if (!slo.any()) return;
    const SloResult g = slo_attainment(r, served, slo);
    json o;
    if (slo.ttft_s > 0) o["ttft_s"] = slo.ttft_s;
    if (slo.tpot_s > 0) o["tpot_s"] = slo.tpot_s;
    if (slo.e2e_s > 0) o["e2e_s"] = slo.e2e_s;
    sv["slo"] = o, sv["slo_met_requests"] = g.met, sv["slo_attainment"] = g.attainment;
    sv["goodput_requests_per_s"] = g.goodput_requests_per_s * replicas;
}

}  // namespace

ServingEngine job_engine(const std::string& runtime, const ServingSpec& spec) { return engine_of(runtime.empty() ? "tensorrt-llm" : runtime, spec); }

json JobContext::run_serving() const {
    const LlmShape& m = job.model;
    const ParallelismSpec& s = plan.spec;
    const ServingSpec& spec = job.serving;
    if (s.pp > 1)
        throw UserError(job.where() + ".serving", "serving over time runs a replica on one device or one tensor-parallel group today "
                                                  "(pp = 1; dp replicas share the requests): pipelined iterations are not modeled yet");
    // the replica's tensor group: its collectives per iteration, costed by the cluster's model
    const JobModel comm = place_job(plan, cl, job_options(job), job.where());
    // the engine: its profile's settings, the job's serving block over them
    const std::string engine_name = runtime.empty() ? "tensorrt-llm" : runtime;
    const ServingEngine e = engine_of(engine_name, spec);
    // the load, split over the dp replicas in turn: a replay file's requests, or the arrival
    // process's with lengths around the means (`synthetic`; `streaming`, an open stream at the
    // rate, alike)
    // (disaggregated: the whole stream, which the prefill replicas share in turn)
    const bool split = spec.prefill_replicas > 0;
    if (split && spec.prefill_replicas >= s.dp)
        throw UserError(job.where() + ".serving.prefill_replicas = " + std::to_string(spec.prefill_replicas),
                        "must leave at least one of the " + std::to_string(s.dp) + " dp replicas to decode");
    const int64_t share = split ? 1 : s.dp;  // replicas the simulated stream is split over
    std::vector<ServingRequest> reqs;
    int64_t total = 0;
    if (!spec.replay_file.empty()) {
        const std::vector<ServingRequest> all = read_replay_csv(spec.replay_file);
        total = int64_t(all.size());
        for (size_t i = 0; i < all.size(); i += size_t(share)) reqs.push_back(all[i]);  // replica 0's share; the others' alike
    } else {
        if (spec.requests == 0 && std::isinf(spec.arrival_rate_per_s))
            throw UserError(job.where() + ".serving.requests", "an infinite rate needs a request count");
        total = spec.requests > 0 ? spec.requests : std::max<int64_t>(1, std::llround(spec.arrival_rate_per_s * job.duration_minutes * 60.0));
        reqs = make_requests((total + share - 1) / share, spec.arrival_rate_per_s / double(share), spec.arrival, uint64_t(spec.seed), m.prompt,
                             m.generate, {spec.lengths, spec.length_cv});
    }
    const int64_t per_replica = int64_t(reqs.size());
    int64_t short_ctx = INT64_MAX, long_ctx = 0, longest_prompt = 0, out_tokens = 0;
    for (const ServingRequest& q : reqs) {
        short_ctx = std::min(short_ctx, q.prompt), long_ctx = std::max(long_ctx, q.prompt + q.output);
        longest_prompt = std::max(longest_prompt, q.prompt), out_tokens += q.output;
    }
    // the KV cache: what the weights leave of each device's memory, the engine's share of it (a
    // tensor-parallel device holds 1/tp of the weights and of the KV heads, at least one)
    const double weights = double(m.parameters()) / double(s.tp) * double(m.weight_elem_bytes());
    const double kv_heads_local = double(std::max<int64_t>(1, m.kv_heads / s.tp));
    const double kv_per_token = 2.0 * double(m.layers) * kv_heads_local * double(m.hidden / m.heads) * double(m.activation_elem_bytes());
    const double capacity = device.dram_capacity_bytes();
    if (capacity > 0 && weights >= capacity)
        throw UserError(job.where() + " on " + target.name, over_capacity_reason(weights, {{"weights", weights}}, capacity, "the device's dram.capacity_gib"));
    const int64_t kv_tokens = capacity > 0 ? int64_t((capacity - weights) * e.kv_cache_fraction / kv_per_token) : 0;
    SchedulerConfig sc;
    sc.policy = e.policy, sc.max_batch = e.max_batch, sc.chunked_prefill = e.chunked_prefill, sc.mixed_batches = e.mixed_batches;
    sc.max_num_tokens = e.max_num_tokens > 0 ? e.max_num_tokens : INT64_MAX / 4;
    sc.kv_block_tokens = e.kv_block_tokens, sc.kv_capacity_tokens = kv_tokens, sc.reserve_output = e.scheduler == "guaranteed_no_evict";
    sc.iteration_overhead_s = e.iteration_overhead_us * 1e-6;
    // swaps go over the device's link to host memory (node.host_link_gbps), at its datasheet rate
    sc.preemption = e.preemption, sc.swap_bytes_per_token = kv_per_token, sc.swap_bytes_per_s = cl.host_link().effective_bytes_per_s();
    sc.swap_capacity_tokens = int64_t(e.swap_space_gib * 1073741824.0 / kv_per_token);
    // the device runs the iteration costs come from: prefills at powers of two up to the token
    // budget (and the prompt itself), decodes over batch x KV length
    const int64_t budget = e.max_num_tokens > 0 ? e.max_num_tokens : std::max<int64_t>(longest_prompt, 8192);
    std::vector<int64_t> prompts;
    for (int64_t p = 16; p <= budget; p *= 2)
        if (m.model_family != "gpt" || p <= m.max_positions) prompts.push_back(p);
    prompts.push_back(std::min(longest_prompt, budget));
    std::sort(prompts.begin(), prompts.end());
    prompts.erase(std::unique(prompts.begin(), prompts.end()), prompts.end());
    const std::vector<int64_t> batches = powers_to(std::min<int64_t>(e.max_batch, per_replica));
    std::vector<int64_t> kvs = {short_ctx, (short_ctx + long_ctx) / 2, long_ctx};
    kvs.erase(std::unique(kvs.begin(), kvs.end()), kvs.end());
    struct Sample {
        int64_t prompt = 0;          ///< a prefill of this many tokens at batch 1 (0: a decode)
        int64_t batch = 0, kv = 0;   ///< a decode of `batch` sequences over `kv` cached tokens
    };
    std::vector<DeviceTask> tasks;
    std::vector<Sample> samples;  // what each task samples
    for (int64_t p : prompts) {
        tasks.push_back({"prefill", 0, fmt::format("{}/serve_tp{}_prefill{}", dev_dir, s.tp, p), 1, {"sequence.prompt=" + std::to_string(p)}});
        samples.push_back({p, 0, 0});
    }
    for (int64_t b : batches)
        for (int64_t kv : kvs) {
            tasks.push_back({"decode=" + std::to_string(kv), 0, fmt::format("{}/serve_tp{}_decode{}_kv{}", dev_dir, s.tp, b, kv), b, {}});
            samples.push_back({0, b, kv});
        }
    run_devices(*this, tasks);
    IterationCostModel model;
    double static_w = 0;
    for (size_t i = 0; i < tasks.size(); ++i) {
        const ClassCost cc = class_cost(tasks[i].dir);
        if (samples[i].prompt > 0) model.add_prefill_run(samples[i].prompt, cc);
        else model.add_decode_run(samples[i].batch, samples[i].kv, cc);
    }
    run_total(tasks.front().dir, nullptr, nullptr, &static_w);
    // an iteration on a tensor-parallel group: its kernels on one device (all run alike), then
    // the Megatron collectives of its tokens, not overlapped (the engines issue them in stream);
    // the same-sized per-layer all-reduces costed once
    const double act_per_token = double(m.hidden) * double(m.activation_elem_bytes());
    const ChunkShape whole = plan.kinds.at(0);
    const auto comm_cost = [&](const IterationShape& it) {
        IterationCostValue v;
        const std::vector<CommOp> ops = tensor_parallel_forward(whole, s.tp, double(it.tokens) * act_per_token,
                                                                double(it.head_tokens) * double(m.vocab) * double(m.activation_elem_bytes()));
        CollectiveCost last;
        for (size_t i = 0; i < ops.size(); ++i) {
            if (i == 0 || ops[i].kind != ops[i - 1].kind || ops[i].bytes != ops[i - 1].bytes)
                last = collective_cost(ops[i].kind, ops[i].bytes, comm.tensor);
            v.time_s += last.time_ps * 1e-12;
            v.energy_j += (last.intra_bytes * comm.intra_pj_per_byte + last.inter_bytes * comm.inter_pj_per_byte) * 1e-12 +
                          static_w * last.time_ps * 1e-12;
        }
        return v;
    };
    double comm_s = 0, busy_s = 0;
    const auto cost = [&](const IterationShape& it) {
        IterationCostValue v = model(it);
        if (s.tp > 1) {
            const IterationCostValue c = comm_cost(it);
            v.time_s += c.time_s, v.energy_j += c.energy_j, comm_s += c.time_s;
        }
        busy_s += v.time_s;
        return v;
    };
    ServingTrace trace(args.out_dir + "/trace.h5", parse_trace_detail(args.detail, "--detail"), job.where(), target.name, precision.value);
    ServingResult r;
    double energy_device = 0;  // per device over the run: its iterations' energy and static power while it waits
    double replicas = double(s.dp);  // how many replicas serve as the simulated one did
    DisaggregatedResult dr;
    json disagg;
    if (split) {
        // the KV of a finished prompt goes from a prefill to a decode replica: over NVLink when the
        // job fits one node (replicas placed in rank order), else through the NICs
        const bool intra = s.devices() <= cl.devices_per_node;
        const LinkSpec link = intra ? cl.intra_link() : comm.data.inter;
        const int64_t P = spec.prefill_replicas, D = s.dp - P;
        dr = simulate_disaggregated(reqs, sc, sc, {P, D, kv_per_token, link.effective_bytes_per_s(), link.latency_ps * 1e-12}, cost);
        r = dr.combined;
        const auto device_j = [&](const ServingResult& x) { return x.energy_j + static_w * std::max(0.0, r.duration_s - x.busy_s); };
        energy_device = (double(P) * device_j(dr.prefill) + double(D) * device_j(dr.decode)) / double(P + D);
        replicas = double(D);  // the combined figures are decode replica 0's share
        disagg = {{"prefill_replicas", P}, {"decode_replicas", D}, {"kv_link", intra ? "intra" : "inter"},
                  {"kv_transfer_s", dr.kv_transfer_s}, {"prefill_iterations", dr.prefill.iterations},
                  {"decode_iterations", dr.decode.iterations}};
    } else {
        r = simulate_serving(reqs, sc, cost, [&](double start_s, double time_s, const IterationShape& it) { trace.iteration(start_s, time_s, it); });
        energy_device = r.energy_j + static_w * std::max(0.0, r.duration_s - r.busy_s);
    }
    trace.finish(r, kv_tokens);
    const double devices = double(s.devices());
    const double tokens = double(out_tokens) * double(share);  // every replica's
    json out = identity_json("serving");
    out["parallelism"] = {{"tp", s.tp}, {"pp", s.pp}, {"dp", s.dp}};
    json sv;
    sv["engine"] = {{"profile", engine_name}, {"policy", e.policy}, {"scheduler", e.scheduler}, {"max_batch", e.max_batch},
                    {"max_num_tokens", e.max_num_tokens}, {"kv_block_tokens", e.kv_block_tokens}, {"chunked_prefill", e.chunked_prefill},
                    {"mixed_batches", e.mixed_batches}, {"kv_cache_fraction", e.kv_cache_fraction},
                    {"preemption", e.preemption}, {"swap_space_gib", e.swap_space_gib}};
    sv["arrival"] = spec.arrival;
    sv["request_profile"] = spec.profile;
    sv["arrival_rate_per_s"] = std::isinf(spec.arrival_rate_per_s) ? json("inf") : json(spec.arrival_rate_per_s);
    sv["requests"] = spec.replay_file.empty() ? int64_t(reqs.size()) * share : total;  // synthetic: per replica x dp, the count rounded up
    {  // the lengths served (replica 0's requests): their means and spread
        double prompt_sum = 0;
        for (const ServingRequest& q : reqs) prompt_sum += double(q.prompt);
        sv["prompt_tokens"] = prompt_sum / double(reqs.size()), sv["output_tokens"] = double(out_tokens) / double(reqs.size());
        sv["longest_prompt_tokens"] = longest_prompt, sv["longest_request_tokens"] = long_ctx;
        if (spec.replay_file.empty()) sv["lengths"] = spec.lengths == "lognormal" ? json{{"kind", spec.lengths}, {"cv", spec.length_cv}} : json{{"kind", spec.lengths}};
        else sv["replay_file"] = spec.replay_file;
    }
    sv["achieved_requests_per_s"] = r.achieved_requests_per_s * replicas;  // every replica serves its share alike
    sv["output_tokens_per_s"] = r.output_tokens_per_s * replicas;
    sv["total_tokens_per_s"] = r.total_tokens_per_s * replicas;
    sv["ttft_s"] = stats_json(r.ttft), sv["itl_s"] = stats_json(r.itl), sv["tpot_s"] = stats_json(r.tpot), sv["e2e_s"] = stats_json(r.e2e);
    sv["histograms"] = {{"from_s", LatencyHistogram::kFromS},
                        {"bins_per_decade", LatencyHistogram::kBinsPerDecade},
                        {"ttft_s", histogram_json(r.ttft_hist)},
                        {"itl_s", histogram_json(r.itl_hist)},
                        {"tpot_s", histogram_json(r.tpot_hist)},
                        {"e2e_s", histogram_json(r.e2e_hist)}};
    sv["duration_s"] = r.duration_s, sv["iterations"] = r.iterations, sv["preemptions"] = r.preemptions;
    sv["swaps_out"] = r.swaps_out, sv["swaps_in"] = r.swaps_in, sv["swap_s"] = r.swap_s, sv["swapped_tokens"] = r.swapped_tokens;
    sv["peak_queue"] = r.peak_queue, sv["peak_kv_tokens"] = r.peak_kv_tokens, sv["kv_capacity_tokens"] = kv_tokens;
    sv["peak_running"] = r.peak_running;
    sv["peak_iteration_tokens"] = r.peak_iteration_tokens;
    sv["budget_limited_iterations"] = r.budget_limited_iterations;
    sv["kv_limited_iterations"] = r.kv_limited_iterations;
    sv["kv_bytes_per_token"] = kv_per_token;
    sv["device_runs"] = tasks.size();
    sv["tensor_comm_share"] = busy_s > 0 ? comm_s / busy_s : 0.0;
    if (split) sv["disaggregation"] = disagg;
    add_goodput(sv, r, split ? dr.served : reqs, {spec.slo_ttft_ms * 1e-3, spec.slo_tpot_ms * 1e-3, spec.slo_e2e_ms * 1e-3}, replicas);
    sv["timeline"] = timeline_json(r.samples, static_w, s.tp);
    out["serving"] = sv;
    // the figures a job's schedule phases weight by duration (run_job's phase summary)
    out["tokens_per_s"] = sv["output_tokens_per_s"];
    out["ttft_s"] = r.ttft.mean;
    out["time_per_output_token_s"] = r.tpot.mean;
    out["energy_per_device_j"] = energy_device;
    out["energy_job_j"] = energy_device * devices;
    out["energy_per_token_j"] = tokens > 0 ? energy_device * devices / tokens : 0.0;
    out["power_per_device_w"] = r.duration_s > 0 ? energy_device / r.duration_s : 0.0;
    out["memory_per_device_bytes"] = weights + double(r.peak_kv_tokens) * kv_per_token;
    out["memory_capacity_bytes"] = capacity;
    out["node_overhead_power"] = node_power_json(cl, s.devices(), r.duration_s > 0 ? energy_device * devices / r.duration_s : 0.0);
    json nm = json::array();
    if (spec.replay_file.empty() && spec.lengths == "fixed")
        nm.push_back("request lengths are fixed at sequence.prompt and sequence.generate (the means; serving.lengths draws them around)");
    if (!spec.replay_file.empty() && share > 1) nm.push_back("a replay with dp > 1: every replica is taken to serve its share as replica 0 does");
    nm.push_back("activation memory: the KV cache takes kv_cache_fraction of all the weights leave");
    nm.push_back("the engine's CPU-side work per iteration beyond serving.iteration_overhead_us, and the network between client and server");
    nm.push_back("node overheads: " + out["node_overhead_power"]["not_modeled"].get<std::string>());
    if (spec.profile != "steady_state")
        nm.push_back("request_profile = " + spec.profile + ": archsim's own reading (the format defines none): the rate x " +
                     fmt::format("{:g}", request_profile_rate(spec.profile)) + (spec.profile == "spike" ? ", bursty arrivals" : ""));
    add_unmodeled_settings(job, cl, nm, args);
    out["not_modeled"] = nm;
    out["custom"] = custom_json(job);
    out["simulation"] = {{"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
                         {"device_runs", tasks.size()}, {"iterations", r.iterations}};
    write_file_atomically(args.out_dir + "/last_run.json", out.dump(2) + "\n");
    return out;
}

}  // namespace archsim
