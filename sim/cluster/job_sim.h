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
/// With `trace_path`, the run is also written as an archsim trace (traces/README.md) at `detail`:
/// per stage a compute component ("stage<r>": its passes as operator spans "forward",
/// "backward", "optimizer", "prefill", "decode" with their MACs, and stalls by cause:
/// pipeline_bubble, tensor_comm, pipeline_comm, data_comm, embedding_comm) and its two link
/// components ("stage<r>.nvlink", level link.intra; "stage<r>.nic", level link.inter: every
/// transfer, hidden or not, as a span), on a 1 GHz reference clock (a stall's cycles are ns);
/// root attribute `job_summary` holds the split the CLI prints. `trace export --perfetto` then
/// draws a lane per device and per link, `trace summary` the bubble and the overlap.
JobResult simulate_job(const JobModel& job, const std::string& trace_path = "", const std::string& detail = "full");

}  // namespace archsim
