#include "arch/cpu/stream_plan.h"

#include <algorithm>

#include "arch/cpu/cpu_core.h"

namespace archsim {

StreamPlan::StreamPlan(std::vector<Stream> streams, uint64_t out_elems, uint64_t blocks, uint64_t line_bytes)
    : m_out_elems(out_elems), m_blocks(std::max<uint64_t>(1, blocks)) {
    const uint64_t chunk_elems = m_out_elems / m_blocks;
    for (const Stream& s : streams) {
        Planned p{s, Read::Share};
        if (!s.write && s.period > 0 && static_cast<uint64_t>(s.period) <= chunk_elems) p.read = Read::OncePerChunk;
        m_streams.push_back(p);
    }
    // an operand larger than a line is read every row, between the rows of the tensors read in
    // shares; with none (a fused epilogue reading only its bias) once per chunk
    const bool shares = std::any_of(m_streams.begin(), m_streams.end(), [](const Planned& p) { return p.read == Read::Share; });
    for (Planned& p : m_streams)
        if (shares && p.read == Read::OncePerChunk && p.s.bytes > line_bytes) {
            p.read = Read::EveryRow;
            m_row = std::max(m_row, static_cast<uint64_t>(p.s.period));
        }
    // chunks move by whole shares; with rows, every chunk starts at the same place in its rows
    for (const Planned& p : m_streams) m_even = m_even && (p.read != Read::Share || p.s.bytes % m_blocks == 0);
    if (m_row > 0) m_even = m_even && m_out_elems % m_blocks == 0;
}

void StreamPlan::touch(CpuCore& core, uint64_t blk) const {
    if (m_row == 0) {
        for (const Planned& p : m_streams) {
            const Stream& s = p.s;
            if (p.read == Read::Share) {
                const uint64_t lo = s.bytes * blk / m_blocks, hi = s.bytes * (blk + 1) / m_blocks;
                core.touch(s.addr + lo, hi - lo, s.write);
            } else {
                core.touch(s.addr, s.bytes, false);
            }
        }
        return;
    }
    for (const Planned& p : m_streams)
        if (p.read == Read::OncePerChunk) core.touch(p.s.addr, p.s.bytes, false);
    // the chunk's output elements [e0, e1), a row at a time
    const uint64_t e0 = m_out_elems * blk / m_blocks, e1 = m_out_elems * (blk + 1) / m_blocks;
    for (uint64_t a = e0; a < e1; a += m_row) {
        const uint64_t b = std::min(e1, a + m_row);
        for (const Planned& p : m_streams) {
            const Stream& s = p.s;
            if (p.read == Read::EveryRow) {
                core.touch(s.addr, s.bytes, false);
            } else if (p.read == Read::Share) {
                const uint64_t lo = s.bytes * a / m_out_elems, hi = s.bytes * b / m_out_elems;
                core.touch(s.addr + lo, hi - lo, s.write);
            }
        }
    }
}

std::vector<MovingRange> StreamPlan::ranges() const {
    std::vector<MovingRange> out;
    for (const Planned& p : m_streams)
        if (p.read == Read::Share) out.push_back({p.s.addr, p.s.addr + p.s.bytes, p.s.bytes / m_blocks});
    return out;
}

}  // namespace archsim
