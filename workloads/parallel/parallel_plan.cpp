#include "workloads/parallel/parallel_plan.h"

#include <algorithm>
#include <stdexcept>

#include "sim/base/error.h"
#include "workloads/parallel/pipeline_schedule.h"

namespace archsim {

double megatron_flops_per_iteration(const LlmShape& m, int64_t global_batch) {
    const double B = double(global_batch), s = double(m.prompt), l = double(m.layers), h = double(m.hidden), V = double(m.vocab);
    return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

double gpt_model_flops_per_iteration(const LlmShape& m, int64_t global_batch) {
    const double B = double(global_batch), s = double(m.prompt), l = double(m.layers), h = double(m.hidden), V = double(m.vocab);
    return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}

double gpt_hardware_flops_per_iteration(const LlmShape& m, int64_t global_batch, const std::string& recompute) {
    if (recompute == "full") return megatron_flops_per_iteration(m, global_batch);
    if (recompute == "none") return gpt_model_flops_per_iteration(m, global_batch);
    if (recompute != "selective") throw std::invalid_argument("recompute '" + recompute + "': none, selective or full");
    const double B = double(global_batch), s = double(m.prompt), l = double(m.layers), h = double(m.hidden), V = double(m.vocab);
    return 72.0 * B * s * l * h * h * (1.0 + s / (3.0 * h) + V / (12.0 * l * h));
}

ParallelPlan make_parallel_plan(const LlmShape& model, const ParallelismSpec& spec, const std::string& where) {
    auto bad = [&](const std::string& key, int64_t v, const std::string& why) {
        return UserError(where + ": parallelism." + key + " = " + std::to_string(v), why);
    };
    for (auto [k, v] : std::vector<std::pair<const char*, int64_t>>{{"tp", spec.tp}, {"pp", spec.pp}, {"dp", spec.dp}, {"ep", spec.ep},
                                                                     {"virtual_stages", spec.virtual_stages}, {"microbatch", spec.microbatch}})
        if (v < 1) throw bad(k, v, "must be >= 1");
    if (spec.ep > 1) {
        if (model.model_family != "moe") throw bad("ep", spec.ep, "expert parallelism needs a mixture-of-experts model (model_family moe)");
        if (model.experts % spec.ep != 0) throw bad("ep", spec.ep, "does not divide the " + std::to_string(model.experts) + " experts");
        if (spec.dp % spec.ep != 0) throw bad("ep", spec.ep, "does not divide dp = " + std::to_string(spec.dp) + " (expert-parallel ranks are data-parallel ranks)");
        if (model.experts / spec.ep < model.top_k)
            throw bad("ep", spec.ep, "leaves fewer than top_k = " + std::to_string(model.top_k) + " experts per rank (balanced routing sends each token's top_k to distinct local experts)");
    }
    if (model.heads % spec.tp != 0) throw bad("tp", spec.tp, "does not divide the " + std::to_string(model.heads) + " attention heads");
    if (model.ffn % spec.tp != 0) throw bad("tp", spec.tp, "does not divide the feed-forward width " + std::to_string(model.ffn));
    if (model.kv_heads % spec.tp != 0 && spec.tp % model.kv_heads != 0)
        throw bad("tp", spec.tp, "neither divides nor is a multiple of the " + std::to_string(model.kv_heads) + " KV heads");
    if (model.layers % (spec.pp * spec.virtual_stages) != 0)
        throw bad(spec.virtual_stages > 1 ? "virtual_stages" : "pp", spec.virtual_stages > 1 ? spec.virtual_stages : spec.pp,
                  "pp x virtual_stages = " + std::to_string(spec.pp * spec.virtual_stages) + " does not divide the " + std::to_string(model.layers) + " layers");
    if (model.prompt % spec.sequence_parts() != 0)
        throw bad("tp", spec.tp, "does not divide the sequence's " + std::to_string(model.prompt) + " tokens, which sequence parallelism splits over the tensor-parallel ranks");
    if (spec.zero_stage < 0 || spec.zero_stage > 3) throw bad("zero_stage", spec.zero_stage, "must be 0, 1, 2 or 3");
    const auto& names = pipeline_schedule_names();
    if (std::find(names.begin(), names.end(), spec.schedule) == names.end())
        throw UserError(where + ": parallelism.schedule = \"" + spec.schedule + "\"", "unknown (gpipe, 1f1b, interleaved)");
    ParallelPlan p;
    p.spec = spec;
    p.model = model;
    if (p.spec.virtual_stages > 1) p.spec.schedule = "interleaved";
    if (p.spec.global_batch == 0) p.spec.global_batch = spec.dp * spec.microbatch;
    if (p.spec.global_batch % (spec.dp * spec.microbatch) != 0)
        throw UserError(where + ": global_batch = " + std::to_string(p.spec.global_batch),
                        "not a multiple of dp x microbatch = " + std::to_string(spec.dp * spec.microbatch));
    p.microbatches = p.spec.global_batch / (spec.dp * spec.microbatch);
    if (p.spec.schedule == "interleaved") {
        if (spec.pp < 2) throw bad("virtual_stages", spec.virtual_stages, "interleaving needs pp >= 2");
        if (p.microbatches % spec.pp != 0)
            throw UserError(where + ": global_batch = " + std::to_string(p.spec.global_batch),
                            std::to_string(p.microbatches) + " microbatches per pipeline: the interleaved schedule needs a multiple of pp = " + std::to_string(spec.pp));
    }
    const int64_t v = p.spec.virtual_stages;
    p.layers_per_chunk = model.layers / (spec.pp * v);
    p.kind_of.assign(size_t(spec.pp), std::vector<size_t>(size_t(v)));
    for (int64_t r = 0; r < spec.pp; ++r)
        for (int64_t c = 0; c < v; ++c) {
            const ChunkShape k{p.layers_per_chunk, r == 0 && c == 0, r == spec.pp - 1 && c == v - 1};
            auto it = std::find(p.kinds.begin(), p.kinds.end(), k);
            if (it == p.kinds.end()) p.kinds.push_back(k), it = p.kinds.end() - 1;
            p.kind_of[size_t(r)][size_t(c)] = size_t(it - p.kinds.begin());
        }
    p.activation_bytes = double(spec.microbatch) * double(model.prompt) * double(model.hidden) * double(model.activation_elem_bytes());
    return p;
}

}  // namespace archsim
