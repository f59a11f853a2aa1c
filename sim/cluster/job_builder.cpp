#include "sim/cluster/job_builder.h"

#include <algorithm>
#include <numeric>

#include "sim/common/error.h"
#include "workloads/parallel/pipeline_schedule.h"

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

JobModel build_job(const ParallelPlan& plan, const ClusterConfig& cl, const std::vector<ChunkRun>& runs, const JobOptions& opt,
                   const std::string& where) {
    const ParallelismSpec& s = plan.spec;
    if (s.devices() > cl.devices())
        throw UserError(where, "needs tp x pp x dp = " + std::to_string(s.devices()) + " devices; the target " + cl.name + " has " +
                                   std::to_string(cl.devices()) + " (" + std::to_string(cl.nodes) + " nodes of " + std::to_string(cl.devices_per_node) + ")");
    const int64_t dpn = cl.devices_per_node;
    if (s.tp > dpn && s.tp % dpn != 0)
        throw UserError(where + ": parallelism.tp = " + std::to_string(s.tp), "spans nodes unevenly: not a multiple of the " + std::to_string(dpn) + " devices per node");
    JobModel j;
    j.schedule = plan.spec.schedule;
    j.pp = s.pp, j.virtual_stages = s.virtual_stages, j.microbatches = plan.microbatches;
    j.tp = s.tp, j.zero_stage = s.zero_stage, j.dp_overlap = s.dp_overlap, j.scatter_gather = opt.scatter_gather;
    LinkSpec intra = cl.intra_link(), inter = cl.inter_link();
    if (!opt.gpudirect_rdma) {  // staged through host memory: the PCIe link to the host bounds the NIC share
        const LinkSpec host = cl.host_link();
        inter.bandwidth_bytes_per_s = std::min(inter.bandwidth_bytes_per_s, host.bandwidth_bytes_per_s / inter.efficiency);
    }
    auto group = [&](int64_t ranks, int64_t per_node) {
        CommGroup g;
        g.ranks = ranks, g.ranks_per_node = std::max<int64_t>(1, std::gcd(ranks, per_node));
        g.intra = intra, g.inter = inter, g.generation = cl.generation, g.host_cpu = cl.host_cpu;
        return g;
    };
    j.tensor = group(s.tp, std::min(s.tp, dpn));
    j.data = group(s.dp, s.tp >= dpn ? 1 : dpn / s.tp);
    j.p2p_inter_node = s.tp * s.dp >= dpn;
    j.embedding = group(2, j.p2p_inter_node ? 1 : 2);
    j.p2p_bytes = plan.activation_bytes;
    j.intra_pj_per_byte = cl.intra_pj_per_byte, j.inter_pj_per_byte = cl.inter_pj_per_byte;
    const bool sp = s.sequence_parallel, tp = s.tp > 1;
    const double act = plan.activation_bytes, ce_bytes = double(s.microbatch) * double(plan.model.prompt) * 4.0;
    const double grad_elem = plan.model.weights_precision == "fp32" ? 4.0 : plan.model.weights_precision == "fp8" ? 1.0 : 2.0;
    std::vector<ChunkCost> kinds;
    for (size_t k = 0; k < plan.kinds.size(); ++k) {
        const ChunkShape& sh = plan.kinds[k];
        const ChunkRun& r = runs.at(k);
        ChunkCost c;
        c.forward.compute_ps = r.forward_ps + (sh.head ? r.loss_ps : 0.0);
        c.forward.energy_j = r.forward_j + (sh.head ? r.loss_j : 0.0);
        c.backward.compute_ps = r.recompute_ps + r.backward_ps;
        c.backward.energy_j = r.recompute_j + r.backward_j;
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
        c.grad_bytes = r.params * grad_elem;
        kinds.push_back(c);
    }
    const double embed_grad = double(plan.model.vocab / s.tp) * double(plan.model.hidden) * grad_elem;
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

std::vector<double> stage_memory_bytes(const ParallelPlan& plan, const std::vector<ChunkRun>& runs) {
    const ParallelismSpec& s = plan.spec;
    const auto sched = pipeline_schedule(s.schedule, s.pp, s.virtual_stages, plan.microbatches);
    const double dp = double(s.dp);
    std::vector<double> out;
    for (int64_t st = 0; st < s.pp; ++st) {
        double state = 0, work = 0, in_backward = 0, waiting = 0;
        for (int64_t c = 0; c < s.virtual_stages; ++c) {
            const size_t k = plan.kind_of[size_t(st)][size_t(c)];
            const ChunkRun& r = runs.at(k);
            state += r.weights_bytes / (s.zero_stage >= 3 ? dp : 1.0) + r.gradients_bytes / (s.zero_stage >= 2 ? dp : 1.0) +
                     r.optimizer_state_bytes / (s.zero_stage >= 1 ? dp : 1.0);
            work = std::max(work, r.workspace_bytes);
            in_backward = std::max(in_backward, r.saved_activations_bytes);
            // a microbatch waiting for its backward keeps, under full recomputation, only each
            // layer's input (Megatron's checkpoints); otherwise everything the backward reads
            waiting = std::max(waiting, s.recompute == "full" ? double(plan.kinds[k].layers) * plan.activation_bytes : r.saved_activations_bytes);
        }
        int64_t live = 0, most = 0;
        for (const PipeOp& op : sched[size_t(st)]) most = std::max(most, live += op.forward ? 1 : -1);
        out.push_back(state + in_backward + double(std::max<int64_t>(0, most - 1)) * waiting + work);
    }
    return out;
}

}  // namespace archsim
