#pragma once
// Recognises a causal attention mask among a model's constants by its values.
#include <onnx/onnx_pb.h>

namespace archsim {

/// True when `t` is a causal mask over its last two dims [q, kv] (q <= kv, the queries being the
/// last q of the kv positions): a boolean or integer tensor true exactly where j > i + (kv - q)
/// (the positions masked out, as Where(mask, -inf, scores) takes it) or exactly where it is not
/// (the positions kept), or a float additive mask that is 0 where kept and <= -1000 where masked.
/// Leading dims must be 1. Only tensors of at most 2^24 elements with inline data are read. A
/// boolean tensor of that shape whose values are not in the file (external data: a shape-only
/// export such as ../shared/models) is taken as causal: the constant boolean masks transformer
/// exports carry (torch.onnx for GPT-2 and LLaMA-style decoders) are causal masks; padding masks
/// are graph inputs, not constants. Anything else is not a causal mask. Never throws.
bool is_causal_mask(const onnx::TensorProto& t);

}  // namespace archsim
