#pragma once
// Mapping search on the KPU: the order of the domain-flow schedule's outer loops (BlockOrder)
// for one GEMM, chosen by evaluating candidates with the fabric's own per-wave cost.
// Pure functions: no SystemC, testable on their own.
#include <cstdint>
#include <string>

#include "arch/kpu/kpu_config.h"
#include "arch/kpu/wavefront.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

/// What a kernel finds when it starts, beyond its shape and the config: which of its GEMM's
/// operands the L3 holds whole (an activation the previous operator left there, weights
/// prefetched: their panels cost no DRAM traffic), and the clock the power controller runs the
/// fabric at (DRAM's bytes per fabric cycle scale with it).
struct ResidentOperands {
    bool a = false, b = false;
    double clock_mhz = 0;  ///< MHz; 0 = the config's mode clock
};

/// What one pass of a GEMM costs in a BlockOrder, as the KPU model prices its waves: each wave
/// lasts max(wavefront cycles, block movers' cycles on its busiest tile, streamers' likewise)
/// and starts once the previous wave ended and its operands landed, its DRAM reads issued when
/// the previous wave started (the operand pipeline) and queued behind earlier ones at the DRAM's
/// peak rate plus its latency (at `resident.clock_mhz`), with the L3 (tiles x l3.kib_per_tile, LRU over operand
/// panels, holding only the `resident` operands at the start) and each tile's L2 (half of
/// l2.kib_per_tile resident, LRU) deciding what is fetched and moved (arch/kpu/kpu_waves.cpp
/// does the same per wave).
struct OrderCost {
    int64_t cycles = 0;      ///< sum over the pass's waves, cycles at the mode's clock
    int64_t dram_bytes = 0;  ///< operand panels fetched from DRAM into L3
    bool complete = true;    ///< false: evaluation stopped once `cycles` exceeded the bound given
};

/// One pass of `g` in `order`; stops early (complete = false) once the cycles exceed
/// `stop_above_cycles` (branch and bound; < 0: never).
OrderCost order_cost(const GemmView& g, const KpuConfig& cfg, const BlockOrder& order, ResidentOperands resident = {},
                     int64_t stop_above_cycles = -1);

/// The search's termination gap (as a MIP solver's relative gap; Timeloop's mapper stops on a
/// victory condition instead): an order whose lower bound is within 0.5% of the best so far is not
/// priced, and the search ends once the best is within 0.5% of the bound no order can beat. Pricing
/// an order walks every block of the GEMM (a BERT-Large batch-128 layer has 196,608), so the
/// near-ties the gap skips would cost more wall time than their cycles are worth.
inline constexpr double kOptimalityGap = 0.005;

/// The result of a mapping search for one GEMM.
struct KpuMapping {
    BlockOrder order;          ///< the chosen order (row-major under --mapper fixed)
    int64_t mapspace = 1;      ///< distinct orders considered
    int64_t evaluated = 0;     ///< orders priced wave by wave (order_cost); the rest were pruned by their bound
    OrderCost cost;            ///< the chosen order's cost (evaluated: 0 under --mapper fixed)
    OrderCost fixed_cost;      ///< the row-major order's (what --mapper fixed runs)
};

/// Searches the mapspace of `g`'s block orders: row-major and column-major, and for each outer
/// dimension bands of 1, 2, 4, ... inner blocks plus the widest bands whose working set fits the
/// L3 (the band's panels and the other operand's: every panel reused from L3), deduplicated.
/// Each candidate gets an analytical lower bound: the larger of what every wave must take
/// whatever the order (its wavefront, the operands its busiest tile streams, the panels too
/// large to stay in an L2 moved) and its DRAM traffic at the DRAM's peak rate, plus one DRAM
/// latency, the traffic from LRU stack distances (a panel is reused iff what is touched between
/// its uses fits the L3). The row-major order is priced first, the others in the order of their
/// bounds, each pruned when its bound cannot beat the best so far by more than kOptimalityGap
/// and priced with early exit otherwise, until the best is within kOptimalityGap of the bound no
/// order can beat (every operand from DRAM once). Ties go to less DRAM traffic, then to the
/// earlier candidate (row-major first), so the search never returns an order slower than
/// row-major's by its own cost. With both operands `resident` only the block movers' L2 reuse
/// tells orders apart. A GEMM of more identical instances (attention's batch x heads) than fill
/// 16 waves is priced on as many as do (the costs it returns are the sample's). The method: Timeloop's mapper (Parashar et al.,
/// ISPASS 2019) and ZigZag's LOMA (Symons et al., AICAS 2021) enumerate loop orders and
/// blockings and price each with the accelerator's own cost model, pruning with bounds; here the
/// mapspace is the L3-level loop order and band, the wavefront's R x C x k block being fixed by
/// the fabric.
KpuMapping search_mapping(const GemmView& g, const KpuConfig& cfg, ResidentOperands resident = {});

/// `order` as a mapping report names it: "rows>cols" (row-major), "cols>rows",
/// "rows>cols bands=8" (column bands of 8 blocks), "cols>rows bands=4".
std::string describe(const BlockOrder& order);

}  // namespace archsim
