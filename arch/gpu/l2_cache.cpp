#include "arch/gpu/l2_cache.h"

#include <algorithm>
#include <cmath>

#include "arch/memory/dma.h"
#include "traces/trace_writer.h"

namespace archsim {

L2Cache::L2Cache(sc_core::sc_module_name name, int64_t capacity_bytes, double bytes_per_ps, double latency_ps,
                 TraceWriter& trace, uint16_t component, const uint32_t& current_op, Dma& dram_port)
    : sc_core::sc_module(name), socket("socket"), m_lines(capacity_bytes), m_ps_per_byte(1.0 / bytes_per_ps),
      m_latency_ps(latency_ps), m_trace(trace), m_component(component), m_current_op(current_op), m_dram(dram_port) {
    socket.register_b_transport(this, &L2Cache::b_transport);
}

void L2Cache::b_transport(int /*sm*/, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
    const int64_t bytes = p.get_data_length();
    if (bytes <= 0) {
        p.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    TensorTag* tag = nullptr;
    p.get_extension(tag);
    const double now = static_cast<double>(sc_core::sc_time_stamp().value());
    const double arrive = now + static_cast<double>(delay.value());
    const double start = std::max(arrive, m_free_ps);
    const double service = static_cast<double>(bytes) * m_ps_per_byte;
    m_free_ps = start + service;
    double done = start + service + m_latency_ps;
    const uint64_t key = p.get_address();
    if (p.is_read()) {
        const bool hit = (tag && tag->tensor >= 0 && m_lines.hit(whole_key(tag->tensor), tag->tensor, kWhole)) ||
                         m_lines.hit(key, tag ? tag->tile.owner : -1, tag ? tag->tile.local : 0);
        if (hit) {
            ++m_hits;
        } else {
            ++m_misses;
            if (tag) tag->missed = true;
            const double dram_done = m_dram.transfer(bytes, /*write=*/false, start - now);
            done = std::max(done, dram_done + m_latency_ps);
            m_lines.insert(key, bytes, tag ? tag->tile.owner : -1, tag ? tag->tile.local : 0);
        }
    } else {
        const double dram_done = m_dram.transfer(bytes, /*write=*/true, start - now);
        done = std::max(done, dram_done);
        if (tag && tag->whole) {
            if (tag->tensor >= 0) m_lines.insert(whole_key(tag->tensor), bytes, tag->tensor, kWhole);
            else m_lines.insert(key, bytes, tag->tile.owner, tag->tile.local);
        }
    }
    TraceEvent e;
    e.t_ps = static_cast<uint64_t>(std::llround(start));
    e.dur_ps = static_cast<uint64_t>(std::llround(service));
    e.bytes = static_cast<uint64_t>(bytes);
    e.op = m_current_op;
    e.component = m_component;
    e.kind = static_cast<uint8_t>(p.is_read() ? EventKind::SramRead : EventKind::SramWrite);
    m_trace.emit(e);
    delay = sc_core::sc_time(done - now, sc_core::SC_PS);
    p.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace archsim
