#pragma once
// The job simulator: one SystemC simulation of a parallel training step over every pipeline
// stage of a job, its links and its collectives.
#include "sim/cluster/job_model.h"

namespace archsim {

/// Simulates one training iteration of `job`: one SystemC process per pipeline stage runs its
/// stage's ops in the schedule's order (sim: workloads/parallel/pipeline_schedule.h), waiting
/// for the previous stage's activations (or the next one's gradients), each pass its compute
/// slices and its collectives; one more process per stage all-reduces the data-parallel gradient
/// buckets as the last backward pass produces them (job.dp_overlap), or the stage reduces them
/// after the flush; then the tied-embedding sync and the optimizer. Every transfer is a TLM
/// transaction on the sending device's Link (arch/interconnect/link.h): its NVLink port or its
/// NIC share, each serializing what the stage's passes, its point-to-point messages and its
/// gradient buckets put on it (contention). A collective's size-independent latency and its
/// algorithm come from the NCCL cost model (collective_model.h). SystemC's kernel cannot be
/// reset: call once per process (std::logic_error otherwise). Throws std::invalid_argument for
/// a model whose stages, chunks or schedule do not agree.
JobResult simulate_job(const JobModel& job);

}  // namespace archsim
