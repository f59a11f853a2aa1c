#include "arch/interconnect/collective_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace archsim {

namespace {

// NCCL's tuning constants (NVIDIA/nccl src/graph/tuning.cc, ncclTunerConstantsDefaults), in
// microseconds and GB/s (1e9 bytes/s), indexed [LL, LL128, Simple].
constexpr double kBaseLatRingUs[3] = {6.6, 14.0, 8.4};
constexpr double kBaseLatTreeUs[3] = {6.8, 14.0, 8.4};
constexpr double kStepLatRingUs[3][3] = {{0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}};  // NVLink, PCIe, network
constexpr double kStepLatTreeUs[3][3] = {{0.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}};
/// Bandwidth a protocol delivers of the link's: LL half (a 4-byte flag per 4 bytes of data),
/// LL128 120/128 (tuning.cc: busBw x 0.92), Simple all of it.
constexpr double kProtoEfficiency[3] = {0.5, 0.92, 1.0};
constexpr double kTreeAllReduceEfficiency = 0.92;  // tuning.cc: tree all-reduce busBw x .92
constexpr double kUs = 1e6;                        // ps per microsecond

int hw_index(const std::string& kind) { return kind == "nvlink" ? 0 : 1; }

/// LL's bandwidth cap, bytes/s (tuning.cc llMaxBws): one node by GPU generation, several by host
/// CPU vendor and node count; none for a part NCCL does not know.
double ll_cap(const CommGroup& g) {
    const int64_t nodes = g.nodes();
    const int col = nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
    double gbps = std::numeric_limits<double>::infinity();
    if (col == 0) {
        if (g.generation == "volta") gbps = 39.0;
        else if (g.generation == "ampere") gbps = 87.7;
        else if (g.generation == "hopper") gbps = 141.0;
    } else if (g.generation == "volta" || g.generation == "ampere" || g.generation == "hopper") {
        const bool amd = g.host_cpu == "amd";
        gbps = col == 1 ? (amd ? 22.5 : 39.0) : (amd ? 19.0 : 20.4);
        if (g.generation == "hopper" && !amd) gbps = col == 1 ? 45.0 : 35.0;
    }
    return gbps * 1e9;
}

/// Fills time_ps from the transfers and the latency.
CollectiveCost finish(CollectiveCost c) {
    auto t = [](double bytes, double bw) { return bytes <= 0 ? 0.0 : bytes / bw * 1e12; };
    const double a = t(c.intra_bytes, c.intra_bytes_per_s), b = t(c.inter_bytes, c.inter_bytes_per_s);
    c.time_ps = c.latency_ps + (c.serial ? a + b : std::max(a, b));
    return c;
}

}  // namespace

const char* to_string(Collective c) {
    switch (c) {
        case Collective::AllReduce: return "all_reduce";
        case Collective::ReduceScatter: return "reduce_scatter";
        case Collective::AllGather: return "all_gather";
        case Collective::AllToAll: return "all_to_all";
        case Collective::SendRecv: return "send_recv";
        case Collective::Broadcast: return "broadcast";
    }
    return "?";
}

const char* to_string(CollectiveAlgorithm a) {
    switch (a) {
        case CollectiveAlgorithm::Ring: return "ring";
        case CollectiveAlgorithm::Tree: return "tree";
        case CollectiveAlgorithm::Hierarchical: return "hierarchical";
        case CollectiveAlgorithm::Direct: return "direct";
    }
    return "?";
}

const char* to_string(CollectiveProtocol p) {
    switch (p) {
        case CollectiveProtocol::LL: return "LL";
        case CollectiveProtocol::LL128: return "LL128";
        case CollectiveProtocol::Simple: return "Simple";
    }
    return "?";
}

double bus_factor(Collective kind, int64_t n) {
    if (n <= 1) return 1.0;
    switch (kind) {
        case Collective::AllReduce: return 2.0 * double(n - 1) / double(n);
        case Collective::ReduceScatter:
        case Collective::AllGather:
        case Collective::AllToAll: return double(n - 1) / double(n);
        default: return 1.0;
    }
}

double CollectiveCost::bus_bytes_per_s() const {
    return time_ps <= 0 ? 0.0 : bytes / (time_ps * 1e-12) * bus_factor(kind, ranks);
}

