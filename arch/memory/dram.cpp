#include "arch/memory/dram.h"

#include <algorithm>
#include <cmath>

#include "traces/trace_writer.h"

namespace archsim {

Dram::Dram(sc_core::sc_module_name name, const DramConfig& cfg, TraceWriter& trace, uint16_t component,
           const uint32_t& current_op)
    : sc_core::sc_module(name), socket("socket"), m_cfg(cfg), m_trace(trace), m_component(component),
      m_current_op(current_op),
      // GB/s = 1e9 B / 1e12 ps = 1e-3 B/ps; per channel: bandwidth / channels
      m_ps_per_byte_per_channel(static_cast<double>(cfg.channels) / (cfg.bandwidth_gbps * 1e-3)),
      m_channel_free_ps(static_cast<size_t>(cfg.channels), 0.0) {
    socket.register_b_transport(this, &Dram::b_transport);
}

double Dram::burst_run(tlm::tlm_generic_payload& p, double now_ps) {
    const uint64_t bytes = p.get_data_length(), txn = static_cast<uint64_t>(m_cfg.transaction_bytes);
    const uint64_t channels = static_cast<uint64_t>(m_cfg.channels);
    const uint64_t bursts = (bytes + txn - 1) / txn, first = p.get_address() / txn;
    TraceEvent e;
    e.op = m_current_op;
    e.seq = m_seq;
    e.component = m_component;
    e.kind = static_cast<uint8_t>(p.is_write() ? EventKind::DramWrite : EventKind::DramRead);
    m_seq += static_cast<uint32_t>(bursts);
    if (m_cfg.ideal) {
        e.t_ps = static_cast<uint64_t>(std::llround(now_ps));
        e.bytes = bytes;
        m_trace.emit(e);
        return now_ps;
    }
    double done = now_ps;
    const uint64_t used = std::min(bursts, channels);
    for (uint64_t i = 0; i < used; ++i) {  // burst i, i + channels, ... share a channel
        const size_t ch = static_cast<size_t>((first + i) % channels);
        const uint64_t n = (bursts - i + channels - 1) / channels;
        // every burst is full but the run's last, which falls on this channel when (bursts - 1) % channels == i
        const uint64_t ch_bytes = n * txn - ((bursts - 1) % channels == i ? bursts * txn - bytes : 0);
        const double start = std::max(now_ps, m_channel_free_ps[ch]);
        const double service = static_cast<double>(ch_bytes) * m_ps_per_byte_per_channel;
        m_channel_free_ps[ch] = start + service;
        done = std::max(done, start + service + m_cfg.latency_ns * 1e3);
        e.t_ps = static_cast<uint64_t>(std::llround(start));
        e.dur_ps = static_cast<uint64_t>(std::llround(start + service)) - e.t_ps;
        e.bytes = ch_bytes;
        m_trace.emit(e);
    }
    return done;
}

void Dram::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
    const uint64_t bytes = p.get_data_length();
    if (bytes == 0) {
        p.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    const double now_ps = static_cast<double>((sc_core::sc_time_stamp() + delay).value());  // resolution: 1 ps
    m_bytes += bytes;
    p.set_response_status(tlm::TLM_OK_RESPONSE);
    DramBurstRun* run = nullptr;
    p.get_extension(run);
    if (run) {
        const double done = burst_run(p, now_ps);
        if (done > now_ps) delay += sc_core::sc_time(done - now_ps, sc_core::SC_PS);
        return;
    }
    TraceEvent e;
    e.bytes = bytes;
    e.op = m_current_op;
    e.seq = m_seq++;
    e.component = m_component;
    e.kind = static_cast<uint8_t>(p.is_write() ? EventKind::DramWrite : EventKind::DramRead);
    if (m_cfg.ideal) {
        e.t_ps = static_cast<uint64_t>(std::llround(now_ps));
    } else {
        const size_t ch = static_cast<size_t>((p.get_address() / static_cast<uint64_t>(m_cfg.transaction_bytes)) %
                                              static_cast<uint64_t>(m_cfg.channels));
        const double start = std::max(now_ps, m_channel_free_ps[ch]);
        const double service = static_cast<double>(bytes) * m_ps_per_byte_per_channel;
        m_channel_free_ps[ch] = start + service;
        const double done = start + service + m_cfg.latency_ns * 1e3;
        e.t_ps = static_cast<uint64_t>(std::llround(start));
        e.dur_ps = static_cast<uint64_t>(std::llround(service));
        delay += sc_core::sc_time(done - now_ps, sc_core::SC_PS);
    }
    m_trace.emit(e);
}

}  // namespace archsim
