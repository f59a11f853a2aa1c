#pragma once
// Runtime lowering: ONNX operator graph -> execution plan (the kernels a runtime launches), the
// stage between the workload and the machines. A kernel is an Operator whose `members` are the
// source operators it runs: its MACs and FLOPs are theirs summed, its bytes only what crosses
// the kernel's boundary.
#include <vector>

#include "workloads/graph/op_graph.h"
#include "workloads/lowering/fusion_groups.h"
#include "workloads/lowering/runtime_profile.h"

namespace archsim {

/// The kernel graph of `groups` over `graph`: one Operator per group (name of its contraction or
/// first operator, op_type from kernel_pattern()), reading the tensors produced outside the group
/// and writing those read outside it (or read by nothing: the model's outputs). A contraction
/// kernel keeps its GEMM views with the operands followed through folded views and transposes to
/// the tensors the kernel really reads, and C to the tensor its epilogue writes.
/// `kernel_groups`, when given, receives each kernel's group (a member operator's index), in
/// kernel order.
OpGraph build_kernels(const OpGraph& graph, const FusionGroups& groups, const std::string& runtime,
                      std::vector<int32_t>* kernel_groups = nullptr);

/// Applies `runtime`'s passes to `graph` (attention, projections, epilogues, activations, vector
/// regions, layouts), builds the kernel graph and, when the profile asks for them, inserts the
/// layout conversions around its library's kernels (layout_conversions.h; a kernel is the
/// library's when every operator in it that computes is of a `library.ops` type, or its pattern
/// is listed there). In a run at `precision` where the profile's BLAS takes its ops
/// (RuntimeProfile::blas_at), a kernel whose contraction is of a `blas.ops` type (and is not the
/// library's), or a small convolution under `blas.conv_max_input_elems` (PyTorch's native im2col +
/// GEMM path), is marked Operator::blas, on `blas.threads` threads. Call only for a profile
/// that is not literal() (a literal runtime runs the graph as it is).
OpGraph lower(const OpGraph& graph, const RuntimeProfile& runtime, const std::string& precision = "fp32");

}  // namespace archsim
