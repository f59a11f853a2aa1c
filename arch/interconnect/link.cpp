#include "arch/interconnect/link.h"

#include <algorithm>

namespace archsim {

Link::Link(sc_core::sc_module_name name, const LinkSpec& spec) : sc_module(name), socket("socket"), m_spec(spec) {
    socket.register_b_transport(this, &Link::b_transport);
}

void Link::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
    if (p.get_command() != tlm::TLM_WRITE_COMMAND) {
        p.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
        return;
    }
    const double bytes = double(p.get_data_length());
    double rate = m_spec.effective_bytes_per_s();
    if (p.get_streaming_width() != p.get_data_length() && p.get_streaming_width() > 0)
        rate = std::min(rate, double(p.get_streaming_width()) * 1e6);
    const sc_core::sc_time arrive = sc_core::sc_time_stamp() + delay;
    const sc_core::sc_time start = std::max(arrive, m_free_at);
    const double send_ps = rate > 0 ? bytes / rate * 1e12 : 0.0;
    m_free_at = start + sc_core::sc_time(send_ps, sc_core::SC_PS);
    m_bytes += bytes, m_busy_ps += send_ps, m_queued_ps += (start - arrive).to_seconds() * 1e12;
    delay = m_free_at - sc_core::sc_time_stamp() + sc_core::sc_time(m_spec.latency_ps, sc_core::SC_PS);
    p.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace archsim