std::vector<CollectiveCost> collective_candidates(Collective kind, double bytes, const CommGroup& g) {
    if (g.ranks < 1 || g.ranks_per_node < 1 || g.ranks % g.ranks_per_node != 0)
        throw std::invalid_argument("collective_candidates: ranks_per_node must divide ranks");
    std::vector<CollectiveCost> out;
    const int64_t n = g.ranks, ppn = g.ranks_per_node, nodes = g.nodes();
    const int hw = hw_index(g.intra.kind);
    const double inter_lat_extra_us = g.inter.latency_ps / kUs;
    const double net_overhead_us = g.host_cpu == "intel" ? 1.0 : 2.0;  // tuning.cc getNetOverhead
    for (int p = 0; p < 3; ++p) {
        const auto proto = CollectiveProtocol(p);
        const double eff = kProtoEfficiency[p];
        double intra_bw = g.intra.effective_bytes_per_s() * eff, inter_bw = g.inter.effective_bytes_per_s() * eff;
        if (proto == CollectiveProtocol::LL) intra_bw = std::min(intra_bw, ll_cap(g)), inter_bw = std::min(inter_bw, ll_cap(g));
        // per-step latencies, us: inside a node (on several nodes at least the host's network
        // overhead, thrice for Simple: tuning.cc), and across nodes
        double intra_step = kStepLatRingUs[hw][p];
        if (nodes > 1) intra_step = std::max(intra_step, net_overhead_us * (proto == CollectiveProtocol::Simple ? 3 : 1));
        const double inter_step = kStepLatRingUs[2][p] + inter_lat_extra_us;
        CollectiveCost base;
        base.kind = kind, base.protocol = proto, base.bytes = bytes, base.ranks = n;
        base.intra_bytes_per_s = intra_bw, base.inter_bytes_per_s = inter_bw;
        if (kind == Collective::SendRecv) {  // one peer, in the node when the communicator is one node
            CollectiveCost c = base;
            c.algorithm = CollectiveAlgorithm::Direct;
            (nodes > 1 ? c.inter_bytes : c.intra_bytes) = bytes;
            c.latency_ps = (kBaseLatRingUs[p] + (nodes > 1 ? inter_step : intra_step)) * kUs;
            out.push_back(finish(c));
            continue;
        }
        if (kind == Collective::AllToAll) {  // every peer its part: the node's peers over the port, the rest over the NIC
            CollectiveCost c = base;
            c.algorithm = CollectiveAlgorithm::Direct;
            c.intra_bytes = bytes * double(ppn - 1) / double(n);
            c.inter_bytes = bytes * double(n - ppn) / double(n);
            c.latency_ps = (kBaseLatRingUs[p] + intra_step + (nodes > 1 ? inter_step : 0.0)) * kUs;
            out.push_back(finish(c));
            continue;
        }
        // ring: nsteps per rank, each bytes/n; nodes-crossing steps through the NIC, whose load
        // the ring's channels spread over the ppn NICs of a node
        const double f = kind == Collective::Broadcast ? 1.0 : bus_factor(kind, n);
        const int64_t steps = kind == Collective::AllReduce ? 2 * (n - 1) : kind == Collective::Broadcast ? n : n - 1;
        const int64_t inter_steps = nodes <= 1 ? 0 : kind == Collective::AllReduce ? 2 * (nodes - 1) : nodes - 1;
        {
            CollectiveCost c = base;
            c.algorithm = CollectiveAlgorithm::Ring;
            c.intra_bytes = ppn > 1 ? f * bytes : 0.0;
            c.inter_bytes = nodes > 1 ? f * bytes / double(ppn) : 0.0;
            c.latency_ps = (kBaseLatRingUs[p] + double(steps - inter_steps) * intra_step + double(inter_steps) * inter_step) * kUs;
            out.push_back(finish(c));
        }
        if (kind != Collective::AllReduce) continue;
        {  // tree (NCCL: a chain inside the node, a double binary tree across nodes)
            CollectiveCost c = base;
            c.algorithm = CollectiveAlgorithm::Tree;
            c.intra_bytes_per_s *= kTreeAllReduceEfficiency, c.inter_bytes_per_s *= kTreeAllReduceEfficiency;
            c.intra_bytes = ppn > 1 ? 2.0 * bytes : 0.0;
            c.inter_bytes = nodes > 1 ? 2.0 * bytes / double(ppn) : 0.0;
            const double log_nodes = nodes > 1 ? std::floor(std::log2(double(nodes))) : 0.0;
            const double tree_inter = kStepLatTreeUs[2][p] + inter_lat_extra_us;
            c.latency_ps = (kBaseLatTreeUs[p] + 2.0 * (double(ppn - 1) * kStepLatTreeUs[hw][p] + log_nodes * tree_inter)) * kUs;
            out.push_back(finish(c));
        }
        if (nodes > 1 && ppn > 1) {  // hierarchical: reduce-scatter in the node, rails across nodes, all-gather
            CollectiveCost c = base;
            c.algorithm = CollectiveAlgorithm::Hierarchical;
            c.serial = true;
            c.intra_bytes = 2.0 * double(ppn - 1) / double(ppn) * bytes;
            c.inter_bytes = 2.0 * double(nodes - 1) / double(nodes) * bytes / double(ppn);
            c.latency_ps = (2.0 * kBaseLatRingUs[p] + 2.0 * double(ppn - 1) * kStepLatRingUs[hw][p] + 2.0 * double(nodes - 1) * inter_step) * kUs;
            out.push_back(finish(c));
        }
    }
    return out;
}

CollectiveCost collective_cost(Collective kind, double bytes, const CommGroup& g) {
    if (g.ranks <= 1 || bytes <= 0) {
        CollectiveCost c;
        c.kind = kind, c.bytes = bytes, c.ranks = g.ranks;
        return c;
    }
    const auto all = collective_candidates(kind, bytes, g);
    return *std::min_element(all.begin(), all.end(), [](const CollectiveCost& a, const CollectiveCost& b) { return a.time_ps < b.time_ps; });
}

}  // namespace archsim
