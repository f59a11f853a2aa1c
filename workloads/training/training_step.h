#pragma once
// A training step built from a forward operator graph: forward, loss, backward, optimizer.
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/graph/op_graph.h"

namespace archsim {

/// How a training step is built (archsim run --train).
struct TrainingOptions {
    /// "auto" (cross-entropy when the output's last dim holds >= 2 classes, else MSE),
    /// "cross_entropy" or "mse".
    std::string loss = "auto";
    /// "sgd", "momentum" (SGD with momentum), "adam" or "adamw".
    std::string optimizer = "sgd";
    /// Operators without a gradient rule: false = a UserError naming them; true = the step runs
    /// them forward only (no gradient flows through them), listed in TrainingStep::no_gradient.
    bool allow_unsupported = false;
};

/// The phase of a training step an operator belongs to, from its name (training_step names
/// every operator it adds "loss/...", "backward/..." or "optimizer/..."; the others are forward).
enum class TrainingPhase : uint8_t { Forward, Loss, Backward, Optimizer };
/// "forward", "loss", "backward", "optimizer".
const char* to_string(TrainingPhase p);
/// The phase of the operator (or a runtime kernel whose first member is the operator) `name`.
TrainingPhase training_phase(const std::string& name);

/// A training step and what it is made of.
struct TrainingStep {
    OpGraph graph;                ///< forward operators, the loss, the backward operators, the optimizer's
    std::string loss;             ///< "cross_entropy" or "mse"
    std::string optimizer;        ///< as in TrainingOptions
    int64_t samples = 0;          ///< samples per step: dim 0 of the first model input
    int64_t tokens = 0;           ///< tokens per step when that input is [batch, sequence] token ids, else 0
    int64_t params = 0;           ///< trained parameters (elements of every Weight tensor)
    int64_t forward_macs = 0;     ///< MACs of the forward operators
    int64_t backward_macs = 0;    ///< MACs of the gradient operators
    /// Operators with no gradient rule that ran forward only (TrainingOptions::allow_unsupported).
    std::vector<std::string> no_gradient;
};

/// Builds one training step of `forward`: its operators, a loss on its output (labels as a new
/// model input), the gradient of every tensor that depends on a trained weight (autograd's
/// requires_grad: a model input gets none), gradients of a tensor read by several operators
/// summed, and one optimizer update per weight. Gradient costs per operator class are in
/// grad_rules.h. Throws UserError(source, ...) naming the first operator without a gradient rule
/// (unless allowed), a bad option, or a graph with no trained weight or no output.
TrainingStep make_training_step(const OpGraph& forward, const TrainingOptions& options);

}  // namespace archsim
