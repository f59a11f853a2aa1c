#include "sim/cluster/job_bound.h"

#include <algorithm>
#include <stdexcept>

#include "workloads/parallel/pipeline_schedule.h"

namespace archsim {

namespace {

double comm_ps(const JobModel& job, const CommOp& op) { return collective_cost(op.kind, op.bytes, job.group(op.scope)).time_ps; }

double pass_ps(const JobModel& job, const PassCost& p) {
    double t = p.compute_ps;
    for (const CommOp& op : p.comm) t += comm_ps(job, op);
    return t;
}

}  // namespace

double step_lower_bound_ps(const JobModel& job) {
    if (job.inference) throw std::invalid_argument("step_lower_bound_ps: an inference job has no training step");
    if (int64_t(job.stages.size()) != job.pp) throw std::invalid_argument("step_lower_bound_ps: the job's stages do not match pp");
    const int64_t pp = job.pp, v = job.virtual_stages;
    const auto sched = pipeline_schedule(job.schedule, pp, v, job.microbatches);
    // a point-to-point message as StageProc::send costs it
    const bool split = job.scatter_gather && job.p2p_inter_node && job.tp > 1;
    const double send = pp > 1 ? collective_cost(Collective::SendRecv, split ? job.p2p_bytes / double(job.tp) : job.p2p_bytes, job.p2p_pair()).time_ps +
                                     (split ? comm_ps(job, {Collective::AllGather, CommScope::Tensor, job.p2p_bytes}) : 0.0)
                               : 0.0;
    std::vector<double> work(size_t(pp), 0.0), tail(size_t(pp), 0.0), fwd0(size_t(pp), 0.0), bwd0(size_t(pp), 0.0);
    for (int64_t r = 0; r < pp; ++r) {
        const StageCost& st = job.stages[size_t(r)];
        if (int64_t(st.chunks.size()) != v) throw std::invalid_argument("step_lower_bound_ps: a stage's chunks do not match virtual_stages");
        std::vector<double> f(size_t(v), 0.0), b(size_t(v), 0.0);
        for (int64_t c = 0; c < v; ++c) f[size_t(c)] = pass_ps(job, st.chunks[size_t(c)].forward), b[size_t(c)] = pass_ps(job, st.chunks[size_t(c)].backward);
        fwd0[size_t(r)] = f[0], bwd0[size_t(r)] = b[0];
        for (const PipeOp& op : sched[size_t(r)]) {
            work[size_t(r)] += op.forward ? f[size_t(op.chunk)] : b[size_t(op.chunk)];
            const bool sends = op.forward ? (r < pp - 1 || op.chunk < v - 1) : (r > 0 || op.chunk > 0);
            if (sends) work[size_t(r)] += send;
        }
        double grads = 0, expert_grads = 0;
        for (const auto& c : st.chunks) grads += c.grad_bytes, expert_grads += c.expert_grad_bytes;
        double t = st.optimizer_ps;
        if (job.data.ranks > 1 && grads > 0 && !job.dp_overlap) t += comm_ps(job, {job.gradient_reduction(), CommScope::Data, grads});
        if (job.expert_data.ranks > 1 && expert_grads > 0) t += comm_ps(job, {job.gradient_reduction(), CommScope::ExpertData, expert_grads});
        if (pp > 1 && (r == 0 || r == pp - 1) && st.embedding_grad_bytes > 0) t += comm_ps(job, {Collective::AllReduce, CommScope::Embedding, st.embedding_grad_bytes});
        if (job.zero_stage >= 1 && job.zero_stage < 3 && job.data.ranks > 1) t += comm_ps(job, {Collective::AllGather, CommScope::Data, job.param_bytes_per_stage_device});
        tail[size_t(r)] = t;
    }
    double bound = 0, ahead = 0, back = 0;  // ahead: the first forward's path to stage s; back: the last backward's path from it
    for (int64_t s = 0; s < pp; ++s) {
        bound = std::max(bound, ahead + work[size_t(s)] + std::max(tail[size_t(s)], back + tail[0]));
        // stage s's forward is sent on to s + 1; its backward back to s - 1 (stage 0's to no one)
        ahead += fwd0[size_t(s)] + send, back += bwd0[size_t(s)] + (s > 0 ? send : 0.0);
    }
    return bound;
}

}  // namespace archsim
