#pragma once
// Tensor sizes as a machine stores them in the run's precision.
#include <cstdint>

#include "sim/base/precision.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

/// Bytes of `t` on a machine running in `p`: float tensors (ONNX FLOAT, FLOAT16, DOUBLE,
/// BFLOAT16) take the run's operand size per element; integer and bool tensors, and those marked
/// Tensor::keeps_dtype (a mixed-precision optimizer's fp32 state), keep their own.
inline int64_t run_bytes(const Tensor& t, Precision p) { return t.bytes_at(operand_bytes(p)); }

/// Bytes `op` reads of its input tensor `t` on a machine running in `p`: run_bytes() of the
/// tensor, or of only the elements it supplies when op.cost.read_elems says fewer (a Gather's
/// table).
inline int64_t read_bytes(const Operator& op, int32_t t, const Tensor& tensor, Precision p) {
    for (size_t i = 0; i < op.inputs.size() && i < op.cost.read_elems.size(); ++i)
        if (op.inputs[i] == t && op.cost.read_elems[i] >= 0 && op.cost.read_elems[i] < tensor.elems())
            return tensor.elems() > 0 ? run_bytes(tensor, p) / tensor.elems() * op.cost.read_elems[i] : 0;
    return run_bytes(tensor, p);
}

}  // namespace archsim
