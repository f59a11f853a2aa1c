#pragma once
// Mapping search on the CPU: a GEMM's BLIS block sizes (mc, kc, nc), chosen among variants of the
// analytical blocking (blocking.h) by pricing each with a block-level model of the CPU machine's
// own timing (CoreSchedule::finish_block) after pruning by a compute-and-packing lower bound.
// Pure functions: no SystemC, no caches.
#include <cstdint>
#include <string>
#include <vector>

#include "arch/cpu/blocking.h"
#include "arch/cpu/cpu_config.h"
#include "arch/cpu/gemm_nest.h"

namespace archsim {

/// One GEMM as the blocking search sees it: C (m x n) += A (m x k) B (k x n) on `cores` cores.
struct CpuGemmShape {
    int64_t m = 0, n = 0, k = 0;
    int64_t a_cols = 0;  ///< distinct columns of A per row (< k under implicit im2col; 0 = k)
    int64_t cores = 1;
    GemmPacking packing;
};

/// What a blocking costs, priced block by block (price_blocking()).
struct BlockingCost {
    double cycles = 0;       ///< the GEMM's critical path, core cycles
    double dram_bytes = 0;   ///< DRAM reads and writes
    double bound_cycles = 0; ///< its lower bound (blocking_bound_cycles()), from the same walk
};

/// The GEMM's cost with blocking `b` (fit_blocking applied, then the row split of
/// plan_gemm_nest), walking the same loop nest as CpuMachine::gemm (gemm_nest.h: the B panel
/// packed by the cores together, then each core's mc-row blocks) and timing each block as
/// CoreSchedule::finish_block does: the larger of packing plus compute, packing plus its L1
/// misses at the L2's bandwidth, and its L2 misses at the L3's bandwidth plus its DRAM bytes at
/// the core's share of the DRAM's; the cores meet at a barrier after every (jc, pc) step. The
/// misses are counted per block tile by tile (Low et al., ACM TOMS 43(2), 2016): a packed A
/// block stays in the L2 and a B micro-panel in the L1 when they fit beside what the analytical
/// blocking reserves; otherwise every nr column re-reads the A block (and every mr row the B
/// micro-panel) from the level below. The B panel stays in the L2 across a core's blocks when it
/// fits beside the A block, else it streams from the L3 for every block; A's source and C come
/// from DRAM on first touch and from the L3 afterwards when the whole operand fits beside the B
/// panel. Cycles of the core clock.
BlockingCost price_blocking(const CpuConfig& cfg, const CpuGemmShape& g, const Blocking& b);

/// A lower bound on price_blocking()'s cycles: the busiest core's compute and packing alone
/// (what every block's time is at least), summed over the (jc, pc) steps.
double blocking_bound_cycles(const CpuConfig& cfg, const CpuGemmShape& g, const Blocking& b);

/// The mapspace: `base` (the config's analytical blocking) with each of kc, mc and nc halved,
/// kept or doubled (kc a multiple of 4, mc of mr, nc of nr; mr and nr stay: they are the
/// register micro-tile), fitted to the problem, duplicates dropped; `base` first.
std::vector<Blocking> blocking_mapspace(const Blocking& base, const CpuGemmShape& g);

/// A search's result for one GEMM.
struct CpuBlockingChoice {
    Blocking blocking;       ///< fitted, before the row split
    int64_t mapspace = 1, evaluated = 0;
    int64_t simulated = 0;   ///< blockings then run on the machine's own model (CpuMachine::searched)
    BlockingCost cost;
};

/// Branch and bound over blocking_mapspace() with price_blocking() (search_in_bound_order,
/// arch/common/bound_search.h): `base` priced first, then the rest in order of
/// blocking_bound_cycles() while the bound can still tie the best; the fewest cycles win, ties
/// go to fewer DRAM bytes, then to the earlier in the mapspace (`base` first). As Timeloop's
/// mapper searches a layer's tile sizes with its own cost model.
CpuBlockingChoice search_blocking(const CpuConfig& cfg, const CpuGemmShape& g, const Blocking& base);

/// "mc 444 kc 512 nc 4096" (the nest's rows per block after the row split).
std::string describe(const GemmNest& nest);

}  // namespace archsim
