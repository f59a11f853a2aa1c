// The job simulator on hand-made jobs with known answers: pipeline schedules' step times from
// their closed forms, collectives on the critical path, overlapped gradient buckets; and the
// parallel-plan search's lower bound on each (exact without contention). SystemC runs
// once per process: each TEST_CASE is its own ctest entry (one process each).
#include <catch2/catch.hpp>

#include "sim/cluster/job_bound.h"
#include "sim/cluster/job_sim.h"

using namespace archsim;

namespace {

constexpr double kMs = 1e9;  // ps

/// pp stages of v chunks, each chunk's forward `f` and backward `b` ms, no communication.
JobModel pipeline(const std::string& schedule, int64_t pp, int64_t v, int64_t m, double f, double b) {
    JobModel j;
    j.schedule = schedule, j.pp = pp, j.virtual_stages = v, j.microbatches = m;
    j.tensor.intra = {"nvlink", 300e9, 0.8, 0}, j.tensor.inter = {"ib", 25e9, 0.96, 0};
    j.data = j.embedding = j.expert = j.expert_data = j.tensor;
    for (int64_t r = 0; r < pp; ++r) {
        StageCost s;
        for (int64_t c = 0; c < v; ++c) {
            ChunkCost cc;
            cc.forward.compute_ps = f * kMs, cc.backward.compute_ps = b * kMs;
            s.chunks.push_back(cc);
        }
        j.stages.push_back(s);
    }
    return j;
}

}  // namespace

TEST_CASE("job sim: 1F1B without communication takes (m + pp - 1) x (forward + backward)", "[sim][cluster]") {
    const JobModel j = pipeline("1f1b", 4, 1, 8, 1.0, 2.0);
    const JobResult r = simulate_job(j);
    CHECK(r.step_ps == Approx((8 + 4 - 1) * 3.0 * kMs));
    CHECK(step_lower_bound_ps(j) == Approx(r.step_ps));  // no communication: the bound is the step
    // every stage computes m x 3 ms; the rest of the step is its bubble
    for (const auto& s : r.stages) {
        CHECK(s.compute_ps == Approx(24.0 * kMs));
        CHECK(s.idle_ps == Approx(9.0 * kMs));
    }
}

TEST_CASE("job sim: GPipe without communication takes (m + pp - 1) x (forward + backward) too", "[sim][cluster]") {
    const JobModel j = pipeline("gpipe", 4, 1, 8, 1.0, 2.0);
    const JobResult r = simulate_job(j);
    CHECK(r.step_ps == Approx((8 + 4 - 1) * 3.0 * kMs));
    CHECK(step_lower_bound_ps(j) == Approx(r.step_ps));
}

TEST_CASE("job sim: interleaving v chunks cuts the bubble to (pp - 1) / v of a stage's passes", "[sim][cluster]") {
    // each stage's work per microbatch is 1 + 2 ms split over 2 chunks: the ideal step is
    // (m + (pp - 1) / v) x 3 ms (Narayanan et al. SC21, section 2.2.2)
    const JobModel j = pipeline("interleaved", 4, 2, 8, 0.5, 1.0);
    const JobResult r = simulate_job(j);
    CHECK(r.step_ps == Approx((8 + 3.0 / 2) * 3.0 * kMs));
    CHECK(step_lower_bound_ps(j) == Approx(r.step_ps));
}

TEST_CASE("job sim: a tensor-parallel all-reduce on the critical path adds its NCCL cost to every pass", "[sim][cluster]") {
    JobModel j = pipeline("1f1b", 1, 1, 2, 1.0, 2.0);
    j.tensor.ranks = 8, j.tensor.ranks_per_node = 8;
    for (auto& c : j.stages[0].chunks) c.forward.comm.push_back({Collective::AllReduce, CommScope::Tensor, 64e6});
    const double ar = collective_cost(Collective::AllReduce, 64e6, j.tensor).time_ps;
    const JobResult r = simulate_job(j);
    CHECK(r.step_ps == Approx(2 * (3.0 * kMs + ar)));
    CHECK(step_lower_bound_ps(j) == Approx(r.step_ps));  // one link, nothing queues
    CHECK(r.stages[0].exposed_comm_ps == Approx(2 * ar));
    REQUIRE(r.comm.size() == 1);
    CHECK(r.comm[0].count == 2);
}

