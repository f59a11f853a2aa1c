#pragma once
// A DRAM interface as a TLM-2.0 loosely-timed target with per-channel bandwidth and latency.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <vector>

#include "arch/memory/dram_config.h"

namespace archsim {

class TraceWriter;

/// Marks a payload as a run of consecutive bursts: `transaction_bytes` each (the last one
/// shorter when the length is not a multiple) at incrementing addresses, every burst on the
/// channel its own address selects. The target times the whole run in closed form (Dram).
/// Without it a payload is one transaction on the channel of its start address.
struct DramBurstRun : tlm::tlm_extension<DramBurstRun> {
    tlm::tlm_extension_base* clone() const override { return new DramBurstRun(*this); }
    void copy_from(const tlm::tlm_extension_base&) override {}
};

/// Models DRAM as `channels` independent servers. A transaction of B bytes arriving at time t
/// (sc_time_stamp() + annotated delay) on channel (address / transaction_bytes) % channels starts
/// when that channel is free, occupies it for B / (bandwidth / channels), and completes latency_ns
/// later; the annotated delay grows to that completion. Each transaction is one trace event
/// (DramRead / DramWrite) on this component. In ideal mode transactions complete at once.
///
/// A burst run (DramBurstRun) of N bursts arriving at t is the same N transactions without N
/// calls: channel c receives the n_c bursts whose addresses map to it, all at t, so they queue
/// back to back and the channel is busy from max(t, free_c) for n_c's bytes / (bandwidth /
/// channels); the run completes latency_ns after its last channel frees. One trace event per
/// channel used (its bytes, from its first burst's start to its last burst's end). The times
/// equal the burst-by-burst ones except for floating-point rounding: the busy time is one
/// product instead of n_c sums, so an event's times can differ by at most 1 ps (tested).
/// Responds TLM_ADDRESS_ERROR_RESPONSE to a zero-length transaction, TLM_OK_RESPONSE otherwise.
class Dram : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<Dram> socket;

    /// @param trace       where transactions are recorded
    /// @param component   this DRAM's index in the trace's component table
    /// @param current_op  operator index stamped on events (owned by the caller)
    Dram(sc_core::sc_module_name name, const DramConfig& cfg, TraceWriter& trace, uint16_t component,
         const uint32_t& current_op);

    /// Total bytes served so far (reads + writes).
    uint64_t bytes_served() const { return m_bytes; }
    /// When each channel is next free, ps (absolute simulated time).
    const std::vector<double>& channel_free_ps() const { return m_channel_free_ps; }
    /// Transactions numbered so far (the next event's `seq`).
    uint32_t transactions() const { return m_seq; }
    /// Sets the channels' free times and advances the counters as `transactions` transactions of
    /// `bytes` would: a memoized kernel's replay (arch/common/kernel_memo.h) leaves the DRAM as
    /// simulating it would have.
    void restore(const std::vector<double>& channel_free_ps, uint32_t transactions, uint64_t bytes) {
        m_channel_free_ps = channel_free_ps;
        m_seq += transactions;
        m_bytes += bytes;
    }

private:
    void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
    /// Times a DramBurstRun payload (see the class comment); returns its completion, ps.
    double burst_run(tlm::tlm_generic_payload& p, double now_ps);

    DramConfig m_cfg;
    TraceWriter& m_trace;
    uint16_t m_component;
    const uint32_t& m_current_op;
    double m_ps_per_byte_per_channel;
    std::vector<double> m_channel_free_ps;
    uint64_t m_bytes = 0;
    uint32_t m_seq = 0;
};

}  // namespace archsim
