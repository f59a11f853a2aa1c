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
    const int32_t owner = tag ? tag->tile.owner : -1;
    const uint64_t local = tag ? tag->tile.local : 0;
    const bool workspace = tag && tag->workspace;
    if (p.is_read()) {
        if (workspace) m_workspace.read_at(key, arrive);
        int64_t miss_bytes = 0;
        if (!m_lines.hit(key, owner, local)) {
            const double share = tag && tag->part.tensor >= 0 ? resident_share(tag->part) : 0.0;
            miss_bytes = std::max<int64_t>(0, bytes - static_cast<int64_t>(std::llround(static_cast<double>(bytes) * share)));
        }
        if (miss_bytes == 0) {
            ++m_hits;
        } else {
            ++m_misses;
            if (tag) tag->missed = true;
            // a workspace tile evicted before its reader: its dirty lines went back to DRAM first
            double after = start - now;
            if (workspace) after = m_dram.transfer(miss_bytes, /*write=*/true, after) - now;
            const double dram_done = m_dram.transfer(miss_bytes, /*write=*/false, after);
            done = std::max(done, dram_done + m_latency_ps);
            m_lines.insert(key, bytes, owner, local);
        }
    } else if (workspace) {
        m_lines.insert(key, bytes, owner, local);  // written back: resident and dirty, no DRAM write now
    } else {
        done = std::max(done, m_dram.transfer(bytes, /*write=*/true, start - now));
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
    // the completion as the initiator sees it (whole ps)
    if (workspace && !p.is_read()) m_workspace.written(key, now + static_cast<double>(delay.value()));
    p.set_response_status(tlm::TLM_OK_RESPONSE);
}

void L2Cache::retain(int32_t tensor, int64_t bytes) {
    for (int64_t i = 0; i < kChunks; ++i) {
        const int64_t chunk = bytes * (i + 1) / kChunks - bytes * i / kChunks;
        const TileId id{tensor, kChunk0 + static_cast<uint64_t>(i)};
        m_lines.insert(id.key(), chunk, id.owner, id.local);
    }
}

double L2Cache::resident_share(const TensorPart& part) {
    const double lo = std::clamp(part.lo, 0.0, 1.0), hi = std::clamp(part.hi, lo, 1.0);
    const double n = static_cast<double>(kChunks);
    const int64_t first = std::min<int64_t>(kChunks - 1, static_cast<int64_t>(std::floor(lo * n)));
    const int64_t last = std::max(first, std::min<int64_t>(kChunks - 1, static_cast<int64_t>(std::ceil(hi * n)) - 1));
    double resident = 0;
    for (int64_t i = first; i <= last; ++i) {
        const TileId id{part.tensor, kChunk0 + static_cast<uint64_t>(i)};
        if (!m_lines.hit(id.key(), id.owner, id.local)) continue;
        // an empty part (lo == hi) counts its one chunk whole
        resident += hi > lo ? std::min(hi, double(i + 1) / n) - std::max(lo, double(i) / n) : 1.0;
    }
    return hi > lo ? resident / (hi - lo) : resident;
}

}  // namespace archsim
