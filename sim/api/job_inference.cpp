#include "sim/api/job_parts.h"

#include <algorithm>
#include <chrono>

#include "sim/api/run_model.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/cluster/job_sim.h"
#include "workloads/parallel/pipeline_schedule.h"

namespace archsim {

using nlohmann::json;

json JobContext::run_inference() const {
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
    run_devices(*this, tasks, mbs);
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
    const JobOptions opt = job_options(job);
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
    json out = identity_json("inference");
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
    out["over_duration"] = over_duration_json(job.duration_minutes, total, tokens, energy / n * devices);
    out["node_overhead_power"] = node_power_json(cl, s.devices(), total > 0 ? energy / n * devices / total : 0.0);
    out["not_modeled"] = {"node overheads: " + out["node_overhead_power"]["not_modeled"].get<std::string>(), "continuous batching and request arrival (schedule.phases): one request batch end to end",
                          "activation memory of the prefill"};
    add_unmodeled_settings(job, cl, out["not_modeled"], args);
    out["custom"] = custom_json(job);
    out["simulation"] = {{"events", res.events}, {"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
                         {"device_runs", tasks.size()}};
    write_file_atomically(args.out_dir + "/last_run.json", out.dump(2) + "\n");
    return out;
}

}  // namespace archsim
