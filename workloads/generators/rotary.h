#pragma once
// The "rotary_encoder" workload family.
#include <cstdint>

namespace onnx {
class ModelProto;
}

namespace archsim {

class GeneratorArgs;

/// A pre-LN transformer encoder with rotary position embeddings (RoFormer: Su et al.,
/// arXiv:2104.09864, 2021, eq. 34; the rotate-half form of GPT-NeoX and Hugging Face's
/// apply_rotary_pos_emb): per layer LayerNorm, q, k, v projections (with biases), q and k each
/// rotated as x cos + rotate_half(x) sin (rotate_half: Slice the two halves of the head
/// dimension, Neg, Concat), softmax(q k^T / sqrt(head_dim)) v over all positions, the output
/// projection and a residual; LayerNorm, a feed-forward of `ffn` (default 4 x d_model) with
/// `activation` (gelu | relu, default gelu) and a residual; a final LayerNorm (all decomposed
/// into ONNX primitives, opset 13). Fields: `layers`, `d_model`, `heads` (dividing d_model into
/// an even head dimension), `ffn`, `sequence`, `classes` (default 0; > 0: a Linear layer per
/// token to `classes`, a masked-language-model head). Inputs: the embedded tokens [batch,
/// sequence, d_model], then the rotation tables rope_cos and rope_sin [sequence, head_dim]
/// (buffers computed from the positions, not trained). Output [batch, sequence, d_model or
/// classes].
void build_rotary_encoder(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

}  // namespace archsim
