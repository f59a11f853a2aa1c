#include "arch/cpu/cpu_core.h"

#include <algorithm>

namespace archsim {

CpuCore::CpuCore(sc_core::sc_module_name name, int64_t index, const CpuConfig& cfg)
    : sc_core::sc_module(name), socket("socket"), m_index(index), m_line_bytes(cfg.line_bytes),
      m_l1(cfg.l1.bytes(), cfg.l1.ways, cfg.line_bytes), m_l2(cfg.l2.bytes(), cfg.l2.ways, cfg.line_bytes) {
    m_batch.core = index;
    if (m_line_bytes > 0 && (m_line_bytes & (m_line_bytes - 1)) == 0) m_line_shift = __builtin_ctzll(static_cast<uint64_t>(m_line_bytes));
}

void CpuCore::touch_sampled(uint64_t first, uint64_t last, bool write, Fill fill) {
    (write ? m_counts.l1_writes : m_counts.l1_reads) += last - first + 1;
    const uint64_t mod = static_cast<uint64_t>(m_sample.modulus);
    if (m_sample_mask != 0) {  // a power-of-two modulus (every bundled config's): no divisions
        for (const int64_t r : m_sample.residues)
            for (uint64_t l = first + ((static_cast<uint64_t>(r) - first) & m_sample_mask); l <= last; l += mod) access_line(l, write, fill);
        return;
    }
    const uint64_t at = first % mod;
    for (const int64_t r : m_sample.residues)
        for (uint64_t l = first + (static_cast<uint64_t>(r) + mod - at) % mod; l <= last; l += mod) access_line(l, write, fill);
}

void CpuCore::l1_missed(uint64_t line, bool write, Fill fill, bool evicted_dirty, uint64_t victim) {
    const uint64_t w = m_sample_w;
    if (evicted_dirty) write_back_from_l1(victim);
    m_counts.l1_misses += w;
    const Cache::Result r2 = m_l2.access(line, write);
    m_counts.l2_dirtied += r2.dirtied ? w : 0;
    if (r2.evicted_dirty) m_batch.writebacks.push_back(r2.victim);
    if (r2.hit) return;
    m_counts.l2_misses += w;
    if (fill == Fill::Fetch) m_batch.reads.push_back(line);
    else if (fill == Fill::Claim) m_batch.writebacks.push_back(line);
}

double CpuCore::flush(double issue_ps, L3Outcome& out) {
    const double now = static_cast<double>(sc_core::sc_time_stamp().value());
    if (m_batch.reads.empty() && m_batch.writebacks.empty()) {
        out = L3Outcome{};
        return now + issue_ps;
    }
    tlm::tlm_generic_payload p;
    p.set_command(tlm::TLM_READ_COMMAND);
    p.set_address(0);
    p.set_data_ptr(nullptr);
    p.set_data_length(static_cast<unsigned>(std::min<uint64_t>(
        (m_batch.reads.size() + m_batch.writebacks.size()) * m_batch.weight * static_cast<uint64_t>(m_line_bytes), 0x7fffffffu)));
    p.set_streaming_width(p.get_data_length());
    p.set_extension(&m_batch);
    sc_core::sc_time delay(issue_ps, sc_core::SC_PS);
    socket->b_transport(p, delay);
    p.clear_extension(&m_batch);
    out.lines = (m_batch.reads.size() + m_batch.writebacks.size()) * m_batch.weight;
    out.l3_hits = m_batch.l3_hits;
    out.l3_misses = m_batch.l3_misses;
    out.dram_read_bytes = m_batch.dram_read_bytes;
    out.dram_write_bytes = m_batch.dram_write_bytes;
    m_batch.clear();
    return now + static_cast<double>(delay.value());
}

}  // namespace archsim
