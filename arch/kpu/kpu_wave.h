#pragma once
// One wave of work on the KPU fabric and the bytes it moves at each level.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "arch/kpu/wavefront.h"

namespace archsim {

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
