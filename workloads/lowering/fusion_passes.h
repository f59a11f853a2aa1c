#pragma once
// The lowering passes: each merges groups of operators (FusionGroups) by graph structure alone,
// never by operator names, the way deployed runtimes form kernels:
// - epilogues: a contraction takes the elementwise operators that consume its output (bias,
//   batch-norm, activation, residual add) into its epilogue, as TensorRT/cuDNN epilogues and
//   oneDNN post-ops do;
// - vector regions: connected elementwise and reduction operators become one kernel (loop and
//   input fusion, as XLA and TensorRT's pointwise fusion do), so LayerNorm, RMSNorm, GELU, SiLU
//   and scaled, masked Softmax each read their input once and write their output once;
// - layouts: a transpose or slice whose result only feeds a contraction, or an elementwise or
//   reduction operator, is folded into that consumer's kernel (the GEMM reads its operand in
//   place with other strides or an offset; a vector kernel reads through the permuted index).
#include <string>
#include <vector>

#include "workloads/lowering/fusion_groups.h"

namespace archsim {

/// Whether `o` only re-indexes its input (a view: Reshape, Squeeze, ...; a Transpose: other
/// strides; a Slice or a Split: offsets; an Expand: a broadcast, stride 0, as PyTorch's expand
/// view and GQA's repeat_kv), so a fused kernel can read through it in place.
bool is_layout_view(const Operator& o);

/// Merges each attention block into one kernel: a contraction of two activations (Q K^T), the
/// elementwise operators of its output's size after it (scale, mask), a Softmax, and the
/// contraction that takes the softmax as its A operand with another activation (P V); with the
/// elementwise operator that scales Q or K on the way in, when only this block reads it; in a
/// training step, with the dropout on the probabilities before P V. A training step's backward
/// reads the block's saved scores (softmax output, dropout mask): there the block fuses only
/// when those readers, with the score-sized gradients between them, form the block's backward
/// (the gradient GEMMs of P V, the dropout, softmax and scale gradients, the gradient GEMMs of
/// Q K^T: four contractions), which becomes one kernel too (pattern AttentionGrad), as
/// FlashAttention's backward recomputes the scores from Q, K and the softmax statistics instead
/// of reading them (Dao, "FlashAttention-2", 2023, algorithm 2). Otherwise the forward stays
/// unfused, its scores saved.
void fuse_attention(FusionGroups& groups);

/// Merges the contractions that multiply one activation by different weights with the same M,
/// K and batch (the Q, K and V projections of an attention layer; a SwiGLU's gate and up
/// projections) into one kernel: one GEMM over the concatenated weights, N the sum of theirs,
/// as TensorRT and XLA merge them (horizontal fusion).
void merge_projections(FusionGroups& groups);

/// Merges into each contraction the elementwise operators that consume its output (or another
/// operator already in its epilogue) and produce a tensor of the contraction's output size,
/// except one whose result only reductions read (RMSNorm's x^2 belongs to the norm's kernel).
/// `allowed_op_types` limits which operator types an epilogue takes (empty = every elementwise
/// operator); operators a merge would put on a cycle stay out.
void fuse_epilogues(FusionGroups& groups, const std::vector<std::string>& allowed_op_types);

/// Merges each connected set of elementwise operators that computes a unary function of one
/// tensor (every activation input is that tensor or an output of the set, all of its size) into
/// one kernel: the framework's native activation the exporter decomposed (SiLU x * sigmoid(x),
/// GELU in its erf and tanh forms, HardSwish, Mish). A product of two different tensors (a
/// squeeze-excitation scale, a residual add) stays out.
void fuse_activations(FusionGroups& groups);

/// Merges each elementwise or reduction operator outside the contraction kernels with the
/// producers of its inputs that are elementwise or reduction operators too, except across an
/// edge whose (producer, consumer) op types are in `separate`.
void fuse_vector_regions(FusionGroups& groups, const std::vector<std::pair<std::string, std::string>>& separate = {});

/// Folds each Transpose, Slice, Split or Expand whose outputs, through views (Reshape, Squeeze, ...) and
/// further transposes or slices, each feed one contraction operand, or one elementwise or
/// reduction operator, all of the same kernel (a Split of Q, K and V: the attention kernel), into
/// that kernel: the GEMM reads the tensor in place with other strides or an
/// offset, a vector kernel through the permuted index (no copy kernel, no extra bytes).
void fold_layouts(FusionGroups& groups);

/// What a fused kernel is, where lowering treats it apart: a fused attention block's forward
/// (Q K^T, softmax, P V: fuse_attention) or backward kernel, or any other kernel.
enum class KernelKind { Attention, AttentionGrad, Other };

/// A kernel's kind and the name it is reported by (its op_type).
struct KernelPattern {
    KernelKind kind = KernelKind::Other;
    std::string name;
};

/// The pattern of the kernel made of `members` (operator indices of `graph`, topological order),
/// from its structure: named "Attention" (KernelKind::Attention), "AttentionGrad"
/// (KernelKind::AttentionGrad), "LayerNorm", "RMSNorm", "Softmax", "GELU", "SiLU",
/// "<contraction>+<epilogue parts>", or "Fused(<n> ops)"; a lone operator keeps its op_type.
KernelPattern kernel_pattern(const OpGraph& graph, const std::vector<int32_t>& members);

}  // namespace archsim
