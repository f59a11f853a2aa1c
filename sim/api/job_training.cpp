#include "sim/api/job_parts.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "sim/api/run_model.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/cluster/job_sim.h"
#include "workloads/parallel/pipeline_schedule.h"

namespace archsim {

using nlohmann::json;

json JobContext::run_training() const {
    std::vector<DeviceTask> tasks;
    for (size_t k = 0; k < plan.kinds.size(); ++k) tasks.push_back({"train", k, train_run_dir(dev_dir, plan, k)});
    run_devices(*this, tasks);
    std::vector<ChunkRun> runs;
    for (const DeviceTask& t : tasks) runs.push_back(read_chunk_run(t.dir + "/metrics.json"));
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
    const JobOptions opt = job_options(job);
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
    out["over_duration"] = over_duration_json(job.duration_minutes, step_s, double(s.global_batch) * double(job.model.prompt), energy_job);
    out["node_overhead_power"] = node_power_json(cl, s.devices(), energy_job / step_s);
    out["link_bytes"] = {{"intra", res.intra_bytes}, {"inter", res.inter_bytes}, {"link_contention_s", res.link_queued_ps * 1e-12}};
    json nm = json::array();
    if (job.tuning.cuda_graphs && !device_launches_graphs(device))
        nm.push_back("cuda_graphs: this device model has no CUDA-graph launch cost (kernels keep its own launch overhead)");
    if (cl.intra_pj_per_byte == 0 || cl.inter_pj_per_byte == 0) nm.push_back("link energy: the cluster gives no pJ/byte for a link level, so its transfers cost no energy");
    if (runs[0].static_w == 0) nm.push_back("device static/idle power: this device config models none (energy.static_w = 0)");
    nm.push_back("node overheads: " + out["node_overhead_power"]["not_modeled"].get<std::string>());
    nm.push_back("gradient clipping's norm all-reduce and the loss-scale check: small, not simulated");
    if (!job.phases.empty()) nm.push_back("schedule.phases: read and kept, not yet simulated phase by phase (the step is the steady state)");
    add_unmodeled_settings(job, cl, nm, args);
    out["not_modeled"] = nm;
    out["custom"] = custom_json(job);
    out["simulation"] = {{"events", res.events}, {"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
                         {"device_runs", plan.kinds.size()}};
    write_file_atomically(args.out_dir + "/last_run.json", out.dump(2) + "\n");
    return out;
}

}  // namespace archsim
