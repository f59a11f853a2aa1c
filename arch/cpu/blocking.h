#pragma once
// GEMM blocking the way BLIS and oneDNN block it: a register micro-tile and cache-sized panels.
#include <cstdint>

namespace archsim {

struct CpuConfig;

/// Block sizes of the five-loop GEMM (Goto & van de Geijn, ACM TOMS 2008; BLIS): C (m x n) +=
/// A (m x k) B (k x n) is computed as nc-wide column panels of B (kept in L3), kc-deep slices
/// (a packed kc x nc B panel), mc-tall packed A blocks (kept in L2), and mr x nr micro-tiles of
/// C held in registers while the micro-kernel streams a kc-long A micro-panel and B micro-panel
/// (the B micro-panel kept in L1). All sizes are in elements.
struct Blocking {
    int64_t mr = 0, nr = 0;  ///< register micro-tile of C
    int64_t kc = 0;          ///< depth of a packed slice (K per micro-kernel call)
    int64_t mc = 0;          ///< rows of a packed A block (multiple of mr)
    int64_t nc = 0;          ///< columns of a packed B panel (multiple of nr)
};

/// The blocking for `cfg`'s caches and registers in its run precision, independent of a problem.
///  - Micro-tile: accumulators are 32-bit, L = vector_bits / 32 per register; nr = 2 registers
///    (2L), mr = (registers - 3) / 2 so that mr x 2 accumulators + 2 B vectors + 1 A broadcast
///    fit (AVX2: 6 x 16; AVX-512: 14 x 32, as in BLIS's haswell and skx kernels). AMX: 32 x 32
///    (2 x 2 tiles of 16 x 16 int32/fp32 accumulators, oneDNN's brgemm blocking).
///  - kc, mc, nc: the analytical model of Low et al., "Analytical Modeling Is Enough for
///    High-Performance BLIS", ACM TOMS 43(2), 2016: the A micro-panel gets
///    C_A = max(1, floor((W1 - 1) mr / (mr + nr))) of the L1's W1 ways, kc = C_A S1 L / (mr e)
///    (S1 sets, L line bytes, e element bytes; rounded down to a multiple of 4); the A block takes
///    the L2 ways left by one B micro-panel and one way for C: mc = C_Ac S2 L / (kc e) rounded
///    down to a multiple of mr; the B panel takes the L3 ways left by every core's A block and one
///    way: nc = C_Bc S3 L / (kc e) rounded down to a multiple of nr.
Blocking choose_blocking(const CpuConfig& cfg);

/// `b` clipped to an m x n x k problem: kc <= k, mc <= m rounded up to mr, nc <= n rounded up to nr.
Blocking fit_blocking(Blocking b, int64_t m, int64_t n, int64_t k);

/// Rows of C the busiest of `cores` cores computes when m rows are cut into mc-row blocks (the
/// last one short) dealt to the cores in turn (block w on core w mod cores).
int64_t busiest_core_rows(int64_t m, int64_t mc, int64_t cores);

/// The rows of an A block for an m-row GEMM on `cores` cores, at most `mc_cap` (the cache's
/// block, a multiple of `mr`): BLIS divides the ic loop's rows evenly among the threads, so the
/// default is as many blocks per core as the cap needs, each of the rows that spreads m evenly
/// over them, rounded up to mr. Rounding to mr can leave one core a block more than the others
/// (m = 50176 at a cap of 238: 211 blocks, 106 on one core); then the multiple of mr up to the
/// cap whose busiest core computes the fewest rows (busiest_core_rows) is taken instead, the
/// largest on a tie. A larger cache (a larger cap) thus never leaves the busiest core more rows.
int64_t split_rows(int64_t m, int64_t mc_cap, int64_t mr, int64_t cores);

}  // namespace archsim
