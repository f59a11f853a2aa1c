#pragma once
// One streaming multiprocessor's port to the GPU's shared L2, as a TLM-2.0 initiator.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <algorithm>
#include <cstdint>

#include "arch/gpu/l2_cache.h"

namespace archsim {

/// An SM's loads of CTA operand tiles and stores of output tiles, one TLM transaction each
/// (tagged with the tensor they belong to), through a port of `port_bytes_per_ps` into the L2.
/// Loosely timed: the port is a server whose free time advances with every transfer.
class SmPort : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<SmPort> socket;
    SmPort(sc_core::sc_module_name name, double port_bytes_per_ps)
        : sc_core::sc_module(name), socket("socket"), m_ps_per_byte(1.0 / port_bytes_per_ps) {}

    /// Sends a load (or store) of `bytes` of tile `tile`, which is `part` of a tensor (a load
    /// finds that part's resident chunks in the L2), `issue_ps` after now; returns its absolute
    /// completion, ps: the later of the port's and the L2's. `missed` (if given) says whether a
    /// load went to DRAM.
    double access(TileId tile, int64_t bytes, TensorPart part, bool store, double issue_ps = 0, bool* missed = nullptr) {
        return transact(tile, bytes, part, store, false, issue_ps, missed);
    }
    /// A workspace tile's load or store (a split-K partial sum): written back, not through
    /// (TensorTag); otherwise as access().
    double workspace(TileId tile, int64_t bytes, bool store, double issue_ps = 0) {
        return transact(tile, bytes, {}, store, true, issue_ps, nullptr);
    }

    /// When the port is next free, ps; set by a memoized kernel's replay.
    double free_ps() const { return m_port_free_ps; }
    void set_free_ps(double t) { m_port_free_ps = t; }

private:
    double transact(TileId tile, int64_t bytes, TensorPart part, bool store, bool workspace, double issue_ps, bool* missed) {
        const double now = static_cast<double>(sc_core::sc_time_stamp().value());
        if (bytes <= 0) return now + issue_ps;
        const double port_start = std::max(now + issue_ps, m_port_free_ps);
        m_port_free_ps = port_start + static_cast<double>(bytes) * m_ps_per_byte;
        issue_ps = port_start - now;
        tlm::tlm_generic_payload p;
        TensorTag tag;
        tag.part = part;
        tag.workspace = workspace;
        tag.tile = tile;
        p.set_extension(&tag);
        p.set_command(store ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
        p.set_address(tile.key());
        p.set_data_ptr(nullptr);
        p.set_data_length(static_cast<unsigned>(std::min<int64_t>(bytes, 0x7fffffff)));
        p.set_streaming_width(p.get_data_length());
        sc_core::sc_time delay(issue_ps, sc_core::SC_PS);
        {
            // the tag lives on this stack: take it back even when the L2 throws (a causality check)
            struct Detach {
                tlm::tlm_generic_payload& p;
                TensorTag* tag;
                ~Detach() { p.clear_extension(tag); }
            } detach{p, &tag};
            socket->b_transport(p, delay);
        }
        if (missed) *missed = tag.missed;
        return std::max(m_port_free_ps, now + static_cast<double>(delay.value()));
    }

    double m_ps_per_byte;
    double m_port_free_ps = 0;
};

}  // namespace archsim
