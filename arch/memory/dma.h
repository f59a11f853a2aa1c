#pragma once
// A DMA engine: the TLM-2.0 initiator that moves tiles between DRAM and on-chip buffers.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>

namespace archsim {

/// Splits a transfer into DRAM transactions of `transaction_bytes` and sends them over its
/// initiator socket, loosely timed: all are issued at the current simulated time and the target
/// annotates each with its completion delay. Consecutive transactions get consecutive
/// addresses, so they interleave over the DRAM channels. Carries no data (a timing model).
/// With `per_burst` false (dram.per_burst) the transactions of one transfer travel as one burst
/// run (DramBurstRun: the target times them in closed form, one call and one event per channel)
/// instead of one call and one event each; addresses and timing are the same (arch/memory/dram.h).
class Dma : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<Dma> socket;

    Dma(sc_core::sc_module_name name, int64_t transaction_bytes, bool per_burst = true);

    /// Moves `bytes` between DRAM and a buffer (`write` = towards DRAM), issued `issue_delay_ps`
    /// after the current simulated time (loosely timed); returns the absolute completion time in
    /// ps (the issue time if bytes == 0).
    double transfer(int64_t bytes, bool write, double issue_delay_ps = 0.0);
    /// The address the next transfer starts at (its bursts' channels follow from it).
    uint64_t next_address() const { return m_next_addr; }
    /// Moves the next address on by `bytes` (a memoized kernel's replay).
    void advance(uint64_t bytes) { m_next_addr += bytes; }

private:
    int64_t m_txn;
    bool m_per_burst;
    uint64_t m_next_addr = 0;
};

}  // namespace archsim