TEST_CASE("job sim: gradient buckets overlap the last backward pass and only their tail is exposed", "[sim][cluster]") {
    JobModel j = pipeline("1f1b", 1, 1, 1, 1.0, 10.0);
    j.data.ranks = 4, j.data.ranks_per_node = 1;  // one GPU per node: the NIC
    j.stages[0].chunks[0].grad_bytes = 100e6;     // 4 buckets of 25 MiB
    const JobResult overlapped = simulate_job(j);
    const double one = collective_cost(Collective::AllReduce, j.bucket_bytes, j.data).time_ps;
    CHECK(step_lower_bound_ps(j) == Approx(11.0 * kMs));  // the overlapped buckets count nothing in the bound
    CHECK(step_lower_bound_ps(j) <= overlapped.step_ps);
    // the last bucket is ready as the backward ends and runs after it
    CHECK(overlapped.step_ps > 11.0 * kMs);
    CHECK(overlapped.step_ps < 11.0 * kMs + 2 * one);
    CHECK(overlapped.stages[0].exposed_comm_ps < overlapped.comm[0].time_ps);
}

TEST_CASE("job sim: a serving batch pipelined as pp microbatches keeps every stage busy", "[sim][cluster]") {
    // 2 stages, 2 microbatches, 1 ms per microbatch and stage, a prefill and 2 decode steps: the
    // first tokens after (pp + m - 1) ms, then each step takes m ms (the stages alternate)
    JobModel j = pipeline("1f1b", 2, 1, 2, 0, 0);
    j.inference = true;
    j.passes.assign(2, std::vector<PassCost>(3));
    for (auto& st : j.passes)
        for (auto& p : st) p.compute_ps = 1.0 * kMs;
    const JobResult r = simulate_job(j);
    REQUIRE(r.pass_end_ps.size() == 3);
    CHECK(r.pass_end_ps[0] == Approx(3.0 * kMs));
    CHECK(r.pass_end_ps[1] == Approx(5.0 * kMs));
    CHECK(r.pass_end_ps[2] == Approx(7.0 * kMs));
}

TEST_CASE("job sim: stages with unequal passes, point-to-point sends and a gradient all-reduce after the flush stay above the bound", "[sim][cluster]") {
    // a 3-stage 1F1B pipeline whose last stage is slower (an LM head), its sends on the network
    // and its data-parallel all-reduce after the flush; the tensor group on NVLink
    JobModel j = pipeline("1f1b", 3, 1, 6, 1.0, 2.0);
    j.stages[2].chunks[0].forward.compute_ps = 1.5 * kMs, j.stages[2].chunks[0].backward.compute_ps = 3.0 * kMs;
    j.tensor.ranks = 2, j.tensor.ranks_per_node = 2, j.tp = 2;
    j.p2p_bytes = 8e6, j.p2p_inter_node = true, j.p2p_inter = j.tensor.inter;
    j.data.ranks = 4, j.data.ranks_per_node = 1, j.dp_overlap = false;
    for (auto& st : j.stages) st.chunks[0].grad_bytes = 50e6, st.optimizer_ps = 0.5 * kMs;
    const double bound = step_lower_bound_ps(j);
    const JobResult r = simulate_job(j);
    CHECK(bound <= r.step_ps);
    // the slow stage's work and the gradient reduction are in it
    CHECK(bound >= (6 * 4.5 + 2 * 3.0 + 0.5) * kMs + collective_cost(Collective::AllReduce, 50e6, j.data).time_ps);
}
