#pragma once
// The DRAM as the mapping searches price it: one queue at its peak rate, plus its latency.
#include <algorithm>
#include <cstdint>

#include "arch/memory/dram_config.h"

namespace archsim {

/// DRAM transfers in cycles of a `clock_mhz` clock: each queues behind the earlier ones at
/// dram.bandwidth_gbps (bytes per cycle = GB/s x 1e3 / MHz) and lands dram.latency_ns after it
/// leaves the queue; an ideal DRAM (dram.ideal) takes no time. The closed form of
/// arch/memory/dram.h's channels for a transfer whose bursts spread evenly over them, cheap
/// enough to price every candidate mapping of a kernel (arch/kpu/kpu_mapping.h,
/// arch/tpu/tpu_mapping.h).
class DramQueue {
public:
    DramQueue(const DramConfig& dram, double clock_mhz)
        : m_bytes_per_cycle(dram.ideal ? 0.0 : dram.bandwidth_gbps * 1e3 / clock_mhz),
          m_latency_cycles(dram.ideal ? 0.0 : dram.latency_ns * 1e-3 * clock_mhz) {}
    /// Queues `bytes` asked for at cycle `issue`; returns the cycle they land (`issue` for none).
    double transfer(double issue, int64_t bytes) {
        if (bytes <= 0 || m_bytes_per_cycle <= 0) return issue;
        m_free = std::max(issue, m_free) + double(bytes) / m_bytes_per_cycle;
        return m_free + m_latency_cycles;
    }
    double bytes_per_cycle() const { return m_bytes_per_cycle; }  ///< 0: an ideal DRAM
    double latency_cycles() const { return m_latency_cycles; }

private:
    double m_bytes_per_cycle, m_latency_cycles, m_free = 0;
};

}  // namespace archsim
