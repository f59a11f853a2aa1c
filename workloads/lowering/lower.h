#pragma once
// Runtime lowering: ONNX operator graph -> execution plan (the kernels a runtime launches), the
// stage between the workload and the machines. A kernel is an Operator whose `members` are the
// source operators it runs: its MACs and FLOPs are theirs summed, its bytes only what crosses
// the kernel's boundary.
#include "workloads/graph/op_graph.h"
#include "workloads/lowering/fusion_groups.h"
#include "workloads/lowering/runtime_profile.h"

namespace archsim {

/// The kernel graph of `groups` over `graph`: one Operator per group (name of its contraction or
/// first operator, op_type from kernel_pattern()), reading the tensors produced outside the group
/// and writing those read outside it (or read by nothing: the model's outputs). A contraction
/// kernel keeps its GEMM views with the operands followed through folded views and transposes to
/// the tensors the kernel really reads, and C to the tensor its epilogue writes.
OpGraph build_kernels(const OpGraph& graph, const FusionGroups& groups, const std::string& runtime);

/// Applies `runtime`'s passes to `graph` (epilogues, then vector regions, then layouts) and
/// builds the kernel graph. Call only for a profile that is not literal() (a literal runtime
/// runs the graph as it is).
OpGraph lower(const OpGraph& graph, const RuntimeProfile& runtime);

}  // namespace archsim
