#pragma once
// Layout conversions a framework inserts around its fast library: PyTorch's frozen graph runs
// oneDNN-capable operators on tensors in oneDNN's blocked layout and everything else on plain
// (dense) tensors, so every tensor crossing between the two is copied by a to_mkldnn or to_dense
// kernel (torch.jit.optimize_for_inference, ConvertFrozenOpsToMKLDNN).
#include <vector>

#include "workloads/graph/op_graph.h"

namespace archsim {

/// The kernel graph `plan` with a conversion kernel (op_type "Reorder", a DataMovement copy that
/// reads and writes the whole tensor, no source operators) on every activation that crosses
/// between a kernel with `in_library[k]` set (blocked layout) and one without (plain layout),
/// one per tensor and direction, shared by every consumer that needs it. Views (ShapeOnly
/// kernels) keep their input's layout; the model's inputs arrive plain and its outputs leave
/// plain; weights are prepacked and never converted. The blocked layout's channel padding is not
/// counted (same bytes as the plain tensor). `in_library` is parallel to plan.ops().
OpGraph insert_layout_conversions(const OpGraph& plan, const std::vector<bool>& in_library);

}  // namespace archsim
