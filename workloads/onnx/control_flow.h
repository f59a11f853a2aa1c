#pragma once
// Control flow (If, Loop, Scan) replaced by the operators it runs, once its decision is known at
// import: the taken branch of an If, a Loop's body unrolled over its trip count, a Scan's body
// unrolled over its sequence. ONNX's shape inference then sees a flat graph with every
// iteration's shapes.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workloads/onnx/const_fold.h"
#include "workloads/onnx/unroller.h"

namespace archsim {

/// Replaces in `model`'s main graph each If whose condition is a known constant in `consts`, each
/// Loop whose trip count M (and initial condition) are known constants, and each Scan whose
/// sequence length is static in `shapes`, by the nodes it runs: the body's nodes renamed
/// "<node>/then/...", "<node>/iter<i>/...", with Gather (a Scan's slice per step), Unsqueeze and
/// Concat (scan outputs stacked) and Identity (the node's outputs) nodes around them. A Loop whose
/// body computes its own condition may stop early: it is unrolled to M, an upper bound, said in
/// `notes`. With `final_pass`, an If whose condition is still unknown has both branches run (its
/// outputs from the then-branch), an upper bound said in `notes`. `opset`: the model's default-
/// domain opset (Unsqueeze's axes form). Returns the number of control-flow nodes replaced.
/// Throws UserError (naming `file` and the node) for an unroll beyond kMaxUnrolledNodes or a
/// malformed node.
int64_t inline_control_flow(onnx::ModelProto& model, const std::map<std::string, ConstTensor>& consts, const ShapeMap& shapes,
                            int64_t opset, bool final_pass, std::vector<std::string>& notes, const std::string& file);

}  // namespace archsim
