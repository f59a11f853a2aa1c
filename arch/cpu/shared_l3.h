#pragma once
// The CPU's shared last-level cache as a TLM-2.0 target in front of DRAM.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <vector>

#include "arch/cpu/cache.h"
#include "arch/cpu/cpu_config.h"

namespace archsim {

/// Shared L3 (line-granular set-associative LRU, cache.h). A core's transaction carries a
/// LineBatch: each read is looked up (a miss is fetched from DRAM and allocated), each write-back
/// allocated dirty without a fetch; dirty victims are written to DRAM. Timing: the batch's lines
/// cross that core's L3 port at l3.bytes_per_cycle x efficiency.cache starting at the request time (sc_time_stamp()
/// + delay), the first arrives l3.latency_cycles later; misses and victims go to DRAM as one read
/// and one write transaction per channel (lines interleave over channels), through the contended
/// DRAM target. The delay grows to the later of the port and DRAM completions. Under cache set
/// sampling each listed line stands for LineBatch::weight lines, in the counts and the timing.
class SharedL3 : public sc_core::sc_module {
public:
    /// Bound by every core's initiator socket (one target, many initiators).
    tlm_utils::multi_passthrough_target_socket<SharedL3> socket;
    tlm_utils::simple_initiator_socket<SharedL3> dram_socket;

    SharedL3(sc_core::sc_module_name name, const CpuConfig& cfg);

    /// The contents and each core's port time, for putting them back (CpuMachine::trial).
    struct Snapshot {
        Cache cache;
        std::vector<double> port_free_ps;
    };
    Snapshot snapshot() const { return {m_cache, m_port_free_ps}; }
    void restore(const Snapshot& s) { m_cache = s.cache, m_port_free_ps = s.port_free_ps; }
    const Cache& cache() const { return m_cache; }
    Cache& cache() { return m_cache; }

private:
    void b_transport(int port, tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
    /// Sends `bytes` to DRAM spread over the channels at `issue_ps` after now; returns completion, ps.
    double dram(uint64_t bytes, bool write, double issue_ps);

    Cache m_cache;
    int64_t m_line_bytes;
    double m_ps_per_byte, m_latency_ps;
    int64_t m_channels, m_channel_stride;
    std::vector<double> m_port_free_ps;
};

}  // namespace archsim
