#pragma once
// Maps a GEMM onto an R x C systolic array as SCALE-Sim v2 does: roles per dataflow, folds, and
// the per-fold cycle formula. Pure functions: no SystemC, testable on their own.
#include <cstdint>
#include <functional>

#include "arch/tpu/tpu_config.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

/// SCALE-Sim v2's view of one GEMM (m x k by k x n) on an R x C array
/// (scalesim/compute/systolic_compute_{os,ws,is}.py):
///   OS: Sr = M, Sc = N, T = K.   WS: Sr = K, Sc = N, T = M.   IS: Sr = K, Sc = M, T = N.
///   folds = ceil(Sr / R) * ceil(Sc / C);
///   cycles per fold: OS T + R + C - 2 (fill, stream, drain through both edges);
///                    WS and IS 2R + C + T - 2 (R to preload the stationary operand, then as OS),
///   with R and C the full array even for partly filled edge folds; folds do not overlap.
struct FoldGeometry {
    int64_t sr = 0, sc = 0, t = 0;
    int64_t row_folds = 0, col_folds = 0;
    int64_t cycles_per_fold = 0;
    int64_t folds() const { return row_folds * col_folds; }
    /// SCALE-Sim's reported layer total: the index of the last cycle, folds * per_fold - 1.
    int64_t scalesim_total_cycles() const { return folds() * cycles_per_fold - 1; }
};

/// Computes the geometry; m, n, k >= 1 (std::invalid_argument otherwise: a programming error).
FoldGeometry fold_geometry(Dataflow df, int64_t rows, int64_t cols, int64_t m, int64_t n, int64_t k);

/// Which on-chip buffer a tile lives in.
enum class Buffer : uint8_t { Ifmap = 0, Filter = 1, Ofmap = 2 };

/// One operand tile a fold needs in a buffer. `key` names the tile's data: a tile with the same
/// key is the same data and hits if still resident. Uncacheable tiles (partial sums read back)
/// always come from DRAM.
struct TileLoad {
    uint64_t key = 0;
    int64_t dram_bytes = 0;   ///< bytes fetched from DRAM on a miss
    Buffer buffer = Buffer::Ifmap;
    bool cacheable = true;
    /// Nonzero: data this operator wrote to DRAM itself (a spilled partial sum, spilled scores),
    /// under this data id (DataReady): read only after the previous item retired, once that write completed.
    uint64_t after = 0;
};

/// The work of one fold: compute, operand tiles, array-side buffer traffic and DRAM writes.
struct FoldWork {
    int64_t cycles = 0;
    int64_t macs = 0;
    TileLoad loads[3];
    int n_loads = 0;
    int64_t dram_write_bytes = 0;       ///< outputs or spilled partial sums, written at fold end
    uint64_t write_id = 0;              ///< data id of that write when this operator reads it back (TileLoad::after); 0: not read back
    int64_t sram_read_bytes[3] = {0, 0, 0};   ///< by Buffer, array side
    int64_t sram_write_bytes[3] = {0, 0, 0};  ///< by Buffer, array side
};

/// How for_each_fold() walks one GEMM's folds within its dataflow: the loop order of the two
/// fold loops and the tile of the streamed dimension, the part of a mapping a dataflow leaves
/// open (Timeloop's loop permutation and temporal tiling at the array's buffers). The default is
/// SCALE-Sim's walk, which every config that names its dataflow keeps.
struct FoldNest {
    /// OS: false walks the column folds (N) inside each row fold (M), an A row tile kept while
    /// B's column tiles go by; true walks the row folds inside each column fold, a B column tile
    /// kept. WS and IS: false keeps the reduction's row folds (K) innermost, so one column
    /// fold's partial sums live in the ofmap buffer until done; true puts the reduction
    /// outermost, each row fold's streamed tile reused by every column fold while every
    /// column's partial sums live at once (spilled to DRAM and read back when they do not fit).
    bool swapped = false;
    /// WS and IS: the streamed dimension T (M for WS, N for IS) in this many chunks of
    /// ceil(T / chunks), each its own pass over the array with its own preload
    /// (2R + C + chunk - 2 cycles per fold), outermost; 1 = SCALE-Sim's whole T. OS: always 1.
    int64_t chunks = 1;
    bool operator==(const FoldNest& o) const { return swapped == o.swapped && chunks == o.chunks; }
};

/// Calls `visit` for every fold of `gemm` (all repeat steps, batch entries and groups, in
/// order) walked as `nest` says, with tile keys unique to (gemm_index, operand, tile). The
/// default nest keeps the reduction innermost for WS/IS so partial sums stay in the ofmap buffer
/// when they fit (a spill is written and read back through DRAM otherwise); OS keeps an A
/// row-tile while it walks N. Throws std::invalid_argument for a nest of fewer than one chunk,
/// or of several under OS.
void for_each_fold(const GemmView& gemm, int gemm_index, const TpuConfig& cfg,
                   const std::function<void(const FoldWork&)>& visit, const FoldNest& nest = {});

}  // namespace archsim
