#include "arch/cluster/cluster_config.h"

#include <algorithm>
#include <filesystem>

#include "sim/base/error.h"

namespace archsim {

namespace fs = std::filesystem;

LinkSpec ClusterConfig::intra_link() const {
    return {intra_kind, intra_gbps * 1e9, intra_efficiency, intra_latency_ns * 1e3};
}

int64_t ClusterConfig::leaf_group_nodes() const {
    if (leaf_nodes > 0) return leaf_nodes;
    constexpr int64_t kRailGroupNodes = 32;  // a DGX SuperPOD H100 scalable unit
    constexpr int64_t kLeafDownPorts = 32;   // a 64-port Quantum-2 QM9700 leaf at 1:1
    return topology == "rail-optimized" ? kRailGroupNodes : std::max<int64_t>(1, kLeafDownPorts / std::max<int64_t>(1, nics_per_node));
}

LinkSpec ClusterConfig::inter_link(int64_t span_nodes) const {
    const double share = double(nics_per_node) * nic_gbit / 8.0 * 1e9 / double(devices_per_node);
    if (span_nodes <= leaf_group_nodes()) return {network_kind, share, nic_efficiency, switch_latency_ns * 1e3};
    constexpr double kEcmpOverAdaptive = 0.60 / 0.95;  // NVIDIA on xAI Colossus: standard Ethernet 60%, Spectrum-X 95% of throughput
    const double eff = nic_efficiency * (adaptive() ? 1.0 : kEcmpOverAdaptive);
    return {network_kind, share / oversubscription, eff, double(switch_hops) * switch_latency_ns * 1e3};
}

LinkSpec ClusterConfig::host_link() const { return {"pcie", host_link_gbps * 1e9, 1.0, 0.0}; }

std::vector<std::string> ClusterConfig::unmodeled_settings() const {
    std::vector<std::string> out;
    if (network_kind != "ib")
        out.push_back("network.kind = " + network_kind + ": a switch hop's latency as InfiniBand's (network.switch_latency_ns; no Ethernet "
                      "switch figure published), congestion as flow collisions beyond the leaf without adaptive routing (DCQCN and PFC "
                      "not modeled)");
    return out;
}

// Defaults: a DGX A100 node (NVIDIA DGX A100 User Guide / datasheet: 8 A100-SXM4 on six
// NVSwitches, 12 NVLink 3 links of 25 GB/s per direction per GPU = 300 GB/s; 8 ConnectX-6
// HDR 200 Gb/s NICs for the compute fabric; 2 AMD EPYC 7742; PCIe gen4 x16 per GPU, 32 GB/s).
const ParamBinder<ClusterConfig>& cluster_params() {
    static const ParamBinder<ClusterConfig> b = [] {
        ParamBinder<ClusterConfig> b;
        using C = ClusterConfig;
        b.string("name", [](C& c) -> std::string& { return c.name; }, "cluster", {}, "Free-text name shown in reports");
        b.string("device", [](C& c) -> std::string& { return c.device; }, "", {},
                 "Machine config of one device (a path relative to this file), e.g. \"../gpu/a100_sxm4_80gb.toml\"");
        at_least(b.integer("nodes", [](C& c) -> int64_t& { return c.nodes; }, 1, "nodes", "Nodes in the cluster"), 1);
        at_least(b.integer("node.devices", [](C& c) -> int64_t& { return c.devices_per_node; }, 8, "devices", "Devices per node (DGX A100: 8)"), 1);
        b.string("node.interconnect", [](C& c) -> std::string& { return c.intra_kind; }, "nvlink", {"nvlink", "pcie", "board"},
                 "How a node's devices reach each other: NVLink (through NVSwitch: every pair at the full per-device rate), PCIe, or a board link");
        above(b.real("node.bandwidth_gbps", [](C& c) -> double& { return c.intra_gbps; }, 300.0, "GB/s",
                     "Per device and direction inside the node (DGX A100: 12 NVLink 3 links x 25 GB/s)"), 0);
        at_most(above(b.real("node.efficiency", [](C& c) -> double& { return c.intra_efficiency; }, 0.8, "fraction",
                             "Share of node.bandwidth_gbps a collective sustains (NCCL src/graph/topo.h: SM80_NVLINK_BW 20 of 25 GB/s per link)"), 0), 1);
        at_least(b.real("node.latency_ns", [](C& c) -> double& { return c.intra_latency_ns; }, 0.0, "ns",
                        "Extra latency of one hop inside the node beyond NCCL's per-step latency (0: NCCL's constants only)"), 0);
        above(b.real("node.host_link_gbps", [](C& c) -> double& { return c.host_link_gbps; }, 32.0, "GB/s",
                     "Per device to host memory: PCIe gen4 x16, 32 GB/s per direction (a transfer without GPUDirect RDMA bounces through it)"), 0);
        b.string("node.generation", [](C& c) -> std::string& { return c.generation; }, "ampere", {"volta", "ampere", "hopper", "other"},
                 "GPU generation for NCCL's protocol limits (LL bandwidth caps); other: none");
        b.string("node.host_cpu", [](C& c) -> std::string& { return c.host_cpu; }, "amd", {"amd", "intel"},
                 "Host CPU vendor (NCCL caps LL's bandwidth across nodes by it; DGX A100: AMD EPYC 7742)");
        at_least(b.real("node.pj_per_byte", [](C& c) -> double& { return c.intra_pj_per_byte; }, 0.0, "pJ/byte",
                        "Energy of one byte sent over the node's links; 0 = not modeled (reported as such)"), 0);
        at_least(b.integer("network.nics", [](C& c) -> int64_t& { return c.nics_per_node; }, 8, "NICs", "Compute-fabric NICs per node (DGX A100: 8 ConnectX-6)"), 0);
        above(b.real("network.nic_gbit", [](C& c) -> double& { return c.nic_gbit; }, 200.0, "Gb/s", "Per NIC and direction (HDR InfiniBand: 200 Gb/s)"), 0);
        b.string("network.kind", [](C& c) -> std::string& { return c.network_kind; }, "ib", {"ib", "roce"},
                 "InfiniBand or RDMA over Converged Ethernet: both priced by network.nic_gbit, network.efficiency and the switch hops; "
                 "they differ by network.adaptive_routing's default (InfiniBand routes adaptively, standard RoCE hashes flows)");
        b.string("network.adaptive_routing", [](C& c) -> std::string& { return c.adaptive_routing; }, "auto", {"auto", "on", "off"},
                 "Whether traffic beyond a leaf group is spread per packet (InfiniBand adaptive routing, Spectrum-X) or hashed per "
                 "flow (ECMP), which sustains 0.60 / 0.95 of it (NVIDIA on xAI Colossus, 2024: 60% against 95%); auto: on for ib, "
                 "off for roce");
        at_most(above(b.real("network.efficiency", [](C& c) -> double& { return c.nic_efficiency; }, 0.96, "fraction",
                             "Share of the NIC rate a collective sustains (NCCL src/graph/topo.h: NET_BW 12 GB/s per 100 Gb/s = 0.96)"), 0), 1);
        at_least(b.real("network.switch_latency_ns", [](C& c) -> double& { return c.switch_latency_ns; }, 130.0, "ns",
                        "Port-to-port latency of one switch (NVIDIA Quantum HDR QM8700 datasheet: 130 ns)"), 0);
        b.string("network.topology", [](C& c) -> std::string& { return c.topology; }, "fat-tree", {"fat-tree", "rail-optimized"},
                 "fat-tree: a node's NICs on one leaf, the nodes of a leaf one switch apart, the others network.switch_hops through "
                 "the spine; rail-optimized: NIC i of every node on leaf i, so a communicator's same-rail traffic (NCCL's rings and "
                 "trees connect same-index GPUs; PXN moves cross-rail traffic onto NVLink) is one switch apart within a rail "
                 "group (network.leaf_nodes) and crosses the spine beyond it");
        at_least(b.integer("network.switch_hops", [](C& c) -> int64_t& { return c.switch_hops; }, 3, "switches",
                           "Switches between the NICs of two nodes under different leaves (two-level fat tree: leaf-spine-leaf = 3)"), 1);
        at_least(b.integer("network.leaf_nodes", [](C& c) -> int64_t& { return c.leaf_nodes; }, 0, "nodes",
                           "Nodes one switch hop apart, under one leaf (fat-tree) or in one rail group (rail-optimized); 0 = by the "
                           "topology: 32 for rail-optimized (a DGX SuperPOD H100 scalable unit), 32 / network.nics for fat-tree "
                           "(a 64-port Quantum-2 QM9700 leaf at 1:1)"), 0);
        at_least(b.real("network.oversubscription", [](C& c) -> double& { return c.oversubscription; }, 1.0, "ratio",
                        "Leaf downlink over uplink bandwidth (1 = non-blocking, as Selene's fat tree): traffic beyond a leaf group "
                        "gets the NIC share over it"), 1);
        at_least(b.real("network.pj_per_byte", [](C& c) -> double& { return c.inter_pj_per_byte; }, 0.0, "pJ/byte",
                        "Energy of one byte sent over the network; 0 = not modeled (reported as such)"), 0);
        at_least(b.real("node.host_w", [](C& c) -> double& { return c.host_w; }, 0.0, "W",
                        "Power of one node outside its devices and NICs while a job runs (host CPUs; the config says what its source "
                        "includes); reported apart from device power; 0 = not modeled (reported as such)"), 0);
        at_least(b.real("network.nic_w", [](C& c) -> double& { return c.nic_w; }, 0.0, "W",
                        "Power of one compute-fabric NIC (the adapter's typical power from its datasheet); 0 = not modeled (reported as such)"), 0);
        return b;
    }();
    return b;
}

ClusterConfig load_cluster(const std::string& file, const std::vector<std::string>& overrides) {
    ParamSet p(cluster_params().schema());
    p.load_toml_file(file, {"kind"});
    for (const auto& o : overrides) {
        try {
            p.apply_override(o);
        } catch (const UserError& e) {  // name the flag the override came from
            throw UserError(file + ": --cluster-set " + o, e.reason());
        }
    }
    ClusterConfig c = cluster_params().build(p);
    c.file = file;
    if (c.device.empty()) throw UserError(file + ": device", "missing: the machine config of one device");
    fs::path dev = c.device;
    if (dev.is_relative()) dev = fs::path(file).parent_path() / dev;
    if (!fs::exists(dev)) throw UserError(file + ": device = \"" + c.device + "\"", "no such file (" + dev.string() + ")");
    c.device = dev.lexically_normal().string();
    if (c.nics_per_node == 0 && c.nodes > 1) throw UserError(file + ": network.nics = 0", "a cluster of several nodes needs NICs");
    return c;
}

}  // namespace archsim
