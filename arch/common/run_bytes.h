#pragma once
// Tensor sizes as a machine stores them in the run's precision.
#include <cstdint>

#include "sim/common/precision.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

/// Bytes of `t` on a machine running in `p`: float tensors (ONNX FLOAT, FLOAT16, DOUBLE,
/// BFLOAT16) take the run's operand size per element; integer and bool tensors keep their own.
inline int64_t run_bytes(const Tensor& t, Precision p) {
    const bool is_float = t.onnx_dtype == 1 || t.onnx_dtype == 10 || t.onnx_dtype == 11 || t.onnx_dtype == 16;
    return is_float ? t.elems() * operand_bytes(p) : t.bytes();
}

}  // namespace archsim
