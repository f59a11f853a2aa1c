#pragma once
// Which cache lines a set-sampled CPU simulates (cache set sampling, a fast path of large kernels).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace archsim {

/// The lines cache set sampling simulates: those whose residue modulo `modulus` lines is one of
/// `residues`. The modulus divides every cache level's number of sets, so a sampled line lands
/// in a sampled set of every level (sets whose index modulo `modulus` is a sampled residue) and
/// every line of a sampled set is sampled: each sampled set sees exactly the accesses it sees in
/// full simulation (set sampling: Kessler, Hill & Wood, "A Comparison of Trace-Sampling
/// Techniques for Multi-Megabyte Caches", IEEE Trans. Computers 43(6), 1994). The residues are
/// evenly spaced, r0 + j x ratio (r0 = 5 ratio / 8): the estimate is unbiased over the choice of
/// r0 (averaged over all 64 residues, a 1024^3 GEMM's L2 and DRAM traffic equal full simulation's
/// to 1e-6), but single residues differ where lines at some places of a page are reused more
/// than others: there, lines 13 and 40 of each 4 KiB row of A, which two kc slices both read,
/// move the L2 traffic +75% when sampled alone; spreading the residues over the page instead of
/// evenly made that GEMM's estimate worse (+15% against -2.8%), not better.
struct SetSample {
    int64_t modulus = 1;             ///< lines; divides every level's number of sets
    std::vector<int64_t> residues{0};///< sampled residues, ascending
    std::vector<int64_t> partner{0}; ///< per residue modulo `modulus`: the sampled residue its sets copy when sampling ends

    /// Every line simulated (no sampling).
    static SetSample none() { return {}; }
    /// One line in `ratio` sampled, its residues evenly spaced over `modulus` (ratio divides
    /// modulus; ratio 1: none()). Throws std::invalid_argument otherwise.
    static SetSample spread(int64_t ratio, int64_t modulus);

    /// Per residue modulo `modulus`: 1 where its lines are simulated (every residue of none()).
    std::vector<uint8_t> residue_mask() const {
        std::vector<uint8_t> mask(static_cast<size_t>(modulus), 0);
        for (const int64_t r : residues) mask[static_cast<size_t>(r)] = 1;
        return mask;
    }
    /// Lines each sampled line stands for.
    uint64_t weight() const { return static_cast<uint64_t>(modulus / static_cast<int64_t>(residues.size())); }
    bool active() const { return modulus > 1 && weight() > 1; }
};

}  // namespace archsim
