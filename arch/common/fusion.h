#pragma once
// Graph facts the machine models share: which elementwise operators fuse into their producer's
// epilogue, and which contractions are too thin for a blocked GEMM.
#include "workloads/graph/op_graph.h"

namespace archsim {

/// True when `op` is elementwise and its first input is the only-consumed output of a
/// contraction or of another elementwise operator (itself fused or not): the framework runs it in
/// that kernel's epilogue (TensorRT and cuDNN epilogues, oneDNN post-ops).
inline bool fuses_into_producer(const Operator& op, const OpGraph& g) {
    if (op.cost.cls != OpClass::Elementwise || op.inputs.empty()) return false;
    const int32_t in = op.inputs[0];
    if (in < 0 || g.consumer_count(in) != 1) return false;
    const int32_t prod = g.producer(in);
    if (prod < 0 || fusion_stage(g.ops()[static_cast<size_t>(prod)].phase) != fusion_stage(op.phase)) return false;
    const OpClass cls = g.ops()[static_cast<size_t>(prod)].cost.cls;
    return cls == OpClass::Contraction || cls == OpClass::Elementwise;
}

/// True for depthwise and other grouped convolutions with fewer than 8 filters per group: too
/// little work per input element for tensor-core tiles or a blocked GEMM; cuDNN and oneDNN run
/// them as bandwidth-bound direct kernels.
inline bool is_thin_grouped_conv(const Operator& op) {
    for (const auto& g : op.cost.gemms)
        if (g.groups > 1 && g.n < 8) return true;
    return false;
}

}  // namespace archsim
