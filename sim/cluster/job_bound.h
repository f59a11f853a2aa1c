#pragma once
// A lower bound on a training job's step, without simulating it: what the parallel-plan
// search (sim/api/plan_search.cpp) prunes and orders plans by.
#include "sim/cluster/job_model.h"

namespace archsim {

/// A lower bound on the step simulate_job gives `job` (a training job; ps), from the same model
/// without its contention: each pass costs its compute plus its collectives at collective_cost
/// (the simulator runs them on the critical path, and only adds link queueing), each
/// point-to-point message its send/recv (and the receiving node's gather under scatter/gather).
/// Stage s runs its schedule's passes and sends one after another; it cannot start before the
/// first microbatch's forward of chunk 0 has passed stages 0..s-1, and stage 0's last backward
/// (chunk 0 of the last microbatch) cannot end before that microbatch's backward has come back
/// from stage s. So the step is at least, over s, that forward path + stage s's work + the
/// backward path to stage 0 + stage 0's tail (its gradient reduction when not overlapped, the
/// tied-embedding all-reduce, the optimizer, ZeRO's parameter all-gather), and each stage's own
/// start + work + tail. Gradient buckets overlapped with the backward count nothing. Throws
/// std::invalid_argument for an inference job or a schedule the model's stages do not match.
double step_lower_bound_ps(const JobModel& job);

}  // namespace archsim
