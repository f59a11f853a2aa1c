#pragma once
// How a small operand of an elementwise kernel repeats over its output (numpy broadcasting).
#include <cstddef>
#include <cstdint>

#include "workloads/graph/op_graph.h"

namespace archsim {

/// The number of output elements after which input `in`'s values repeat when it is broadcast
/// to output `out` under numpy/ONNX rules (shapes right-aligned), when they repeat that way:
/// in.elems() where `in`, after its leading 1s, equals `out`'s trailing dims (a bias over the
/// last dims, a scale, a scalar: every stretch of that many consecutive output elements reads
/// all of `in`). 0 where `in` varies along a dim ahead of a broadcast one (a row statistic such
/// as LayerNorm's mean, [N, 1] against [N, C]), where it is as large as `out`, or where the
/// shapes do not broadcast.
inline int64_t broadcast_period(const Tensor& in, const Tensor& out) {
    if (in.elems() >= out.elems() || in.shape.size() > out.shape.size()) return 0;
    const size_t off = out.shape.size() - in.shape.size();
    size_t first = 0;  // in's first dim other than 1
    while (first < in.shape.size() && in.shape[first] == 1) ++first;
    for (size_t d = first; d < in.shape.size(); ++d)
        if (in.shape[d] != out.shape[off + d]) return 0;
    return in.elems();
}

}  // namespace archsim
