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
    int64_t switch_hops = 3;             ///< switch hops between two nodes under different leaves (leaf-spine-leaf: 3)
    int64_t leaf_nodes = 0;              ///< nodes one switch hop apart (a leaf's, or a rail group's); 0 = from the topology
    std::string adaptive_routing = "auto";  ///< auto (on for ib, off for roce) | on | off
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
    /// Nodes one switch hop apart: network.leaf_nodes, else by the topology: rail-optimized, a
    /// rail group of 32 nodes (a DGX SuperPOD H100 scalable unit: NIC i of each node on leaf i,
    /// "one hop away from the other 31 nodes in a SU", NVIDIA DGX SuperPOD H100 reference
    /// architecture, network fabrics); fat-tree, the nodes whose every NIC fits one leaf at 1:1, 32
    /// down ports of a 64-port NDR leaf (Quantum-2 QM9700) over the NICs per node.
    int64_t leaf_group_nodes() const;
    /// Whether the fabric spreads flows per packet (InfiniBand adaptive routing, Spectrum-X), or
    /// hashes each flow to one path (ECMP: standard RoCE Ethernet).
    bool adaptive() const { return adaptive_routing == "on" || (adaptive_routing == "auto" && network_kind == "ib"); }
    /// One device's share of its node's NICs (nics x rate / devices per node) for a
    /// communicator whose ranks span `span_nodes` consecutive nodes: within a leaf group one switch
    /// hop at the full share; beyond it network.switch_hops, the share over the oversubscription
    /// and, without adaptive routing, times 0.60 / 0.95 (flow collisions under ECMP: standard
    /// Ethernet sustains about 60% of its throughput where an adaptively routed fabric sustains
    /// 95%, NVIDIA's statement on the xAI Colossus cluster, Oct 2024).
    LinkSpec inter_link(int64_t span_nodes) const;
    /// One device's path to host memory (a GPUDirect-less transfer bounces through it).
    LinkSpec host_link() const;
    /// The settings this cluster names that are not fully modeled, one line each saying what is
    /// not (RoCE: per-hop latency as InfiniBand's); empty when none.
    std::vector<std::string> unmodeled_settings() const;
};

/// The declared keys of a cluster file (`archsim params cluster`).
const ParamBinder<ClusterConfig>& cluster_params();

/// Reads a cluster file: every key validated against its declaration, `device` resolved against
/// the file's folder and required to exist, then `overrides` ("key=value"). Throws UserError
/// "<file>: <key>: <reason>".
ClusterConfig load_cluster(const std::string& file, const std::vector<std::string>& overrides = {});

}  // namespace archsim
