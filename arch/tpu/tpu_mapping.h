#pragma once
// Mapping search on the TPU: each contraction's dataflow (the stationary operand), the loop order
// of its folds and the tile of its streamed dimension, chosen by pricing the candidates with the
// array's own per-fold cost after pruning by analytical lower bounds. Pure functions: no SystemC.
#include <cstdint>
#include <string>
#include <vector>

#include "arch/common/dram_queue.h"
#include "arch/memory/tile_buffer.h"
#include "arch/tpu/systolic_mapper.h"
#include "arch/tpu/tpu_config.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

/// What one GEMM's folds cost, as the TPU model runs them (arch/tpu/tpu_machine.cpp).
struct FoldCost {
    int64_t cycles = 0;
    int64_t dram_bytes = 0;  ///< reads and writes
};

/// One GEMM's mapping on the array: its dataflow and how its folds are walked (FoldNest).
struct TpuChoice {
    Dataflow dataflow = Dataflow::WS;
    FoldNest nest;
    bool operator==(const TpuChoice& o) const { return dataflow == o.dataflow && nest == o.nest; }
};

/// The mapping as the run table and metrics.json show it: the dataflow ("ws", "os", "is"), then
/// what differs from SCALE-Sim's walk: "k-outer" (WS/IS: the reduction's folds outermost),
/// "n-outer" (OS: the column folds outermost), "m/4" (WS: M in 4 chunks), "n/4" (IS: N in 4).
std::string describe(const TpuChoice& choice);

/// Whether operand tile `t` must come from DRAM into `buffer`: it has bytes and is uncacheable or
/// not resident (a hit marks it used); a cacheable one fetched is made resident. The TPU machine
/// (its loads) and FoldPricer decide every tile so.
bool fetch_tile(TileBuffer& buffer, const TileLoad& t);

/// Prices a kernel's GEMMs one after another as the TPU model runs them
/// (arch/tpu/tpu_machine.cpp): folds back to back (SCALE-Sim's per-fold cycles,
/// systolic_mapper.h), each waiting for its operand tiles, which are fetched when the previous
/// fold starts unless still in their double-buffered SRAM (LRU, empty at the kernel's start),
/// queued on the DRAM at its peak rate plus its latency (DramQueue); each fold's outputs (or
/// spilled partial sums) are written when it ends, behind the next fold's reads; the kernel ends
/// when its last fold and its writes are done. Cycles of `cfg`'s clock.
class FoldPricer {
public:
    explicit FoldPricer(const TpuConfig& cfg);
    /// Appends GEMM `g` (index `gemm_index` within its kernel) mapped as `choice`.
    void add(const GemmView& g, int gemm_index, const TpuChoice& choice);
    /// The cost of everything added so far, its last writes included.
    FoldCost cost() const;

private:
    TpuConfig m_cfgs[3];  ///< the config in each dataflow, by Dataflow
    TileBuffer m_buffers[3];
    DramQueue m_dram;
    double m_prev_start = 0, m_prev_end = 0, m_writes_done = 0;
    int64_t m_pending_write = 0, m_dram_bytes = 0;  ///< the last fold's writes, not yet queued; bytes so far
    bool m_first = true;
};

/// One GEMM (`gemm_index` within its operator) mapped as dataflow `df` and `nest` on `cfg`'s
/// array and buffers, priced alone (FoldPricer).
FoldCost fold_cost(const GemmView& g, int gemm_index, const TpuConfig& cfg, Dataflow df, const FoldNest& nest = {});

/// A lower bound on fold_cost() of a mapping, in cycles: the larger of its folds' compute cycles
/// (folds do not overlap; exact on an ideal DRAM) and the bytes every fold walk must move (A's
/// distinct elements and B once per instance, C written once) at the DRAM's peak rate.
int64_t fold_cost_bound(const GemmView& g, const TpuConfig& cfg, const TpuChoice& choice);

/// The result of a mapping search for one GEMM.
struct TpuMapping {
    TpuChoice choice;
    int64_t mapspace = 1, evaluated = 0;
    FoldCost cost;
};

/// The mapspace of one GEMM on `cfg`: the config's own mapping (its dataflow, SCALE-Sim's walk)
/// first, then for each dataflow both loop orders and, for WS and IS, the streamed dimension in
/// 1, 2, 4, ... 64 chunks of at least min(R, C) (and of at least 1 when T is shorter) and in the
/// fewest chunks whose partial sums fit half the ofmap buffer in either order.
std::vector<TpuChoice> tpu_mapspace(const GemmView& g, const TpuConfig& cfg);

/// Searches tpu_mapspace() as Timeloop's mapper and ZigZag's LOMA search a layer's dataflow,
/// loop order and temporal tiles, by branch and bound: the config's own mapping is priced first
/// (FoldPricer), then the others in order of fold_cost_bound() while the bound can still tie
/// the best; it returns the fastest, ties to less DRAM traffic, then to the earlier in the
/// mapspace (the config's own first).
TpuMapping search_mapping(const GemmView& g, int gemm_index, const TpuConfig& cfg);

/// "ws", "os" or "is".
const char* to_string(Dataflow df);

}  // namespace archsim
