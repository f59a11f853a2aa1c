#pragma once
// Gradient rules: the backward operators of one forward operator, with their exact costs.
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/graph/op_graph.h"

namespace archsim {

/// What a gradient rule works with: the forward graph's tensors, which of them need a gradient,
/// the gradient of each forward output, and the growing training graph it adds to.
class GradBuilder {
public:
    virtual ~GradBuilder() = default;
    /// A tensor of the training graph (the forward tensors keep their indices).
    virtual const Tensor& tensor(int32_t t) const = 0;
    /// Whether forward tensor `t` depends on a trained weight (or is one): autograd's requires_grad.
    virtual bool needs_grad(int32_t t) const = 0;
    /// The gradient of forward tensor `t` (summed over its consumers), or -1 when none reaches it.
    virtual int32_t grad(int32_t t) const = 0;
    /// A new gradient-sized tensor shaped `shape`, role Activation, float in `like`'s dtype.
    virtual int32_t new_tensor(const std::string& name, const std::vector<int64_t>& shape, const Tensor& like) = 0;
    /// Adds a backward operator (named "backward/..." by the rule).
    virtual void add(Operator op) = 0;
    /// Records tensor `g` as one part of the gradient of forward tensor `t`.
    virtual void contribute(int32_t t, int32_t g) = 0;
};

/// Sets `op`'s bytes read and written: each of its input and output tensors once (none for a
/// view, which moves nothing).
void count_bytes(Operator& op, const GradBuilder& b);

/// Adds the backward operators of forward operator `op` (whose outputs' gradients are known to
/// `b`) and contributes its inputs' gradients. Returns false when `op` has no gradient rule.
///
/// Costs, per class (MACs exact, vector operations per element as stated):
/// - contraction (each GEMM view m x n x k): the input gradient dA = dC B^T (m x k x n) where A
///   needs a gradient, the weight gradient dB = A^T dC (k x n x m, summed over a batch that
///   shares B) where B does, each as many MACs as the forward view; a convolution's views keep
///   their groups and implicit im2col (data gradient into X, weight gradient reading X in
///   place); a bias gradient is a reduction of dC (1 add per element); recurrent gate
///   arithmetic twice the forward's;
/// - elementwise: dX = dY * f'(.) per input needing a gradient, 1 to 8 operations per element by
///   operator (the table in grad_rules.cpp); Add and Sub pass dY through (Sub negates B's); a
///   broadcast input's gradient is reduced over the broadcast dims in the same kernel;
///   comparisons and logic have none;
/// - softmax: dX = Y (dY - sum(dY Y)), 4 per element; layer, instance and batch normalization:
///   dX 10 per element, dgamma and dbeta 3 (batch normalization's forward then also computes its
///   batch statistics: costed as layer normalization's 8 per element); reductions: dY broadcast
///   back (mean 1 per element, max/min 1 to select);
/// - pooling: max routes dY to each window's maximum (1 per output), average spreads it (the
///   forward's window operations); global pooling 1 per input element;
/// - data movement: the inverse copy (transpose, concat/split, pad/slice, depth/space), a
///   Gather's gradient a scatter-add into the table (1 add per gathered element, the dense table
///   gradient written), Expand/Tile a sum over the copies;
/// - dropout in training mode (a training_mode input): dY times the saved mask, 2 per element;
/// - views (reshape, flatten, squeeze, identity, inference dropout): a view of dY, no cost.
///
/// Each gradient operator reads only what its formula needs besides dY (PyTorch's autograd
/// formulas: relu, sigmoid, tanh and exp from their saved output, GELU from its input, Mul's dA
/// from B, softmax from its output, a contraction's dA from B and dB from A), so the forward
/// tensors it reads are exactly the activations a framework saves for the backward pass.
bool add_gradient(const Operator& op, GradBuilder& b);

}  // namespace archsim
