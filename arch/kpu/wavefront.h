#pragma once
// Wavefront timing and fabric tiling of a contraction on a KPU, from the SURE of its loop nest.
// Pure functions: no SystemC, testable on their own.
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "arch/kpu/kpu_config.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

/// Cycles of one tile of work m x n x k (m <= R, n <= C) on an R x C PE array: the SURE
///   a(i,j,k) = a(i,j-1,k); b(i,j,k) = b(i-1,j,k); c(i,j,k) = c(i,j,k-1) + a(i,j,k) b(i,j,k)
/// under the linear schedule t = i + j + k reaches its last point at t = (R-1) + (C-1) + (k-1),
/// the operands entering and the results leaving through the full array edges:
/// k_steps + (R - 1) + (C - 1). An N x N x N matmul on an N x N array takes 3N - 2.
int64_t wavefront_cycles(int64_t k_steps, int64_t rows, int64_t cols);

/// `blocks` tiles of work streamed back to back through one array: each next wavefront enters
/// as the previous one moves on, so fill and drain are paid once: blocks * k_steps + (R-1) + (C-1).
int64_t pipelined_cycles(int64_t blocks, int64_t k_steps, int64_t rows, int64_t cols);

/// Reduction steps of a length-k dot product on a PE doing `macs_per_pe` MACs per cycle.
int64_t k_steps(int64_t k, double macs_per_pe);

/// One tile of work: output rows [bi*R, bi*R + m) and columns [bj*C, bj*C + n) of GEMM instance
/// `instance` (batch entry x group), the whole reduction k.
struct FabricBlock {
    int64_t instance = 0, bi = 0, bj = 0;
    int64_t m = 0, n = 0;
};

/// The order in which one pass's R x C output blocks are dealt to the tiles: the outer loops of
/// the domain-flow schedule, around the wavefront, which decide how long an operand panel waits
/// in L3 for its next use. `rows_outer`: the column blocks are cut into bands of `band` blocks;
/// band by band, the row blocks in order, each with the band's column blocks in order (a row's
/// A panel is used by a band's blocks back to back, a B panel once per row). `!rows_outer`:
/// the same with rows and columns swapped. A band of 0 (or of the whole dimension) is a plain
/// row-major (column-major) order; the default, row-major, is the fixed schedule
/// (`--mapper fixed`). Every instance (batch entry x group) is dealt whole before the next.
struct BlockOrder {
    bool rows_outer = true;
    int64_t band = 0;  ///< blocks per band along the inner dimension; 0 = all of them
    bool operator==(const BlockOrder& o) const { return rows_outer == o.rows_outer && band == o.band; }
};

/// How one pass of a GEMM (one repeat step) spreads over the fabric. The schedule: the output
/// matrix is cut into R x C blocks, one block per tile at a time (output stationary, the
/// reduction k streamed through the tile as the wavefront's third dimension); blocks of all
/// batch entries and groups are independent and dealt to the tiles in waves, in a BlockOrder
/// (row-major unless a mapping search chose another). A pass
/// uses min(blocks, tiles) tiles (the tiles that compute in the run's precision): a layer with
/// fewer blocks than tiles cannot use a larger fabric.
/// There is no split-K: a reduction is never spread over several tiles.
struct FabricPlan {
    int64_t row_blocks = 0, col_blocks = 0, instances = 0;
    int64_t blocks = 0, tiles_used = 0, waves = 0;
    int64_t k_cycles = 0;
    /// Cycles of all repeat steps with no memory stall: repeat * (waves * k_cycles + (R-1) + (C-1)
    /// + fill + drain); the waves of a pass pipeline on each tile, dependent repeat steps do not.
    int64_t ideal_cycles = 0;
};

FabricPlan plan_gemm(const GemmView& g, const KpuConfig& cfg);

/// The `index`-th block (0-based, over the instances) of one pass of `g` planned as `p`, dealt in
/// `order`: its instance, place and size.
FabricBlock block_of(const GemmView& g, const KpuConfig& cfg, const FabricPlan& p, int64_t index, const BlockOrder& order);

/// Wavefront cycles of wave `wi` of one pass planned as `p`: the reduction's k_cycles, plus the
/// skew (R-1) + (C-1) and the pipeline fill on the first wave and the drain on the last.
int64_t wave_compute_cycles(const FabricPlan& p, const KpuConfig& cfg, int64_t wi);

/// Calls `visit(wave, blocks)` for every wave of one pass of `g`, in order, the blocks dealt in
/// `order`.
void for_each_wave(const GemmView& g, const KpuConfig& cfg, const BlockOrder& order,
                   const std::function<void(int64_t, const std::vector<FabricBlock>&)>& visit);

/// The `index`-th block (0-based, within one instance) of a rows x cols block grid in `order`:
/// its (row block, column block).
std::pair<int64_t, int64_t> block_at(int64_t index, int64_t rows, int64_t cols, const BlockOrder& order);

/// Mean Manhattan distance between two tiles drawn uniformly from a rows x cols mesh:
/// (rows^2 - 1) / (3 rows) + (cols^2 - 1) / (3 cols).
double mean_mesh_hops(int64_t rows, int64_t cols);

}  // namespace archsim
