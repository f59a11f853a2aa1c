#pragma once
// A link as a TLM-2.0 target: a transfer occupies it for bytes / bandwidth after whatever is
// already on it (contention), and arrives one latency later.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <string>

#include "arch/interconnect/link_spec.h"

namespace archsim {

/// One direction of one device's link (its NVLink/NVSwitch port, its NIC share, its PCIe slot),
/// loosely timed: b_transport serializes transfers in arrival order at the link's sustained
/// rate (LinkSpec::effective_bytes_per_s, or the rate the payload's streaming width asks for,
/// see below) and adds the link's latency to the annotated delay. The payload's data length is
/// the transfer's size in bytes; no data is carried (a null data pointer is accepted). A
/// payload whose streaming width is not its data length carries, in the streaming width, a
/// rate in MB/s that the sender's protocol sustains below the link's (NCCL's LL halves it): the
/// transfer then takes the longer of the two. Response: TLM_OK_RESPONSE, or
/// TLM_COMMAND_ERROR_RESPONSE for anything but a write (a link only sends).
class Link : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<Link> socket;

    Link(sc_core::sc_module_name name, const LinkSpec& spec);

    const LinkSpec& spec() const { return m_spec; }
    double bytes() const { return m_bytes; }         ///< bytes sent so far
    double busy_ps() const { return m_busy_ps; }     ///< time spent sending so far
    /// Time transfers waited for the link to be free (contention), ps.
    double queued_ps() const { return m_queued_ps; }

private:
    void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);

    LinkSpec m_spec;
    sc_core::sc_time m_free_at;  ///< when the last accepted transfer leaves the link
    double m_bytes = 0, m_busy_ps = 0, m_queued_ps = 0;
};

}  // namespace archsim
