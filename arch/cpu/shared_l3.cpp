#include "arch/cpu/shared_l3.h"

#include <algorithm>

#include "arch/cpu/line_batch.h"

namespace archsim {

SharedL3::SharedL3(sc_core::sc_module_name name, const CpuConfig& cfg)
    : sc_core::sc_module(name), socket("socket"), dram_socket("dram_socket"),
      m_cache(cfg.l3.bytes(), cfg.l3.ways, cfg.line_bytes), m_line_bytes(cfg.line_bytes),
      m_ps_per_byte(cfg.cycle_ps() / (cfg.l3.bytes_per_cycle * cfg.eff_cache)), m_latency_ps(cfg.l3.latency_cycles * cfg.cycle_ps()),
      m_channels(cfg.dram.channels), m_channel_stride(cfg.dram.transaction_bytes),
      m_port_free_ps(static_cast<size_t>(cfg.cores), 0.0) {
    socket.register_b_transport(this, &SharedL3::b_transport);
}

double SharedL3::dram(uint64_t bytes, bool write, double issue_ps) {
    const double now = static_cast<double>(sc_core::sc_time_stamp().value());
    double done = now + issue_ps;
    if (bytes == 0) return done;
    const uint64_t ch = static_cast<uint64_t>(m_channels);
    for (uint64_t c = 0; c < ch; ++c) {
        const uint64_t share = bytes / ch + (c < bytes % ch ? 1 : 0);
        if (share == 0) continue;
        tlm::tlm_generic_payload p;
        p.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
        p.set_address(c * static_cast<uint64_t>(m_channel_stride));
        p.set_data_ptr(nullptr);
        p.set_data_length(static_cast<unsigned>(share));
        p.set_streaming_width(static_cast<unsigned>(share));
        sc_core::sc_time delay(issue_ps, sc_core::SC_PS);
        dram_socket->b_transport(p, delay);
        done = std::max(done, now + static_cast<double>(delay.value()));
    }
    return done;
}

void SharedL3::b_transport(int /*port*/, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
    LineBatch* batch = nullptr;
    p.get_extension(batch);
    if (!batch || batch->core < 0 || batch->core >= static_cast<int64_t>(m_port_free_ps.size())) {
        p.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
        return;
    }
    uint64_t dram_reads = 0, dram_writes = 0;
    const uint64_t w = batch->weight;  // lines each listed line stands for (set sampling)
    // Host cache misses dominate the L3's lookups (its sets are scattered over megabytes): each
    // lookup first prefetches the set kAhead lines further on (no effect on the result).
    constexpr size_t kAhead = 16;
    const std::vector<uint64_t>& reads = batch->reads;
    for (size_t i = 0; i < std::min(kAhead, reads.size()); ++i) m_cache.prefetch(reads[i]);
    for (size_t i = 0; i < reads.size(); ++i) {
        if (i + kAhead < reads.size()) m_cache.prefetch(reads[i + kAhead]);
        const uint64_t line = reads[i];
        const Cache::Result r = m_cache.access(line, false);
        if (r.hit) batch->l3_hits += w;
        else dram_reads += w;
        if (r.evicted_dirty) dram_writes += w;
    }
    const std::vector<uint64_t>& writebacks = batch->writebacks;
    for (size_t i = 0; i < std::min(kAhead, writebacks.size()); ++i) m_cache.prefetch(writebacks[i]);
    for (size_t i = 0; i < writebacks.size(); ++i) {
        if (i + kAhead < writebacks.size()) m_cache.prefetch(writebacks[i + kAhead]);
        const Cache::Result r = m_cache.access(writebacks[i], true);
        if (r.evicted_dirty) dram_writes += w;
    }
    batch->l3_misses = dram_reads;
    const uint64_t lb = static_cast<uint64_t>(m_line_bytes);
    batch->dram_read_bytes = dram_reads * lb;
    batch->dram_write_bytes = dram_writes * lb;
    const double now = static_cast<double>(sc_core::sc_time_stamp().value());
    const double issue = static_cast<double>(delay.value());
    const size_t core = static_cast<size_t>(batch->core);
    const double port_start = std::max(now + issue, m_port_free_ps[core]);
    const uint64_t lines = (batch->reads.size() + batch->writebacks.size()) * w;
    m_port_free_ps[core] = port_start + static_cast<double>(lines * lb) * m_ps_per_byte;
    double done = lines ? m_port_free_ps[core] + m_latency_ps : now + issue;
    done = std::max(done, dram(batch->dram_read_bytes, false, issue));
    done = std::max(done, dram(batch->dram_write_bytes, true, issue));
    delay = sc_core::sc_time(done - now, sc_core::SC_PS);
    p.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace archsim
