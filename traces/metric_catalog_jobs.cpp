// The job and serving metrics of the catalogue (traces/metric_catalog.h): every figure a job's
// last_run.json (sim/api/job_run.h) and an llm workload's llm.json (sim/api/llm_serving.h)
// report, by its path in that file. The inputs they echo (model, parallelism, custom) are not
// metrics. Formulas are those of the code that computes them; sources are cited there.
#include "traces/metric_catalog.h"

namespace archsim {

namespace {

MetricDecl decl(MetricScope scope, const char* name, const char* unit, const char* doc) {
    MetricDecl d;
    d.scope = scope, d.name = name, d.unit = unit, d.doc = doc;
    return d;
}

}  // namespace

std::vector<MetricDecl> job_metric_declarations() {
    using S = MetricScope;
    const S J = S::Job, V = S::Serving;
    return {
        // ---- a job: both modes
        decl(J, "devices", "1", "devices the job occupies: tp x pp x dp"),
        decl(J, "tokens_per_s", "1/s", "training: global_batch x sequence / step_time_s; inference: dp x batch x generated tokens / request_s; "
                                       "a job with schedule phases: the phases' mean weighted by duration"),
        decl(J, "memory_per_device_bytes", "bytes", "training: the largest pipeline stage's weights, gradients, optimizer state, "
                                                    "activations and workspace; inference: the device's weights and KV cache"),
        decl(J, "memory_capacity_bytes", "bytes", "the device's memory (dram.capacity_gib; 0: the device gives none)"),
        decl(J, "energy_per_device_j", "J", "mean over one device per stage: its device runs' energy plus static power while it waits"),
        decl(J, "static_while_waiting_per_device_j", "J", "static power x the time a device does not compute (bubbles, exposed "
                                                          "communication), mean per device"),
        decl(J, "energy_job_j", "J", "energy_per_device_j x devices"),
        decl(J, "power_per_device_w", "W", "energy_per_device_j over the step (training) or the request (inference)"),
        decl(J, "node_overhead_power.nodes", "1", "nodes the job's devices occupy"),
        decl(J, "node_overhead_power.per_node_w", "W", "host CPUs and NICs per node (the cluster's node.host_w + NICs x network.nic_w)"),
        decl(J, "node_overhead_power.host_w", "W", "the host CPUs of one node (node.host_w)"),
        decl(J, "node_overhead_power.nics_w", "W", "the NICs of one node (nics_per_node x network.nic_w)"),
        decl(J, "node_overhead_power.total_w", "W", "nodes x per_node_w"),
        decl(J, "node_overhead_power.job_with_nodes_w", "W", "the devices' power plus the nodes' overhead"),
        decl(J, "communication[].count", "1", "collectives of one scope, kind, algorithm and protocol"),
        decl(J, "communication[].bytes", "bytes", "their message bytes"),
        decl(J, "communication[].time_s", "s", "their time, summed over one device per stage"),
        decl(J, "communication[].exposed_s", "s", "the part of time_s no compute hid"),
        decl(J, "communication[].hidden_s", "s", "time_s - exposed_s"),
        decl(J, "simulation.events", "1", "events of the job simulation"),
        decl(J, "simulation.wall_s", "s", "wall time of the whole command, device runs included"),
        decl(J, "simulation.device_runs", "1", "device simulations the job needed (each a child archsim run)"),
        // ---- a training job
        decl(J, "step_time_s", "s", "one iteration: the end of the last pipeline stage in the job simulation"),
        decl(J, "samples_per_s", "1/s", "global_batch / step_time_s"),
        decl(J, "model_flops_per_iteration", "FLOP", "a GPT: Megatron-LM's 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) (Narayanan et al. "
                                                     "SC21 eq. 3); otherwise model_flops_from_device_runs"),
        decl(J, "model_flops_from_device_runs", "FLOP", "2 x the forward and gradient MACs of every chunk's device run, per microbatch, "
                                                        "over microbatches, tp and dp (recomputation excluded)"),
        decl(J, "tflops_per_device", "TFLOP/s", "model_flops_per_iteration / devices / step_time_s / 1e12"),
        decl(J, "peak_tflops_per_device", "TFLOP/s", "2 x the device's peak MACs per cycle x its clock / 1e12"),
        decl(J, "mfu", "1", "model FLOPs (no recomputation) / devices / step_time_s / peak (Korthikanti et al. 2022)"),
        decl(J, "hfu", "1", "hardware FLOPs (recomputation included) / devices / step_time_s / peak (Korthikanti et al. 2022)"),
        decl(J, "breakdown_s.compute", "s", "mean over the stages' devices of their compute; compute + exposed + bubble = step"),
        decl(J, "breakdown_s.exposed_communication", "s", "mean over the stages' devices of the communication they waited on"),
        decl(J, "breakdown_s.bubble", "s", "mean over the stages' devices of the time they idled in the pipeline schedule"),
        decl(J, "breakdown_s.exposed_by.*", "s", "exposed communication by scope and link level (tensor/intra, data/inter, ...)"),
        decl(J, "pipeline.bubble_fraction_ideal", "1", "the schedule's bubble fraction without communication: (pp - 1) / (v x m + pp - 1)"),
        decl(J, "pipeline.critical_stage", "1", "the stage that ends last"),
        // ---- a training job's parallel-plan search (track: best, run --search on: sim/api/plan_search.cpp)
        decl(J, "search.devices", "1", "devices every plan of the search occupies (the job's tp x pp x dp)"),
        decl(J, "search.plans_enumerated", "1", "plans of the space (workloads/parallel/plan_space.h: enumerate_plans)"),
        decl(J, "search.plans_infeasible", "1", "plans that cannot run: placement, memory (lower bound or device runs), or a failed simulation"),
        decl(J, "search.infeasible_by.placement", "1", "plans whose tensor group does not fit the nodes"),
        decl(J, "search.infeasible_by.memory_lower_bound", "1", "plans over the device memory by memory_lower_bound_bytes, before any run"),
        decl(J, "search.infeasible_by.memory", "1", "plans over the device memory by their device runs (stage_memory)"),
        decl(J, "search.infeasible_by.simulation_failed", "1", "plans whose step simulation failed"),
        decl(J, "search.plans_evaluated", "1", "plans whose step was simulated (the job simulator, their own device runs)"),
        decl(J, "search.plans_pruned", "1", "plans left unevaluated because their lower bound is not below the best step found "
                                            "(serving: token budgets, chunked prefill and schedulers their base run shows would change nothing)"),
        decl(J, "search.plans_left", "1", "plans left unevaluated with a bound below the best step: their estimate is not below it, or the budget ran out"),
        decl(J, "search.device_runs", "1", "device simulations the search asked for (plans that give a device the same work share one)"),
        decl(J, "search.rounds", "1", "rounds of device runs and step simulations"),
        decl(J, "search.gap_to_lowest_bound_left", "1", "(best step - lowest bound of the plans left) / best step; 0: no plan left can beat it"),
        decl(J, "search.best.step_time_s", "s", "the best plan's simulated step"),
        decl(J, "search.top[].step_time_s", "s", "a plan of the ten best: its simulated step"),
        decl(J, "search.top[].memory_per_device_bytes", "bytes", "its largest stage's memory"),
        decl(J, "search.top[].tokens_per_s", "1/s", "its tokens per second"),
        decl(J, "search.top[].mfu", "1", "its model FLOPs utilization"),
        decl(J, "search.job_plan.step_time_s", "s", "the plan the job was written with: its simulated step"),
        decl(J, "search.wall_s", "s", "wall time of the search, the best plan's own run not included"),
        decl(J, "search.splits", "1", "serving: the splits of the devices into tensor-parallel replicas the search looked at"),
        decl(J, "search.top[].max_batch", "1", "serving: the engine's max_batch the plan ran with"),
        decl(J, "search.best.max_batch", "1", "serving: the best plan's max_batch"),
        decl(J, "search.job_plan.max_batch", "1", "serving: the job's own max_batch"),
        decl(J, "search.top[].max_num_tokens", "1", "serving: the engine's token budget per iteration the plan ran with (0: none)"),
        decl(J, "search.best.max_num_tokens", "1", "serving: the best plan's token budget per iteration"),
        decl(J, "search.job_plan.max_num_tokens", "1", "serving: the job's own token budget per iteration"),
        decl(J, "search.top[].prefill_replicas", "1", "serving: of its dp replicas, those that ran prompts only (0: every replica ran both)"),
        decl(J, "search.best.prefill_replicas", "1", "serving: the best plan's prompt-only replicas"),
        decl(J, "search.job_plan.prefill_replicas", "1", "serving: the job's own prompt-only replicas"),
        decl(J, "search.failed[].max_batch", "1", "serving: a plan that could not be served: its max_batch"),
        decl(J, "search.failed[].max_num_tokens", "1", "serving: its token budget per iteration"),
        decl(J, "search.failed[].prefill_replicas", "1", "serving: its prompt-only replicas"),
        decl(J, "search.top[].output_tokens_per_s", "1/s", "serving: a replica split's output tokens per second"),
        decl(J, "search.top[].goodput_requests_per_s", "1/s", "serving: its requests meeting every latency objective per second"),
        decl(J, "search.top[].slo_attainment", "1", "serving: its share of requests meeting every objective"),
        decl(J, "search.top[].ttft_p99_s", "s", "serving: its 99th-percentile time to first token"),
        decl(J, "search.top[].e2e_p99_s", "s", "serving: its 99th-percentile end-to-end latency"),
        decl(J, "search.best.output_tokens_per_s", "1/s", "serving: the best split's output tokens per second"),
        decl(J, "search.best.goodput_requests_per_s", "1/s", "serving: the best split's requests meeting every objective per second"),
        decl(J, "search.best.slo_attainment", "1", "serving: the best split's share of requests meeting every objective"),
        decl(J, "search.best.ttft_p99_s", "s", "serving: the best split's 99th-percentile time to first token"),
        decl(J, "search.best.e2e_p99_s", "s", "serving: the best split's 99th-percentile end-to-end latency"),
        decl(J, "search.job_plan.output_tokens_per_s", "1/s", "serving: the job's own split's output tokens per second"),
        decl(J, "search.job_plan.goodput_requests_per_s", "1/s", "serving: the job's own split's requests meeting every objective per second"),
        decl(J, "search.job_plan.slo_attainment", "1", "serving: the job's own split's share of requests meeting every objective"),
        decl(J, "search.job_plan.ttft_p99_s", "s", "serving: the job's own split's 99th-percentile time to first token"),
        decl(J, "search.job_plan.e2e_p99_s", "s", "serving: the job's own split's 99th-percentile end-to-end latency"),
        decl(J, "stages[].stage", "1", "the pipeline stage's index"),
        decl(J, "stages[].compute_s", "s", "the stage's device's compute in the step"),
        decl(J, "stages[].exposed_communication_s", "s", "the communication it waited on"),
        decl(J, "stages[].bubble_s", "s", "the time it idled"),
        decl(J, "stages[].end_s", "s", "when its last work ended"),
        decl(J, "stages[].energy_j", "J", "its device's energy in the step (device runs, links)"),
        decl(J, "stages[].memory_bytes", "bytes", "its device's memory: weights, gradients, optimizer state, activations, workspace"),
        decl(J, "power_job_w", "W", "energy_job_j / step_time_s"),
        decl(J, "link_bytes.intra", "bytes", "bytes over links inside nodes"),
        decl(J, "link_bytes.inter", "bytes", "bytes over links between nodes"),
        decl(J, "link_bytes.link_contention_s", "s", "time transfers queued for a busy link"),
        // ---- an inference job
        decl(J, "prompt_tokens", "1", "tokens of the prompt (the prefill)"),
        decl(J, "generated_tokens", "1", "tokens generated per sequence"),
        decl(J, "ttft_s", "s", "time to first token: the prefill pass through every stage"),
        decl(J, "time_per_output_token_s", "s", "(request_s - ttft_s) / decode steps"),
        decl(J, "request_s", "s", "the whole request: the prefill and every decode step"),
        decl(J, "tensor_comm_per_token_s", "s", "one microbatch's tensor-parallel collectives in a middle decode step"),
        decl(J, "tensor_comm_share_of_token", "1", "tensor_comm_per_token_s over that microbatch's path: compute, collectives, hand-offs"),
        decl(J, "decode_points[].kv_length", "1", "a sampled decode step's KV length"),
        decl(J, "decode_points[].device_compute_s", "s", "its device runs' time summed over the stages"),
        decl(J, "memory.weights_bytes", "bytes", "a device's share of the weights: parameters / (tp x pp) x bytes per weight"),
        decl(J, "memory.kv_cache_bytes", "bytes", "a device's KV cache: 2 x layers/pp x batch x (prompt + generated) x kv_heads/tp x "
                                                   "head dim x bytes"),
        decl(J, "energy_per_token_j", "J", "energy_job_j / generated tokens of all replicas"),
        // ---- a job with schedule phases
        // (step_time_s, tokens_per_s, tflops_per_device, mfu, ttft_s, time_per_output_token_s and the
        // powers are then the phases' means weighted by duration)
        decl(J, "duration_minutes", "min", "the schedule's phases' duration_minutes, summed"),
        decl(J, "tokens_over_schedule", "1", "tokens_per_s x duration_minutes x 60"),
        decl(J, "over_duration.minutes", "min", "the entry's duration_minutes"),
        decl(J, "over_duration.iterations", "1", "whole training steps (or request batches end to end) back to back in duration_minutes"),
        decl(J, "over_duration.tokens", "1", "the tokens of those iterations (training: global_batch x sequence each; inference: every replica's generated tokens)"),
        decl(J, "over_duration.energy_j", "J", "the whole job's energy over those iterations"),
        decl(J, "phases[].*", "", "each phase's own figures (its last_run.json's keys of the same name) and its duration_minutes and tokens_scale"),
        // ---- a serving job (a serving block: sim/api/job_serving.cpp, docs/serving.md)
        decl(J, "serving.engine.*", "", "the engine's settings: its profile's serving section with the job's serving block over it"),
        decl(J, "serving.arrival_rate_per_s", "1/s", "the mean arrival rate asked for (\"inf\": every request at time 0)"),
        decl(J, "serving.requests", "1", "requests served (the count rounded up to a multiple of dp)"),
        decl(J, "serving.prompt_tokens", "1", "the mean prompt of the requests served (replica 0's): sequence.prompt with fixed lengths"),
        decl(J, "serving.output_tokens", "1", "the mean output of the requests served (replica 0's): sequence.generate with fixed lengths"),
        decl(J, "serving.longest_prompt_tokens", "1", "the longest prompt served (replica 0's)"),
        decl(J, "serving.longest_request_tokens", "1", "the longest prompt + output served (replica 0's): the KV length the decode runs reach"),
        decl(J, "serving.lengths.cv", "1", "serving.length_cv: the lognormal lengths' coefficient of variation"),
        decl(J, "serving.achieved_requests_per_s", "1/s", "requests / duration_s, over the dp replicas"),
        decl(J, "serving.output_tokens_per_s", "1/s", "output tokens / duration_s, over the dp replicas"),
        decl(J, "serving.total_tokens_per_s", "1/s", "prompt and output tokens / duration_s, over the dp replicas"),
        decl(J, "serving.ttft_s.*", "s", "time to first token: arrival to the end of the iteration that finishes the prompt (mean, p50, p90, p99)"),
        decl(J, "serving.itl_s.*", "s", "inter-token latency: every gap between a request's successive tokens after the first, pooled (vLLM's ITL)"),
        decl(J, "serving.tpot_s.*", "s", "time per output token: (e2e - TTFT) / (output - 1) per request (vLLM's TPOT, TensorRT-LLM's ITL)"),
        decl(J, "serving.e2e_s.*", "s", "end to end: arrival to the last token"),
        decl(J, "serving.duration_s", "s", "first arrival to last completion on a replica"),
        decl(J, "serving.iterations", "1", "forward passes of the batch on a replica"),
        decl(J, "serving.preemptions", "1", "requests preempted for want of KV blocks (swapped out, or their KV dropped and recomputed)"),
        decl(J, "serving.swaps_out", "1", "preemptions by swap: the request's KV blocks copied to host memory"),
        decl(J, "serving.swaps_in", "1", "swapped requests brought back"),
        decl(J, "serving.swap_s", "s", "time the swaps' copies over the host link added to iterations"),
        decl(J, "serving.swapped_tokens", "1", "KV tokens copied out (each copied back in as well)"),
        decl(J, "serving.peak_queue", "1", "requests waiting at most"),
        decl(J, "serving.peak_running", "1", "requests in one iteration's batch at most (replica 0)"),
        decl(J, "serving.peak_iteration_tokens", "1", "tokens one iteration ran at most, prefill chunks and decode tokens (replica 0)"),
        decl(J, "serving.kv_limited_iterations", "1",
             "iterations at whose start the queue's head could not be admitted for want of KV-cache blocks (replica 0)"),
        decl(J, "serving.budget_limited_iterations", "1",
             "iterations in which the token budget held work back: a decode, a prompt waiting to fit, a chunk cut short (replica 0)"),
        decl(J, "serving.peak_kv_tokens", "1", "KV-cache tokens held at most (whole blocks)"),
        decl(J, "serving.kv_capacity_tokens", "1", "KV-cache capacity per device: (device memory - weights / tp) x kv_cache_fraction / kv_bytes_per_token"),
        decl(J, "serving.kv_bytes_per_token", "bytes", "per device: 2 x layers x (KV heads / tp, at least 1) x head dim x bytes per element"),
        decl(J, "serving.tensor_comm_share", "1", "the iterations' tensor-parallel collectives over their whole time (0 at tp = 1)"),
        decl(J, "serving.device_runs", "1", "device simulations the iteration costs come from"),
        decl(J, "serving.timeline[].t_s", "s", "an iteration's start (the timeline is thinned to at most about 2,000 samples)"),
        decl(J, "serving.timeline[].queued", "1", "requests waiting then"),
        decl(J, "serving.timeline[].running", "1", "requests in the batch then"),
        decl(J, "serving.timeline[].kv_tokens", "1", "KV-cache tokens held then"),
        decl(J, "serving.timeline[].power_w", "W", "per device since the previous sample: the iterations' energy and static power while idle "
                                                  "over the interval (null at the first sample)"),
        decl(J, "serving.timeline[].energy_per_token_j", "J", "since the previous sample: the replica's energy (its tp devices') over the "
                                                             "output tokens it emitted (null when none were)"),
        decl(J, "serving.disaggregation.prefill_replicas", "1", "replicas that run prompts only (serving.prefill_replicas)"),
        decl(J, "serving.disaggregation.decode_replicas", "1", "replicas that run decodes only: dp - prefill_replicas"),
        decl(J, "serving.disaggregation.kv_transfer_s", "s", "one prompt's KV cache from a prefill to a decode replica, mean: link latency + "
                                                            "prompt x kv_bytes_per_token / the link's sustained rate"),
        decl(J, "serving.disaggregation.prefill_iterations", "1", "prefill replica 0's iterations"),
        decl(J, "serving.disaggregation.decode_iterations", "1", "decode replica 0's iterations"),
        decl(J, "serving.histograms.from_s", "s", "the latency histograms' first bin edge (sim/serving/latency_histogram.h)"),
        decl(J, "serving.histograms.bins_per_decade", "1", "bins per factor of 10 (100: each 2.3% wide)"),
        decl(J, "serving.histograms.*.sum_s", "s", "the latencies' exact sum (replica 0's requests)"),
        decl(J, "serving.histograms.*.bins[][]", "1", "[bin index, count] for every bin with a count: bin k spans from_s x 10^(k / bins_per_decade) "
                                                       "to the next; a schedule pools its phases' to give its percentiles"),
        decl(J, "serving.slo.*", "s", "the latency objectives a request must meet for goodput (serving.slo_ttft_ms, slo_tpot_ms, slo_e2e_ms)"),
        decl(J, "serving.slo_met_requests", "1", "requests (replica 0's) that met every objective"),
        decl(J, "serving.slo_attainment", "1", "slo_met_requests over the requests (replica 0's)"),
        decl(J, "serving.goodput_requests_per_s", "1/s", "requests meeting every objective per second, over the dp replicas (vLLM's request goodput)"),
        decl(J, "simulation.iterations", "1", "a serving job's iterations on one replica"),
        // ---- an llm workload's serving phases (llm.json)
        decl(V, "batch", "1", "sequences served together"),
        decl(V, "prompt_tokens", "1", "tokens of the prompt"),
        decl(V, "generated_tokens", "1", "tokens generated per sequence"),
        decl(V, "parameters", "1", "the model's parameters"),
        decl(V, "time_to_first_token_s", "s", "the prefill run's latency"),
        decl(V, "time_per_output_token_s", "s", "decode.latency_s / decode.steps"),
        decl(V, "tokens_per_s", "1/s", "batch x generated tokens / (prefill + decode latency)"),
        decl(V, "energy_per_token_j", "J", "(prefill + decode energy) / (batch x generated tokens)"),
        decl(V, "prefill.latency_s", "s", "the prefill run's latency"),
        decl(V, "prefill.energy_j", "J", "the prefill run's energy"),
        decl(V, "decode.steps", "1", "decode steps: generated tokens - 1 (the prefill makes the first)"),
        decl(V, "decode.latency_s", "s", "every decode step's latency, interpolated linearly in the KV length between the sampled runs"),
        decl(V, "decode.energy_j", "J", "every decode step's energy, interpolated the same way"),
        decl(V, "decode_points[].kv_length", "1", "a sampled decode step's KV length (prompt, one third, two thirds and all the way)"),
        decl(V, "decode_points[].latency_s", "s", "its run's latency"),
        decl(V, "decode_points[].energy_j", "J", "its run's energy"),
    };
}

}  // namespace archsim
