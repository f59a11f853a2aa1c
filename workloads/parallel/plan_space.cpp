#include "workloads/parallel/plan_space.h"

#include <algorithm>

#include "workloads/parallel/pipeline_schedule.h"

namespace archsim {

namespace {

std::vector<int64_t> divisors(int64_t n) {
    std::vector<int64_t> d;
    for (int64_t k = 1; k <= n; ++k)
        if (n % k == 0) d.push_back(k);
    return d;
}

/// KV heads one of `tp` ranks holds (at least one: a rank beyond kv_heads holds a copy).
int64_t kv_per_rank(const LlmShape& m, int64_t tp) { return std::max<int64_t>(1, m.kv_heads / tp); }

/// Korthikanti et al. 2023, Table 2, per layer and microbatch at two bytes an element: s b h
/// (10 + 24 / t) with tensor parallelism, s b h (34 / t) with sequence parallelism too, and
/// 5 a s^2 b / t for the attention core.
double korthikanti_bytes(const ParallelPlan& plan, bool attention_core) {
    const LlmShape& m = plan.model;
    const double sbh = double(plan.spec.microbatch) * double(m.prompt) * double(m.hidden), t = double(plan.spec.tp);
    const double core = 5.0 * double(m.heads) * double(m.prompt) / double(m.hidden) / t;
    const double replicated = 10.0 / double(plan.spec.sequence_parts());
    return sbh * (replicated + 24.0 / t + (attention_core ? core : 0.0)) * double(m.activation_elem_bytes()) / 2.0;
}

/// The most memory any device of the plan holds with `activation_bytes_per_layer` kept per layer
/// of each microbatch in flight: its stage's weights, gradients and optimizer state (sharded as
/// its ZeRO stage shards them) plus the schedule's most forwards without their backward times the
/// chunk's layers times that figure.
double stage_memory_bytes(const ParallelPlan& plan, double activation_bytes_per_layer) {
    const ParallelismSpec& s = plan.spec;
    const LlmShape& m = plan.model;
    const double w = double(m.weight_elem_bytes()), dp = double(s.dp);
    const double opt = s.optimizer == "adam" || s.optimizer == "adamw" ? 8.0 : s.optimizer == "momentum" ? 4.0 : 0.0;
    const std::vector<int64_t> live = in_flight_microbatches(plan);
    double most = 0;
    for (int64_t st = 0; st < s.pp; ++st) {
        double params = 0;
        for (int64_t c = 0; c < s.virtual_stages; ++c) params += chunk_parameters(m, s, plan.kinds[plan.kind_of[size_t(st)][size_t(c)]]);
        const double state = params * (w / (s.zero_stage >= 3 ? dp : 1.0) + w / (s.zero_stage >= 2 ? dp : 1.0) + opt / (s.zero_stage >= 1 ? dp : 1.0));
        most = std::max(most, state + double(live[size_t(st)]) * double(plan.layers_per_chunk) * activation_bytes_per_layer);
    }
    return most;
}

}  // namespace

std::vector<ParallelismSpec> enumerate_plans(const LlmShape& m, const ParallelismSpec& base, int64_t devices, int64_t devices_per_node) {
    std::vector<ParallelismSpec> out;
    const int64_t gb = base.global_batch > 0 ? base.global_batch : base.dp * base.microbatch;
    for (int64_t tp : divisors(devices)) {
        if (m.heads % tp != 0 || m.ffn % tp != 0 || (m.kv_heads % tp != 0 && tp % m.kv_heads != 0)) continue;
        if (tp > devices_per_node && tp % devices_per_node != 0) continue;
        for (int64_t pp : divisors(m.layers)) {
            if (devices % (tp * pp) != 0) continue;
            const int64_t dp = devices / (tp * pp);
            if (gb % dp != 0) continue;
            std::vector<int64_t> eps = {1};
            if (m.model_family == "moe") {
                eps.clear();
                for (int64_t e : divisors(m.experts))
                    if (dp % e == 0 && m.experts / e >= m.top_k) eps.push_back(e);
            }
            for (int64_t mb : divisors(gb / dp)) {
                const int64_t micro = gb / (dp * mb);
                for (int64_t v : divisors(m.layers / pp)) {
                    if (v > 1 && (pp < 2 || micro % pp != 0)) continue;
                    for (int64_t ep : eps)
                        for (const char* rc : {"none", "selective", "full"})
                            for (int sp = 0; sp <= (tp > 1 && m.prompt % tp == 0 ? 1 : 0); ++sp)
                                for (int64_t z = 0; z <= (dp > 1 ? 3 : 0); ++z) {
                                    ParallelismSpec s = base;
                                    s.tp = tp, s.pp = pp, s.dp = dp, s.ep = ep, s.microbatch = mb, s.global_batch = gb, s.virtual_stages = v;
                                    s.schedule = v > 1 ? "interleaved" : base.schedule == "gpipe" ? "gpipe" : "1f1b";
                                    s.recompute = rc, s.sequence_parallel = sp == 1, s.zero_stage = z;
                                    out.push_back(s);
                                }
                }
            }
        }
    }
    return out;
}

std::string plan_id(const ParallelismSpec& s) {
    std::string id = "tp" + std::to_string(s.tp) + "_pp" + std::to_string(s.pp) + "_dp" + std::to_string(s.dp);
    if (s.ep > 1) id += "_ep" + std::to_string(s.ep);
    id += "_v" + std::to_string(s.virtual_stages) + "_mb" + std::to_string(s.microbatch) + "_" + s.recompute;
    if (s.sequence_parallel) id += "_sp";
    return id + "_z" + std::to_string(s.zero_stage);
}

ChunkMacs chunk_macs(const LlmShape& m, const ParallelismSpec& s, const ChunkShape& c) {
    const double T = double(s.microbatch) * double(m.prompt), h = double(m.hidden), hd = double(m.hidden / m.heads);
    const double heads = double(m.heads / s.tp), kvh = double(kv_per_rank(m, s.tp)), ffn = double(m.ffn / s.tp);
    const double proj = T * h * (2.0 * heads * hd + 2.0 * kvh * hd);              // q, o and k, v
    const double scores = double(s.microbatch) * heads * double(m.prompt) * double(m.prompt) * hd;  // one of the two attention matmuls
    double mlp = 0;
    if (m.model_family == "gpt") mlp = 2.0 * T * h * ffn;
    else if (m.model_family == "llama") mlp = 3.0 * T * h * ffn;
    else mlp = T * double(m.top_k) * 3.0 * h * ffn + T * h * double(m.experts / s.ep);
    const double layer = proj + 2.0 * scores + mlp;
    ChunkMacs out;
    out.layer_forward = double(c.layers) * layer;
    out.forward = out.layer_forward + (c.head ? T * h * double(vocab_shard(m.vocab, s.tp)) : 0.0);
    out.backward = 2.0 * out.forward;
    if (s.recompute == "selective") out.recompute = double(c.layers) * scores;
    if (s.recompute == "full") out.recompute = double(std::max<int64_t>(0, c.layers - 1)) * layer;
    return out;
}

double chunk_parameters(const LlmShape& m, const ParallelismSpec& s, const ChunkShape& c) {
    const bool gpt = m.model_family == "gpt";
    const double h = double(m.hidden), hd = double(m.hidden / m.heads), heads = double(m.heads / s.tp), kvh = double(kv_per_rank(m, s.tp));
    const double ffn = double(m.ffn / s.tp), vocab = double(vocab_shard(m.vocab, s.tp));
    double layer = h * (2.0 * heads * hd + 2.0 * kvh * hd);
    if (gpt) layer += heads * hd + 2.0 * kvh * hd + h + 2.0 * h * ffn + ffn + h + 4.0 * h;  // biases, MLP, two LayerNorms
    else if (m.model_family == "llama") layer += 3.0 * h * ffn + 2.0 * h;
    else layer += double(m.experts / s.ep) * (3.0 * h * ffn + h) + 2.0 * h;
    double p = double(c.layers) * layer;
    if (c.embedding) p += vocab * h + (gpt ? double(m.max_positions) * h : 0.0);
    if (c.head) p += (gpt ? 2.0 * h : h) + (gpt && c.embedding ? 0.0 : vocab * h);
    return p;
}

std::vector<int64_t> in_flight_microbatches(const ParallelPlan& plan) {
    const ParallelismSpec& s = plan.spec;
    const auto sched = pipeline_schedule(s.schedule, s.pp, s.virtual_stages, plan.microbatches);
    std::vector<int64_t> out;
    for (const auto& ops : sched) {
        int64_t live = 0, most = 0;
        for (const PipeOp& op : ops) most = std::max(most, live += op.forward ? 1 : -1);
        out.push_back(most);
    }
    return out;
}

double activation_bytes_per_layer_estimate(const ParallelPlan& plan) {
    // full recomputation keeps each layer's input: the rank's 1/tp shard under sequence parallelism
    if (plan.spec.recompute == "full") return plan.activation_bytes / double(plan.spec.sequence_parts());
    return korthikanti_bytes(plan, plan.spec.recompute == "none");
}

double backward_extra_bytes_estimate(const ParallelPlan& plan) {
    if (plan.spec.recompute == "full") return korthikanti_bytes(plan, true);
    if (plan.spec.recompute == "none") return 0.0;
    return korthikanti_bytes(plan, true) - korthikanti_bytes(plan, false);
}

double memory_lower_bound_bytes(const ParallelPlan& plan) {
    const ParallelismSpec& s = plan.spec;
    // activations per layer of each microbatch in flight
    const double act = plan.activation_bytes, tp = double(s.tp), split = s.sequence_parallel ? tp : 1.0;
    double layer = act / split;
    if (s.recompute != "full") {
        layer = 4.0 * act / split + act / tp;  // the layer input and the norms' outputs (replicated); the attention context
        if (plan.model.model_family != "moe") layer += 2.0 * act * double(plan.model.ffn) / double(plan.model.hidden) / tp;  // the feed-forward's activations
    }
    return stage_memory_bytes(plan, layer);
}

}  // namespace archsim
