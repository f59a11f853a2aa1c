#pragma once
// The "transformer_encoder" workload family.
#include <cstdint>

namespace onnx {
class ModelProto;
}

namespace archsim {

class GeneratorArgs;

/// A stack of transformer encoder layers as torch.onnx exports nn.TransformerEncoderLayer
/// (post-LN, sequence-first inside the attention, in_proj MatMul + bias, three Slices, scaled
/// dot-product attention per head, out_proj Gemm, LayerNorm and erf-GELU decomposed into ONNX
/// primitives): `layers`, `d_model`, `heads` (dividing d_model), `ffn` (feed-forward width),
/// `sequence` (tokens), `activation` (gelu | relu, default gelu), `batch`; input [batch,
/// sequence, d_model], already embedded. With the shapes of ../shared/models/bert_like_encoder.onnx
/// (6 layers, d_model 512, 8 heads, FFN 2048, 128 tokens) every operator equals that export's.
/// `style = "gpt2"` builds GPT-2 blocks instead, as Hugging Face's GPT2Block exports them (pre-LN,
/// fused c_attn and a Split, causal mask by Where, tanh-GELU, a final LayerNorm; batch-first):
/// with 12 layers, d_model 768, 12 heads, FFN 3072 and 256 tokens every operator equals
/// ../shared/models/gpt2_small_stack.onnx's.
void build_transformer_encoder(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

}  // namespace archsim
