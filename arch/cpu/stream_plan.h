#pragma once
// Which bytes of its tensors each chunk of a memory-bound CPU kernel touches, in what order.
#include <cstdint>
#include <vector>

#include "arch/cpu/unit_replay.h"

namespace archsim {

class CpuCore;

/// How a memory-bound kernel (an elementwise, reduction or data-movement operator) streams its
/// tensors through a core's caches, split into `blocks` chunks of its output.
///
/// A chunk touches its share of every tensor: chunk b of B the bytes [b, b + 1) / B of each,
/// inputs first, outputs last. A broadcast operand whose values repeat within a chunk's share
/// of the output (Stream::period, from broadcast_period(): a bias, a scale, a scalar) is read
/// whole instead, as a vectorized kernel does: one that fits in a cache line once per chunk
/// (its values stay in registers), a larger one once per period of output elements (a row),
/// the chunk then touching its share of the other tensors a row at a time, so that the operand
/// stays in the L1 between its reads as it does on the hardware. A kernel with no tensor read
/// in shares (a GEMM's fused epilogue, which reads only its bias) reads it once per chunk.
class StreamPlan {
public:
    /// One tensor the kernel reads or writes.
    struct Stream {
        uint64_t addr = 0, bytes = 0;  ///< where it lies, bytes
        bool write = false;
        int64_t period = 0;  ///< output elements after which a broadcast input repeats; 0: not one
    };
    /// @param streams the kernel's tensors (inputs, then outputs); @param out_elems elements of
    /// its output (0: none, every stream split); @param blocks chunks in all (>= 1);
    /// @param line_bytes the cache line, bytes.
    StreamPlan(std::vector<Stream> streams, uint64_t out_elems, uint64_t blocks, uint64_t line_bytes);

    /// Touches chunk `blk`'s bytes (0 <= blk < blocks) through `core`'s caches.
    void touch(CpuCore& core, uint64_t blk) const;
    /// Whether consecutive chunks touch the same bytes moved by one chunk in every tensor read
    /// in shares (the bytes of operands read whole staying where they are), so that they can be
    /// units of one loop (unit_replay.h).
    bool even() const { return m_even; }
    /// The tensors read in shares, as the ranges such a loop moves through.
    std::vector<MovingRange> ranges() const;

private:
    enum class Read { Share, OncePerChunk, EveryRow };
    struct Planned {
        Stream s;
        Read read = Read::Share;
    };
    std::vector<Planned> m_streams;
    uint64_t m_out_elems, m_blocks;
    uint64_t m_row = 0;  ///< output elements per row (0: no operand read every row)
    bool m_even = true;
};

}  // namespace archsim
