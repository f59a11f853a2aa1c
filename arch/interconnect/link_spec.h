#pragma once
// What one device sees of a link it sends through: bandwidth per direction, the share of it a
// collective library reaches, and the latency of one hop.
#include <string>

namespace archsim {

/// One level of a cluster's interconnect as seen from one device: the device's NVLink/NVSwitch
/// port, its PCIe slot, its share of the node's NICs (InfiniBand or RoCE), or a KPU board link.
/// Bandwidths are per direction and per device, in bytes per second.
struct LinkSpec {
    std::string kind;                   ///< "nvlink", "pcie", "ib", "roce", "board"
    double bandwidth_bytes_per_s = 0;   ///< datasheet rate per direction per device
    /// Fraction of the datasheet rate a collective's copy loop sustains. For NVLink and NICs this
    /// is NCCL's own topology figure over the raw rate (NCCL src/graph/topo.h: SM80_NVLINK_BW 20
    /// of 25 GB/s per NVLink 3 link = 0.8, SM90 20.6 of 25 for NVLink 4 = 0.824, NET_BW 12 of
    /// 12.5 GB/s per 100 Gb/s = 0.96).
    double efficiency = 1.0;
    double latency_ps = 0;              ///< one hop's latency (wire + switch), picoseconds
    /// Sustained bytes per second per direction: bandwidth x efficiency.
    double effective_bytes_per_s() const { return bandwidth_bytes_per_s * efficiency; }
};

}  // namespace archsim
