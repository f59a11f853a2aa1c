#pragma once
// The cost of one collective on a communicator, as NCCL models and chooses it: ring, tree,
// hierarchical and direct algorithms under the LL, LL128 and Simple protocols, the fastest
// predicted one taken for each message size.
#include <cstdint>
#include <string>
#include <vector>

#include "arch/interconnect/link_spec.h"

namespace archsim {

/// The collectives a parallel training or inference job issues.
enum class Collective { AllReduce, ReduceScatter, AllGather, AllToAll, SendRecv, Broadcast };
/// "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv", "broadcast".
const char* to_string(Collective c);

/// How the collective moves its data. Ring and Tree are NCCL's algorithms; Hierarchical is the
/// two-level all-reduce (reduce-scatter inside each node, all-reduce of each rank's shard across
/// nodes on its own rail, all-gather inside the node: Horovod's and BlueConnect's scheme); Direct
/// is point-to-point to every peer (all-to-all, send/recv).
enum class CollectiveAlgorithm { Ring, Tree, Hierarchical, Direct };
const char* to_string(CollectiveAlgorithm a);  ///< "ring", "tree", "hierarchical", "direct"
/// NCCL's protocols: LL (8-byte stores with a flag in each, half the bandwidth, lowest latency),
/// LL128 (128-byte lines with 8 bytes of flags, 120/128 of the bandwidth) and Simple.
enum class CollectiveProtocol { LL, LL128, Simple };
const char* to_string(CollectiveProtocol p);  ///< "LL", "LL128", "Simple"

/// A communicator: how many devices, how many of them share a node, and the two link levels
/// each device sends through.
struct CommGroup {
    int64_t ranks = 1;           ///< devices in the communicator
    int64_t ranks_per_node = 1;  ///< of them on each node (divides ranks)
    LinkSpec intra;              ///< one device's port inside a node (NVLink/NVSwitch, PCIe, board)
    /// One device's share of its node's NICs: with rail-optimized NICs each device of the
    /// communicator drives its own, so a ring across nodes spreads its channels over the
    /// ranks_per_node NICs of each node.
    LinkSpec inter;
    /// GPU generation for NCCL's protocol limits: "volta", "ampere", "hopper"; anything else
    /// (a KPU board) gets no LL bandwidth cap.
    std::string generation = "ampere";
    /// Host CPU vendor, "amd" or "intel": NCCL caps LL's bandwidth across nodes by it.
    std::string host_cpu = "amd";
    int64_t nodes() const { return ranks_per_node > 0 ? ranks / ranks_per_node : 1; }
};

/// What one collective costs one device of the communicator (every rank does the same work, so
/// one rank stands for all).
struct CollectiveCost {
    Collective kind = Collective::AllReduce;
    CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
    CollectiveProtocol protocol = CollectiveProtocol::Simple;
    double bytes = 0;          ///< the operation's size as nccl-tests counts it (see collective_cost)
    int64_t ranks = 1;         ///< devices in the communicator
    double latency_ps = 0;     ///< the size-independent part: launch and per-step latencies
    double intra_bytes = 0;    ///< bytes this device sends on its intra-node port
    double inter_bytes = 0;    ///< bytes this device sends through its NIC share
    double intra_bytes_per_s = 0, inter_bytes_per_s = 0;  ///< what the ports sustain under this protocol
    /// true: the intra- and inter-node parts run one after the other (Hierarchical); false: they
    /// are pipelined (a ring's steps stream through both levels at once).
    bool serial = false;
    double time_ps = 0;        ///< latency + the transfers (their max, or sum when serial)
    /// nccl-tests' bus bandwidth, bytes/s: bytes / time x the collective's factor (all-reduce
    /// 2(n-1)/n; reduce-scatter, all-gather and all-to-all (n-1)/n; broadcast and send/recv 1;
    /// nccl-tests doc/PERFORMANCE.md), comparable across communicator sizes.
    double bus_bytes_per_s() const;
};

/// nccl-tests' bus-bandwidth factor of `kind` on `ranks` devices (see CollectiveCost).
double bus_factor(Collective kind, int64_t ranks);

/// Every algorithm and protocol NCCL could run `kind` of `bytes` with on `group`, costed.
/// `bytes`: all-reduce and broadcast the buffer; reduce-scatter its input (all ranks' shards);
/// all-gather its output; all-to-all one rank's send buffer (all peers' parts); send/recv the
/// message. Costs follow NCCL's tuning model (src/graph/tuning.cc, 2.2x): a ring all-reduce
/// takes 2(n-1) steps each moving bytes/n per rank, all-gather and reduce-scatter n-1; a tree
/// all-reduce moves the whole buffer up and down (NCCL: algorithm bandwidth = 0.92 x half the
/// bus bandwidth), its latency 2((ppn-1) intra + log2(nodes) inter) steps; per-step latencies,
/// base latencies and protocol efficiencies are NCCL's constants for NVLink, PCIe and the
/// network. Send/recv between two ranks of one node counts as intra, else inter. Throws
/// std::invalid_argument for ranks < 1 or ranks_per_node not dividing ranks (callers validate
/// user input first).
std::vector<CollectiveCost> collective_candidates(Collective kind, double bytes, const CommGroup& group);

/// The candidate with the least time: NCCL's choice of algorithm and protocol for this size.
/// One rank (or zero bytes) costs nothing: time 0.
CollectiveCost collective_cost(Collective kind, double bytes, const CommGroup& group);

}  // namespace archsim
