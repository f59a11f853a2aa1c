#pragma once
// One wave of work on the KPU fabric and the bytes it moves at each level.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "arch/kpu/wavefront.h"

namespace archsim {

/// Bytes one block of `g` involves at `eb` bytes per operand: its A panel (m x k, `a_ratio` of it
/// distinct), its B panel (k x n), its output (m x n), and the operands the streamers feed the
/// wavefront from L2 (im2col expanded: (m + n) x k).
struct BlockBytes {
    int64_t a = 0, b = 0, out = 0, streamed = 0;
};
inline BlockBytes block_bytes(const GemmView& g, const FabricBlock& blk, int64_t eb, double a_ratio) {
    return {static_cast<int64_t>(std::ceil(blk.m * g.k * a_ratio)) * eb, g.k * blk.n * eb, blk.m * blk.n * eb, (blk.m + blk.n) * g.k * eb};
}

/// Moves a block's A and B panels (keys and bytes) into its tile's L2, an LRU buffer with
/// TileBuffer's hit()/insert(): both are looked up first, then the missing ones inserted; a panel
/// still there from the tile's previous block is not moved again. Returns the bytes moved.
template <class Buffer>
int64_t move_into_l2(Buffer& l2, uint64_t a_key, int64_t a_bytes, uint64_t b_key, int64_t b_bytes) {
    const int64_t a_move = l2.hit(a_key) ? 0 : a_bytes, b_move = l2.hit(b_key) ? 0 : b_bytes;
    if (a_move) l2.insert(a_key, a_bytes);
    if (b_move) l2.insert(b_key, b_bytes);
    return a_move + b_move;
}

/// One wave: what it computes, what it moves at each level (bytes), and what it must fetch from
/// DRAM before it can start.
struct Wave {
    std::vector<FabricBlock> blocks;  ///< one per tile used (empty for PE-path operators)
    int64_t k = 0;                    ///< reduction length of each block
    int64_t compute_cycles = 0;       ///< wavefront cycles, with fill/skew/drain where they fall
    int64_t pe_ops = 0;               ///< PE operations (other operators)
    int64_t mover_bytes_max_tile = 0, streamer_bytes_max_tile = 0;
    int64_t mover_bytes = 0, streamer_bytes = 0;
    int64_t dram_read_bytes = 0;
    int64_t l3_read = 0, l3_write = 0, l2_read = 0, l2_write = 0, l1_read = 0, l1_write = 0;
    double prefetch_ready_ps = 0;     ///< when weights prefetched by the previous operator land
    bool contraction = true;

    /// Adds one tile's block: `panels_moved` operand bytes the block movers bring from L3 into
    /// the tile's L2 (0 for a panel still there), `out_bytes` of results going back, and
    /// `operands_streamed` bytes the streamers feed from L2 into L1 (im2col expanded).
    void add_block(int64_t panels_moved, int64_t out_bytes, int64_t operands_streamed) {
        const int64_t moved = panels_moved + out_bytes;              // L3 <-> L2
        const int64_t streamed = operands_streamed + out_bytes;      // L2 <-> L1
        mover_bytes += moved;
        streamer_bytes += streamed;
        mover_bytes_max_tile = std::max(mover_bytes_max_tile, moved);
        streamer_bytes_max_tile = std::max(streamer_bytes_max_tile, streamed);
        l3_read += panels_moved;
        l3_write += out_bytes;
        l2_write += moved;
        l2_read += streamed;
        l1_write += streamed;
        l1_read += streamed;
    }
};

}  // namespace archsim
