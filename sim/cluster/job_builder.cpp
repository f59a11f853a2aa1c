#include "sim/cluster/job_builder.h"

#include <algorithm>
#include <numeric>

#include "sim/base/error.h"
#include "workloads/parallel/pipeline_schedule.h"
#include "workloads/parallel/plan_space.h"

namespace archsim {

namespace {

/// A tensor-parallel all-reduce of `bytes`, or its reduce-scatter + all-gather pair.
void tp_reduce(std::vector<CommOp>& ops, double bytes, bool sp) {
    if (sp) {
        ops.push_back({Collective::ReduceScatter, CommScope::Tensor, bytes});
        ops.push_back({Collective::AllGather, CommScope::Tensor, bytes});
    } else {
        ops.push_back({Collective::AllReduce, CommScope::Tensor, bytes});
    }
}

}  // namespace

JobModel place_job(const ParallelPlan& plan, const ClusterConfig& cl, const JobOptions& opt, const std::string& where) {
    check_placement(plan, cl, where);
    const ParallelismSpec& s = plan.spec;
    const int64_t dpn = cl.devices_per_node;
    JobModel j;
    j.schedule = plan.spec.schedule;
    j.pp = s.pp, j.virtual_stages = s.virtual_stages, j.microbatches = plan.microbatches;
    j.tp = s.tp, j.zero_stage = s.zero_stage, j.dp_overlap = s.dp_overlap, j.scatter_gather = opt.scatter_gather;
    const LinkSpec intra = cl.intra_link();
    // a communicator's network path by the nodes its ranks span (the topology's leaf groups),
    // staged through host memory without GPUDirect RDMA (the PCIe link to the host bounds the NIC
    // share), under SR-IOV at its bandwidth loss
    auto inter_for = [&](int64_t span_nodes) {
        LinkSpec inter = cl.inter_link(std::max<int64_t>(1, span_nodes));
        if (!opt.gpudirect_rdma)
            inter.bandwidth_bytes_per_s = std::min(inter.bandwidth_bytes_per_s, cl.host_link().bandwidth_bytes_per_s / inter.efficiency);
        if (opt.sriov) inter.efficiency *= 0.98;
        return inter;
    };
    const auto nodes_of = [&](int64_t ranks) { return (ranks + dpn - 1) / dpn; };         // consecutive ranks
    const auto apart = [&](int64_t distance) { return distance >= dpn ? distance / dpn + 1 : 1; };  // two ranks this far apart
    auto group = [&](int64_t ranks, int64_t per_node, int64_t span_nodes) {
        CommGroup g;
        g.ranks = ranks, g.ranks_per_node = std::max<int64_t>(1, std::gcd(ranks, per_node));
        g.intra = intra, g.inter = inter_for(span_nodes), g.generation = cl.generation, g.host_cpu = cl.host_cpu;
        return g;
    };
    // Megatron-LM's rank order: tensor ranks adjacent, then data, then pipeline
    j.tensor = group(s.tp, std::min(s.tp, dpn), nodes_of(s.tp));
    j.data = group(s.dp, s.tp >= dpn ? 1 : dpn / s.tp, nodes_of(s.tp * s.dp));
    j.p2p_inter_node = s.tp * s.dp >= dpn;
    j.p2p_inter = inter_for(apart(s.tp * s.dp));
    j.embedding = group(2, j.p2p_inter_node ? 1 : 2, apart(s.tp * s.dp * (s.pp - 1)));
    // expert-parallel ranks are consecutive data-parallel ranks; an expert's replicas stride ep
    const int64_t dp_per_node = s.tp >= dpn ? 1 : dpn / s.tp;
    j.expert = group(s.ep, dp_per_node, nodes_of(s.tp * s.ep));
    j.expert_data = group(s.dp / s.ep, std::max<int64_t>(1, dp_per_node / s.ep), nodes_of(s.tp * s.dp));
    j.p2p_bytes = plan.activation_bytes;
    j.intra_pj_per_byte = cl.intra_pj_per_byte, j.inter_pj_per_byte = cl.inter_pj_per_byte;
    return j;
}

void check_placement(const ParallelPlan& plan, const ClusterConfig& cl, const std::string& where) {
    const ParallelismSpec& s = plan.spec;
    if (s.devices() > cl.devices())
        throw UserError(where, "needs tp x pp x dp = " + std::to_string(s.devices()) + " devices; the target " + cl.name + " has " +
                                   std::to_string(cl.devices()) + " (" + std::to_string(cl.nodes) + " nodes of " + std::to_string(cl.devices_per_node) + ")");
    const int64_t dpn = cl.devices_per_node;
    if (s.tp > dpn && s.tp % dpn != 0)
        throw UserError(where + ": parallelism.tp = " + std::to_string(s.tp), "spans nodes unevenly: not a multiple of the " + std::to_string(dpn) + " devices per node");
}

std::pair<double, double> ChunkServeRun::decode_at(int64_t kv) const {
    if (decode.empty()) return {0.0, 0.0};
    if (kv <= decode.front().first) return decode.front().second;
    for (size_t i = 1; i < decode.size(); ++i)
        if (kv <= decode[i].first) {
            const auto& [k0, a] = decode[i - 1];
            const auto& [k1, b] = decode[i];
            const double f = double(kv - k0) / double(k1 - k0);
            return {a.first + f * (b.first - a.first), a.second + f * (b.second - a.second)};
        }
    return decode.back().second;
}

std::vector<CommOp> tensor_parallel_forward(const ChunkShape& shape, int64_t tp, double act_bytes, double logits_bytes) {
    std::vector<CommOp> ops;
    if (tp <= 1) return ops;
    if (shape.embedding) ops.push_back({Collective::AllReduce, CommScope::Tensor, act_bytes});
    for (int64_t l = 0; l < 2 * shape.layers; ++l) ops.push_back({Collective::AllReduce, CommScope::Tensor, act_bytes});
    if (shape.head) ops.push_back({Collective::AllGather, CommScope::Tensor, logits_bytes});
    return ops;
}

int64_t inference_microbatches(int64_t batch, int64_t pp) {
    for (int64_t m = std::min(batch, pp); m > 1; --m)
        if (batch % m == 0) return m;
    return 1;
}

JobModel build_inference_job(const ParallelPlan& plan, const ClusterConfig& cl, const std::vector<ChunkServeRun>& runs, int64_t steps,
                             int64_t microbatches, const JobOptions& opt, const std::string& where) {
    JobModel j = place_job(plan, cl, opt, where);
    j.inference = true;
    j.microbatches = std::max<int64_t>(1, microbatches);
    const ParallelismSpec& s = plan.spec;
    const double b = double(s.microbatch / j.microbatches), h = double(plan.model.hidden), e = double(plan.model.activation_elem_bytes());
    const double logits = b * double(plan.model.vocab) * e;
    for (int64_t st = 0; st < s.pp; ++st) {
        std::vector<PassCost> passes;
        for (int64_t k = 0; k <= steps; ++k) {
            const double tokens = k == 0 ? double(plan.model.prompt) : 1.0, act = b * tokens * h * e;
            PassCost p;
            for (int64_t c = 0; c < s.virtual_stages; ++c) {
                const size_t kind = plan.kind_of[size_t(st)][size_t(c)];
                const ChunkServeRun& r = runs.at(kind);
                const auto [ps, jl] = k == 0 ? std::make_pair(r.prefill_ps, r.prefill_j) : r.decode_at(plan.model.prompt + k - 1);
                p.compute_ps += ps, p.energy_j += jl, p.macs += k == 0 ? r.prefill_macs : r.decode_macs;
                const ChunkShape& sh = plan.kinds[kind];
                for (const CommOp& op : tensor_parallel_forward(sh, s.tp, act, logits)) p.comm.push_back(op);
                if (s.ep > 1)  // each MoE layer's dispatch and combine
                    for (int64_t l = 0; l < 2 * sh.layers; ++l)
                        p.comm.push_back({Collective::AllToAll, CommScope::Expert, act * double(plan.model.top_k)});
            }
            p.send_bytes = st == s.pp - 1 ? b * 8.0 : act;  // the last stage returns the next token ids
            passes.push_back(p);
        }
        j.passes.push_back(std::move(passes));
    }
    return j;
}

JobModel build_job(const ParallelPlan& plan, const ClusterConfig& cl, const std::vector<ChunkRun>& runs, const JobOptions& opt,
                   const std::string& where) {
    JobModel j = place_job(plan, cl, opt, where);
    const ParallelismSpec& s = plan.spec;
    const bool sp = s.sequence_parallel, tp = s.tp > 1;
    if (sp && tp) {
        // a stage sends its sequence-parallel shard, and the scatter/gather has nothing left to
        // split (Megatron-LM: the p2p tensor shape's sequence is seq_length / tp, and
        // p2p_communication.py scatters and gathers only "and not args.sequence_parallel")
        j.p2p_bytes = plan.activation_bytes / double(s.tp);
        j.scatter_gather = false;
    }
    const double act = plan.activation_bytes, ce_bytes = double(s.microbatch) * double(plan.model.prompt) * 4.0;
    const double grad_elem = double(plan.model.weight_elem_bytes());
    std::vector<ChunkCost> kinds;
    for (size_t k = 0; k < plan.kinds.size(); ++k) {
        const ChunkShape& sh = plan.kinds[k];
        const ChunkRun& r = runs.at(k);
        ChunkCost c;
        c.forward.compute_ps = r.forward_ps + (sh.head ? r.loss_ps : 0.0);
        c.forward.energy_j = r.forward_j + (sh.head ? r.loss_j : 0.0);
        c.backward.compute_ps = r.recompute_ps + r.backward_ps;
        c.backward.energy_j = r.recompute_j + r.backward_j;
        c.forward.macs = r.forward_macs + (sh.head ? r.loss_macs : 0.0);
        c.backward.macs = r.recompute_macs + r.backward_macs;
        if (s.ep > 1) {  // each MoE layer's dispatch and combine: two all-to-alls of the routed rows per pass
            const double routed = act * double(plan.model.top_k);
            for (int64_t l = 0; l < sh.layers; ++l)
                for (int i = 0; i < 2; ++i) {
                    c.forward.comm.push_back({Collective::AllToAll, CommScope::Expert, routed});
                    c.backward.comm.push_back({Collective::AllToAll, CommScope::Expert, routed});
                    if (s.recompute == "full") c.backward.comm.push_back({Collective::AllToAll, CommScope::Expert, routed});
                }
        }
        if (tp) {
            if (sh.embedding) tp_reduce(c.forward.comm, act, sp);
            for (int64_t l = 0; l < sh.layers; ++l) {
                for (int i = 0; i < 2; ++i) tp_reduce(c.forward.comm, act, sp);
                if (s.recompute == "full")
                    for (int i = 0; i < 2; ++i) tp_reduce(c.backward.comm, act, sp);
                for (int i = 0; i < 2; ++i) tp_reduce(c.backward.comm, act, sp);
            }
            if (sh.head) {
                for (int i = 0; i < 3; ++i) c.forward.comm.push_back({Collective::AllReduce, CommScope::Tensor, ce_bytes});
                tp_reduce(c.backward.comm, act, sp);
            }
        }
        // the experts' weights (SwiGLU: gate, up, down; ffn split over tp) are replicated dp / ep
        // times, the rest dp times
        const double expert_params = plan.model.model_family == "moe"
                                         ? double(sh.layers) * double(plan.model.experts / s.ep) * 3.0 * double(plan.model.hidden) * double(plan.model.ffn / s.tp)
                                         : 0.0;
        c.grad_bytes = std::max(0.0, r.params - expert_params) * grad_elem;
        c.expert_grad_bytes = std::min(expert_params, r.params) * grad_elem;
        if (s.zero_stage >= 3 && s.dp > 1) {  // ZeRO-3: each layer's parameters gathered before its forward, recomputation and backward
            const double layer = r.params * grad_elem / double(std::max<int64_t>(1, sh.layers));
            for (int64_t l = 0; l < sh.layers; ++l) {
                c.forward.comm.push_back({Collective::AllGather, CommScope::Data, layer});
                c.backward.comm.push_back({Collective::AllGather, CommScope::Data, layer});
                if (s.recompute == "full") c.backward.comm.push_back({Collective::AllGather, CommScope::Data, layer});
            }
        }
        kinds.push_back(c);
    }
    const double embed_grad = double(vocab_shard(plan.model.vocab, s.tp)) * double(plan.model.hidden) * grad_elem;
    for (int64_t st = 0; st < s.pp; ++st) {
        StageCost sc;
        double params = 0;
        for (int64_t c = 0; c < s.virtual_stages; ++c) {
            const size_t k = plan.kind_of[size_t(st)][size_t(c)];
            sc.chunks.push_back(kinds[k]);
            sc.optimizer_ps += runs[k].optimizer_ps, sc.optimizer_j += runs[k].optimizer_j;
            params += runs[k].params;
            if (plan.kinds[k].embedding || plan.kinds[k].head) sc.embedding_grad_bytes = embed_grad;
        }
        if (s.zero_stage >= 1) sc.optimizer_ps /= double(s.dp), sc.optimizer_j /= double(s.dp);
        if (plan.model.model_family != "gpt") sc.embedding_grad_bytes = 0;  // untied LM head: nothing to sync
        j.param_bytes_per_stage_device = std::max(j.param_bytes_per_stage_device, params * grad_elem);
        j.stages.push_back(sc);
    }
    return j;
}

double stand_in_loss_bytes(const ParallelPlan& plan, const ChunkShape& chunk) {
    // under sequence parallelism the chunk's output is the rank's 1/tp of the tokens
    return chunk.head ? 0.0 : 2.0 * plan.activation_bytes / double(plan.spec.sequence_parts());
}

std::vector<StageMemory> stage_memory(const ParallelPlan& plan, const std::vector<ChunkRun>& runs) {
    const ParallelismSpec& s = plan.spec;
    const double dp = double(s.dp);
    // under sequence parallelism a layer's checkpointed input is the rank's 1/tp shard (the device
    // runs' saved activations are already their sequence-parallel chunk's)
    const double sp_keep = 1.0 / double(s.sequence_parts());
    const std::vector<int64_t> live = in_flight_microbatches(plan);
    std::vector<StageMemory> out;
    for (int64_t st = 0; st < s.pp; ++st) {
        StageMemory m;
        double work = 0, in_backward = 0, waiting = 0;
        for (int64_t c = 0; c < s.virtual_stages; ++c) {
            const size_t k = plan.kind_of[size_t(st)][size_t(c)];
            const ChunkRun& r = runs.at(k);
            const int64_t layers = plan.kinds[k].layers;
            m.weights += r.weights_bytes / (s.zero_stage >= 3 ? dp : 1.0);
            m.gradients += r.gradients_bytes / (s.zero_stage >= 2 ? dp : 1.0);
            m.optimizer_state += r.optimizer_state_bytes / (s.zero_stage >= 1 ? dp : 1.0);
            work = std::max(work, r.workspace_bytes);
            const double stand_in = stand_in_loss_bytes(plan, plan.kinds[k]);
            in_backward = std::max(in_backward, std::max(0.0, r.saved_activations_bytes - stand_in));
            // a microbatch waiting for its backward keeps, under full recomputation, only each
            // layer's input (Megatron's checkpoints); otherwise what its forward saved
            waiting = std::max(waiting, s.recompute == "full" ? double(layers) * plan.activation_bytes * sp_keep
                                                              : std::max(0.0, r.saved_after_forward_bytes - stand_in));
        }
        m.activations = in_backward + double(std::max<int64_t>(0, live[size_t(st)] - 1)) * waiting;
        // under sequence parallelism the device runs keep a gathered GEMM input as its shard;
        // Megatron-LM gathers into one buffer of the whole activation, reused by every gather
        // (its global memory buffer, "mpu"): the rest of that buffer is workspace
        m.workspace = work + (sp_keep < 1.0 ? (1.0 - sp_keep) * plan.activation_bytes : 0.0);
        out.push_back(m);
    }
    return out;
}

}  // namespace archsim
