#pragma once
// Mapping search on the TPU: the dataflow (the stationary operand) of each contraction, chosen by
// pricing every dataflow's folds with the array's own per-fold cost. Pure functions: no SystemC.
#include <cstdint>

#include "arch/memory/tile_buffer.h"
#include "arch/tpu/systolic_mapper.h"
#include "arch/tpu/tpu_config.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

/// What one GEMM's folds cost in one dataflow, as the TPU model runs them
/// (arch/tpu/tpu_machine.cpp): folds back to back (SCALE-Sim's per-fold cycles,
/// systolic_mapper.h), each waiting for its operand tiles, which are fetched when the previous
/// fold starts unless still in their double-buffered SRAM (LRU, empty at the operator's start),
/// queued on the DRAM at its peak rate plus its latency; each fold's outputs (or spilled partial
/// sums) are written when it ends and share the DRAM; the GEMM ends when its last fold and its
/// writes are done.
struct FoldCost {
    int64_t cycles = 0;
    int64_t dram_bytes = 0;  ///< reads and writes
};

/// Whether operand tile `t` must come from DRAM into `buffer`: it has bytes and is uncacheable or
/// not resident (a hit marks it used); a cacheable one fetched is made resident. The TPU machine
/// (its loads) and fold_cost() decide every tile so.
bool fetch_tile(TileBuffer& buffer, const TileLoad& t);

/// One GEMM (`gemm_index` within its operator) in dataflow `df` on `cfg`'s array and buffers.
FoldCost fold_cost(const GemmView& g, int gemm_index, const TpuConfig& cfg, Dataflow df);

/// The result of a dataflow search for one GEMM.
struct TpuMapping {
    Dataflow dataflow = Dataflow::WS;
    int64_t mapspace = 1, evaluated = 0;
    FoldCost cost;
};

/// Prices the three dataflows (weight, output and input stationary: the mapspace of SCALE-Sim's
/// `Dataflow` key, searched per layer as Timeloop's mapper and ZigZag search a layer's spatial
/// unrolling) with fold_cost() and returns the fastest; ties go to less DRAM traffic, then to
/// the config's own dataflow, then WS, OS, IS. The array, the buffers and the loop order within
/// a dataflow stay as `cfg` and systolic_mapper.h give them.
TpuMapping search_dataflow(const GemmView& g, int gemm_index, const TpuConfig& cfg);

/// "ws", "os" or "is".
const char* to_string(Dataflow df);

}  // namespace archsim
