#pragma once
// The "kernel" workload family: one operator alone, as a microbenchmark times it.
#include <cstdint>

namespace onnx {
class ModelProto;
}

namespace archsim {

class GeneratorArgs;

/// Builds one operator on graph inputs, the shape a kernel microbenchmark times
/// (tools/validate_kernels.py: LLMCompass's A100 kernels, FlashAttention-2's benchmark). `op`
/// (required) is one of:
/// - `matmul`: `m`, `n`, `k` (required): a MatMul of two inputs, [m, k] x [k, n], as
///   torch.matmul of two tensors (no weight, no bias); 2 m n k FLOPs.
/// - `softmax`, `layernorm`: `m` rows, `n` columns (required), over the last axis: a Softmax, or
///   a LayerNormalization (opset 17) with a scale and shift of n elements each (their reads are
///   negligible beside the m x n input's).
/// - `gelu`: `m` elements (required), 1-D, GELU as torch.onnx exports it (Div, Erf, Add, Mul,
///   Mul; a runtime with native activations runs it as one kernel).
/// - `attention`: `hidden`, `heads` (required; heads divides hidden), `sequence` (required),
///   `causal` (default false): self-attention softmax(Q K^T / sqrt(d)) V over [batch, sequence,
///   hidden] with Q, K and V each the input scaled by its own learned per-channel weight of
///   `hidden` elements (an elementwise Mul, not a projection GEMM: a training step then has
///   gradients for Q, K and V, as FlashAttention's benchmark asks for them, while its other
///   kernels stay elementwise and small beside the attention's); the causal mask is a [1, 1, s, s] boolean initializer stored as
///   external data (never materialized: 16k x 16k would be 256 MiB), which the importer takes
///   as causal by its shape and type (workloads/onnx/causal_mask.h).
/// A leading `batch` axis is added when batch > 1 (attention always has one). Errors: a missing
/// or non-positive field, an unknown `op`, heads not dividing hidden: UserError naming the field.
void build_single_kernel(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

}  // namespace archsim
