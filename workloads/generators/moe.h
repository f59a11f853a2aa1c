#pragma once
// A sparsely gated mixture-of-experts layer, shared by the "llm" (moe) family, and the "moe_mlp"
// workload family.
#include <cstdint>
#include <functional>
#include <string>

#include "workloads/generators/onnx_builder.h"

namespace onnx {
class ModelProto;
}

namespace archsim::gen {

/// One expert on its share of rows: (emitter, rows [per, d], weight prefix) -> [per, d].
using ExpertBuilder = std::function<std::string(Emitter&, const std::string&, const std::string&)>;

/// Top-k gating over `experts` experts (Shazeer et al., ICLR 2017; Mixtral's router, Jiang et
/// al. 2024): router logits x Wg (`w`.gate.weight [d, experts], no bias), Softmax, TopK of
/// `top_k`; the `rows` x `top_k` routed rows go to the experts in balanced shares of
/// ceil(rows x top_k / experts) rows (a Slice of x per expert stands for the dispatch, which
/// moves as many rows; experts beyond rows x top_k stay idle, their weights in the model and
/// unread), each share through `expert` (weights `w`.experts.<i>), the shares concatenated, and
/// each row's top_k outputs weighted by its router probabilities (Mul) and summed (ReduceSum).
/// `x` is [rows, d]; returns [rows, d]. Balanced shares are the routing a load-balancing loss
/// aims at; a skewed routing is not modeled.
std::string moe_layer(Emitter& e, const std::string& x, const std::string& w, int64_t rows, int64_t d, int64_t experts, int64_t top_k,
                      const ExpertBuilder& expert);

}  // namespace archsim::gen

namespace archsim {

class GeneratorArgs;

/// A mixture-of-experts MLP: a Linear embedding from `input` features to `width`, `layers`
/// residual MoE layers (x + moe_layer(x)) of `experts` experts (each Linear width -> `ffn`
/// (default 4 x width), `activation` (relu | gelu, default relu), Linear back; with biases, as
/// Shazeer et al.'s experts) under top-`top_k` gating (default 2), and a Linear head to `output`
/// features (default `input`). Input [batch, input], output [batch, output]. The auxiliary
/// load-balancing loss is not built.
void build_moe_mlp(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

}  // namespace archsim
