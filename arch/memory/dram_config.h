#pragma once
// Timing and energy of an off-chip DRAM interface (shared by every machine model).
#include <cstdint>

namespace archsim {

/// DRAM interface parameters (validated by the owning machine's parameter schema).
struct DramConfig {
    double bandwidth_gbps = 34.0;    ///< peak bandwidth over all channels, GB/s (1e9 B/s)
    double latency_ns = 100.0;       ///< fixed access latency added to every transaction, ns
    int64_t channels = 1;            ///< independent channels, interleaved per transaction
    int64_t transaction_bytes = 64;  ///< bytes per TLM transaction (a burst)
    bool ideal = false;              ///< true: zero latency, infinite bandwidth (SCALE-Sim CALC mode)
    bool per_burst = false;          ///< true: a DMA transfer is one TLM call and trace event per burst (the
                                     ///< reference); false: one burst run per transfer, timed in closed form
    double pj_per_byte = 0;          ///< access energy, read or write, pJ/byte (each kind declares its default)
    double capacity_gib = 0;         ///< memory size, GiB (2^30 bytes); 0 = not given, footprints not checked
};

}  // namespace archsim
