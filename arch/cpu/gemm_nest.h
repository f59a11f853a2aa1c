#pragma once
// A GEMM's BLIS loop nest on a number of cores, as plain data: which operands are packed, the
// rows of the B panel each core packs, and the macro-kernel work each core runs. Pure (no
// addresses, caches or time): CpuMachine::gemm (cpu_gemm.cpp) walks it and times what it says.
#include <cstdint>
#include <utility>
#include <vector>

#include "arch/cpu/blocking.h"

namespace archsim {

/// What decides which operands a GEMM packs.
struct GemmPacking {
    bool blas = false;               ///< the framework calls the BLAS: it packs both operands at every call
    bool b_is_weight = false;        ///< B is a weight (reordered into panels at load time when prepacked_weights)
    bool prepacked_weights = false;  ///< the runtime keeps weights in the micro-kernel's panel layout (gemm.prepacked_weights)
    bool a_in_place = false;         ///< A is read where it lies (a direct convolution's input on a blocked layout)
};

/// The loop nest of C (m x n) += A (m x k) B (k x n) on `cores` cores (Van Zee & van de Geijn,
/// "BLIS", ACM TOMS 41(3), 2015): jc over nc columns, pc over kc of K, ic over mc rows, then the
/// micro-kernel's jr over nr columns and ir over mr rows.
struct GemmNest {
    int64_t m = 0, n = 0, k = 0, cores = 1;
    Blocking b;              ///< the blocking, mc split so that every core gets the same rows
    bool pack_a = false;     ///< A blocks are copied into each core's buffer (BLIS: a block used by more than one nr column)
    bool pack_b = false;     ///< B panels are copied by the cores together (used by more than one mr row, and not prepacked)
    bool prepacked = false;  ///< B is read from its load-time panel layout
};

/// The nest of an m x n x k GEMM with `fitted` blocking (fit_blocking) on `cores` cores. BLIS
/// divides the ic loop's rows evenly among the threads, so mc shrinks until every core gets the
/// same rows (split_rows) when m exceeds one block or more than one core runs. An operand used by
/// a single micro-kernel row (m <= mr) or column (n <= nr) of calls is read in place, as oneDNN's
/// GEMV-like kernels do; the BLAS packs both whatever their shape.
GemmNest plan_gemm_nest(const Blocking& fitted, int64_t m, int64_t n, int64_t k, int64_t cores, const GemmPacking& p);

/// Rows [row0, row0 + rows) of a kc-row B panel that one core packs.
struct PackRows {
    int64_t row0 = 0, rows = 0;
};

/// The rows of a `kcb`-row B panel each of `cores` cores packs: ceil(kcb / cores) each in core
/// order, the last ones short or empty (rows = 0).
std::vector<PackRows> pack_rows(int64_t kcb, int64_t cores);

/// One macro-kernel work item: rows [ic, ic + mcb) of C against micro-panels [p0, p1) of the
/// nc block (`cols` of its columns, the last panel possibly short), kcb deep.
struct MacroWork {
    int64_t ic = 0, mcb = 0, p0 = 0, p1 = 0, cols = 0;
    uint64_t macs = 0;  ///< mcb x cols x kcb
};

/// The macro-kernel work of one (jc, pc) step, dealt to the cores: the mc-row blocks in turn
/// (block w on core w mod cores); with fewer blocks than cores the nr panels are split too, into
/// `jsplit` parts (BLIS's jr loop parallelized), so that every core has work.
struct MacroQueues {
    int64_t m = 0, mc = 0, nr = 0, ncb = 0, kcb = 0;
    int64_t ic_blocks = 0;  ///< mc-row blocks of C
    int64_t panels = 0;     ///< nr-wide micro-panels of the nc block
    int64_t jsplit = 1;     ///< parts each block's panels are cut into
    std::vector<std::vector<int64_t>> queue;  ///< per core, the work items (indices w) it runs, in order

    /// Work item `w` (0 <= w < ic_blocks x jsplit): block w / jsplit, panel part w % jsplit.
    MacroWork work(int64_t w) const;
};

/// The work of the step whose B panel is `ncb` columns by `kcb` rows.
MacroQueues macro_queues(const GemmNest& nest, int64_t ncb, int64_t kcb);

/// The columns of A a kc slice starting at `pc` reads when A has `a_cols` distinct columns per
/// row (implicit im2col folds a convolution's taps onto them): {first column, count}, count =
/// min(kcb, a_cols), the slice wrapping onto the last `count` columns when it would run past.
std::pair<int64_t, int64_t> a_source_cols(int64_t pc, int64_t kcb, int64_t a_cols);

}  // namespace archsim
