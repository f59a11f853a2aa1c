#pragma once
// A hand-made GEMM view for the mapping tests.
#include <cstdint>

#include "workloads/graph/op_graph.h"

namespace archsim::test {

/// An m x k by k x n GEMM whose A, B and C are tensors 0, 1 and 2 (all in memory), every A
/// element distinct.
inline GemmView gemm_view(int64_t m, int64_t n, int64_t k) {
    GemmView g;
    g.m = m, g.n = n, g.k = k;
    g.a_unique_elems = m * k;
    g.a.tensor = 0, g.b.tensor = 1, g.c.tensor = 2;
    return g;
}

}  // namespace archsim::test
