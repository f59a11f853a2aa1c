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
    /// Activation recomputation: "none" (every activation the backward pass reads is saved),
    /// "selective" (the attention scores, softmax and dropout between two activation-by-activation
    /// matmuls are recomputed: Korthikanti et al., MLSys 2023, section 4.2) or "full" (only the
    /// inputs of checkpointed segments are saved and each segment's forward runs again just
    /// before its backward: Chen et al., arXiv:1604.06174, 2016; Megatron-LM's full recompute).
    std::string recompute = "none";
    /// Gradient accumulation: forward and backward run this many times (each on a microbatch of
    /// the model's batch), the weight gradients summed, then one optimizer step.
    int64_t microbatches = 1;
    /// Mixed precision (a run below fp32): the optimizer keeps fp32 master weights and fp32
    /// moments (Micikevicius et al., ICLR 2018), read and written in fp32 whatever the run's
    /// operand precision; false: the state is kept in the weights' precision and no master copy.
    bool mixed_precision = false;
    /// Also the one-time setup before the first step (named "setup/...", stage 4, run first):
    /// every parameter written by its initializer, the optimizer state zeroed (fp32 master
    /// weights copied from the parameters), and the step's synthetic inputs and labels drawn;
    /// what an MLP profiling script does before it times a step.
    bool setup = false;
};

/// The values TrainingOptions accepts for `optimizer`, `loss` and `recompute`, as its docs list
/// them: the command line and workload files check against these lists.
const std::vector<std::string>& optimizer_names();  ///< sgd, momentum, adam, adamw
const std::vector<std::string>& loss_names();       ///< auto, cross_entropy, mse
const std::vector<std::string>& recompute_names();  ///< none, selective, full

/// What a tensor of a training step holds, for its memory footprint (memory_footprint.h).
/// Activations are split into saved activations and workspace by their lifetimes.
enum class MemoryCategory : uint8_t {
    Weights,         ///< trained parameters and the model's constant buffers
    Gradients,       ///< the weight gradient buffers (allocated for the whole step)
    OptimizerState,  ///< moments, momentum and fp32 master weights
    Activations,     ///< everything else: forward values, activation gradients, inputs, the loss
};

/// "setup", "forward", "loss", "backward", "recompute", "optimizer" (TrainingPhase, op_graph.h:
/// every operator of a step carries its own; its name's prefix says the same to a reader).
const char* to_string(TrainingPhase p);

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
    std::string recompute = "none";  ///< as in TrainingOptions
    int64_t microbatches = 1;        ///< as in TrainingOptions
    int64_t recompute_macs = 0;      ///< MACs of the recomputed forward operators (hardware, not model, work)
    bool mixed_precision = false;    ///< as in TrainingOptions
    bool setup = false;              ///< as in TrainingOptions: the graph starts with the setup operators
    /// Per tensor of `graph`: what it holds.
    std::vector<MemoryCategory> category{};
    /// Per tensor of `graph`: the tensor whose buffer it is written into (an in-place update: the
    /// optimizer's updated weights and state, an accumulated gradient, the fused cross-entropy's
    /// gradient written over the logits), or itself.
    std::vector<int32_t> storage{};
};

/// Builds one training step of `forward`: its operators, a loss on its output (labels as a new
/// model input), the gradient of every tensor that depends on a trained weight (autograd's
/// requires_grad: a model input gets none), gradients of a tensor read by several operators
/// summed, and one optimizer update per weight. Gradient costs per operator class are in
/// grad_rules.h. With recomputation, copies of the recomputed forward operators (stage 2, named
/// "recompute/...") run just before the first backward operator that reads one of their
/// outputs, and the backward operators read the copies. With microbatches, every forward, loss
/// and backward operator runs once per microbatch (names suffixed "#mb<k>" from the second),
/// each later microbatch's weight gradients added into the first's in place. With setup, the
/// setup operators come first (see TrainingOptions::setup and setup_rule). Throws
/// UserError(source, ...) naming the first operator without a gradient rule (unless allowed), a
/// bad option, or a graph with no trained weight or no output.
TrainingStep make_training_step(const OpGraph& forward, const TrainingOptions& options);

}  // namespace archsim
