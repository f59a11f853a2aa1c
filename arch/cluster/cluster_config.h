#pragma once
// A cluster description (configs/clusters/*.toml): which device, how many per node, how the
// devices of a node are connected, and the network between nodes.
#include <cstdint>
#include <string>
#include <vector>

#include "arch/interconnect/link_spec.h"
#include "sim/base/params.h"

namespace archsim {

/// A cluster as the job simulator needs it, every value validated. Bandwidths are per device
/// and per direction.
struct ClusterConfig {
    std::string name;
    std::string file;           ///< the TOML file it was read from
    std::string device;         ///< machine config of one device, resolved against the file's folder
    int64_t nodes = 1;          ///< nodes the cluster holds
    // node
    int64_t devices_per_node = 8;
    std::string intra_kind = "nvlink";   ///< nvlink | pcie | board
    double intra_gbps = 300;             ///< GB/s per device per direction
    double intra_efficiency = 0.8;       ///< fraction a collective sustains
    double intra_latency_ns = 0;
    double host_link_gbps = 32;          ///< GB/s per device to host memory (PCIe), for host-bounced transfers
    std::string generation = "ampere";   ///< NCCL's GPU generation (volta, ampere, hopper) or "other"
    std::string host_cpu = "amd";        ///< amd | intel (NCCL's LL limits across nodes)
    double intra_pj_per_byte = 0;        ///< energy of one byte over the node's links; 0 = not modeled
    // network
    int64_t nics_per_node = 8;
    double nic_gbit = 200;               ///< Gb/s per NIC, per direction
    std::string network_kind = "ib";     ///< ib | roce
    double nic_efficiency = 0.96;
    double switch_latency_ns = 0;        ///< per switch hop
    std::string topology = "fat-tree";   ///< fat-tree | rail-optimized
    int64_t switch_hops = 3;             ///< switch hops between two nodes (leaf-spine-leaf: 3)
    double oversubscription = 1.0;       ///< bandwidth divisor above the leaf (1 = non-blocking)
    double inter_pj_per_byte = 0;        ///< energy of one byte over the network; 0 = not modeled
    // power outside the devices
    double host_w = 0;                   ///< per node: host CPUs (and what the config's source counts with them), W; 0 = not modeled
    double nic_w = 0;                    ///< per compute-fabric NIC, W; 0 = not modeled

    /// Nodes a job of `devices` devices occupies (whole nodes).
    int64_t nodes_for(int64_t devices) const { return (devices + devices_per_node - 1) / devices_per_node; }
    /// Power one node draws outside its devices, W: host_w + nics x nic_w (switches not modeled).
    double node_overhead_w() const { return host_w + double(nics_per_node) * nic_w; }

    /// Devices in the cluster.
    int64_t devices() const { return nodes * devices_per_node; }
    /// One device's port inside its node.
    LinkSpec intra_link() const;
    /// One device's share of its node's NICs (nics x rate / devices per node), over the
    /// oversubscription, its latency the switch hops'.
    LinkSpec inter_link() const;
    /// One device's path to host memory (a GPUDirect-less transfer bounces through it).
    LinkSpec host_link() const;
    /// The settings this cluster names that change nothing simulated, one line each saying so
    /// (network.topology = "rail-optimized", network.kind = "roce"); empty when none.
    std::vector<std::string> unmodeled_settings() const;
};

/// The declared keys of a cluster file (`archsim params cluster`).
const ParamBinder<ClusterConfig>& cluster_params();

/// Reads a cluster file: every key validated against its declaration, `device` resolved against
/// the file's folder and required to exist, then `overrides` ("key=value"). Throws UserError
/// "<file>: <key>: <reason>".
ClusterConfig load_cluster(const std::string& file, const std::vector<std::string>& overrides = {});

}  // namespace archsim
