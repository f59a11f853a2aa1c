#include "arch/memory/dma.h"

#include <algorithm>

#include "arch/memory/dram.h"

namespace archsim {

Dma::Dma(sc_core::sc_module_name name, int64_t transaction_bytes, bool per_burst)
    : sc_core::sc_module(name), socket("socket"), m_txn(transaction_bytes), m_per_burst(per_burst) {}

double Dma::transfer(int64_t bytes, bool write, double issue_delay_ps) {
    const double now_ps = static_cast<double>(sc_core::sc_time_stamp().value());
    double done = now_ps + issue_delay_ps;
    tlm::tlm_generic_payload p;
    p.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    p.set_data_ptr(nullptr);
    DramBurstRun run;
    // a burst run is at most as long as a payload can say (32-bit length), in whole bursts
    const int64_t step = m_per_burst ? m_txn : std::max<int64_t>(m_txn, (int64_t{1} << 31) / m_txn * m_txn);
    if (!m_per_burst) p.set_extension(&run);
    for (int64_t off = 0; off < bytes; off += step) {
        const int64_t n = std::min(step, bytes - off);
        p.set_address(m_next_addr);
        p.set_data_length(static_cast<unsigned>(n));
        p.set_streaming_width(static_cast<unsigned>(n));
        p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        sc_core::sc_time delay(issue_delay_ps, sc_core::SC_PS);
        socket->b_transport(p, delay);
        m_next_addr += static_cast<uint64_t>((n + m_txn - 1) / m_txn * m_txn);
        done = std::max(done, now_ps + static_cast<double>(delay.value()));
    }
    if (!m_per_burst) p.clear_extension(&run);
    return done;
}

}  // namespace archsim
