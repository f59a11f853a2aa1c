// The NCCL cost model: exact ring arithmetic on small cases, the algorithm NCCL would pick by
// size, and bus bandwidths against published nccl-tests runs.
#include <catch2/catch.hpp>

#include <filesystem>

#include "arch/cluster/cluster_config.h"
#include "arch/interconnect/collective_model.h"

using namespace archsim;

namespace {

CommGroup dgx_a100(int64_t ranks, int64_t per_node) {
    CommGroup g;
    g.ranks = ranks, g.ranks_per_node = per_node;
    g.intra = {"nvlink", 300e9, 0.8, 0};     // 12 NVLink 3 links x 25 GB/s, NCCL's 20 of 25
    g.inter = {"ib", 25e9, 0.96, 390e3};     // one HDR 200 Gb/s NIC per GPU, 3 switch hops
    g.generation = "ampere", g.host_cpu = "amd";
    return g;
}

const CollectiveCost* find(const std::vector<CollectiveCost>& all, CollectiveAlgorithm a, CollectiveProtocol p) {
    for (const auto& c : all)
        if (c.algorithm == a && c.protocol == p) return &c;
    return nullptr;
}

}  // namespace

TEST_CASE("ring all-reduce inside a node moves 2(n-1)/n of the buffer at the port's rate plus NCCL's step latencies", "[unit][collective]") {
    const auto all = collective_candidates(Collective::AllReduce, 1 << 30, dgx_a100(8, 8));
    const CollectiveCost* ring = find(all, CollectiveAlgorithm::Ring, CollectiveProtocol::Simple);
    REQUIRE(ring);
    CHECK(ring->intra_bytes == Approx(2.0 * 7 / 8 * (1 << 30)));
    CHECK(ring->inter_bytes == 0);
    // base 8.4 us + 14 steps x 3.4 us (NCCL tuning.cc: Ring/Simple on NVLink)
    CHECK(ring->latency_ps == Approx((8.4 + 14 * 3.4) * 1e6));
    CHECK(ring->time_ps == Approx(ring->latency_ps + ring->intra_bytes / 240e9 * 1e12));
    CHECK_FALSE(find(all, CollectiveAlgorithm::Hierarchical, CollectiveProtocol::Simple));  // one node: no second level
}

TEST_CASE("NCCL's choice moves from low-latency protocols to Simple rings as messages grow", "[unit][collective]") {
    const CommGroup g = dgx_a100(8, 8);
    CHECK(collective_cost(Collective::AllReduce, 8 * 1024, g).protocol == CollectiveProtocol::LL);
    const CollectiveCost big = collective_cost(Collective::AllReduce, 4.0 * (1 << 30), g);
    CHECK(big.protocol == CollectiveProtocol::Simple);
    CHECK(big.algorithm == CollectiveAlgorithm::Ring);
    CHECK(collective_cost(Collective::AllReduce, 1 << 20, dgx_a100(1, 1)).time_ps == 0);  // one rank: nothing to do
}

TEST_CASE("8 x A100 NVSwitch all-reduce bus bandwidth is near nccl-tests' published runs", "[unit][collective]") {
    // nccl-tests issue #149 (8 x A100-SXM4-80GB on NVSwitch, NCCL 2.18): busbw ~200 GB/s at 1 GiB;
    // NCCL's own model (20 GB/s per NVLink 3 link x 12) predicts 240: within 25% of the measurement.
    const double bus = collective_cost(Collective::AllReduce, 1 << 30, dgx_a100(8, 8)).bus_bytes_per_s();
    CHECK(bus > 200e9 * 0.95);
    CHECK(bus < 200e9 * 1.25);
}

TEST_CASE("a ring across nodes is bound by the NICs its ranks bring: ppn x the NIC share", "[unit][collective]") {
    const double S = 2.0 * (1 << 30);
    // 32 ranks, 8 per node: the node's 8 NICs carry the ring (8 x 24 GB/s), below NVLink's 240
    const CollectiveCost r = collective_cost(Collective::AllReduce, S, dgx_a100(32, 8));
    CHECK(r.bus_bytes_per_s() == Approx(8 * 24e9).epsilon(0.05));
    // one rank per node (data parallelism under tp = 8): one NIC
    const CollectiveCost one = collective_cost(Collective::AllReduce, S, dgx_a100(4, 1));
    CHECK(one.bus_bytes_per_s() == Approx(24e9).epsilon(0.05));
    CHECK(one.intra_bytes == 0);
}

TEST_CASE("all-gather and reduce-scatter each move half an all-reduce's bytes", "[unit][collective]") {
    const CommGroup g = dgx_a100(8, 8);
    const double S = 1 << 28;
    const auto ar = collective_candidates(Collective::AllReduce, S, g), ag = collective_candidates(Collective::AllGather, S, g),
               rs = collective_candidates(Collective::ReduceScatter, S, g);
    const auto* a = find(ar, CollectiveAlgorithm::Ring, CollectiveProtocol::Simple);
    CHECK(find(ag, CollectiveAlgorithm::Ring, CollectiveProtocol::Simple)->intra_bytes == Approx(a->intra_bytes / 2));
    CHECK(find(rs, CollectiveAlgorithm::Ring, CollectiveProtocol::Simple)->intra_bytes == Approx(a->intra_bytes / 2));
}

TEST_CASE("all-to-all sends the node's peers' parts over NVLink and the rest through the NIC", "[unit][collective]") {
    const auto all = collective_candidates(Collective::AllToAll, 64e6, dgx_a100(16, 8));
    const auto* d = find(all, CollectiveAlgorithm::Direct, CollectiveProtocol::Simple);
    REQUIRE(d);
    CHECK(d->intra_bytes == Approx(64e6 * 7 / 16));
    CHECK(d->inter_bytes == Approx(64e6 * 8 / 16));
}

TEST_CASE("bundled clusters read: DGX A100's NIC share is one HDR link per GPU", "[unit][collective][cluster]") {
    const ClusterConfig c = load_cluster(std::string(ARCHSIM_SOURCE_DIR) + "/configs/clusters/dgx_a100_superpod.toml");
    CHECK(c.devices() == 4480);
    CHECK(c.inter_link(1).bandwidth_bytes_per_s == Approx(25e9));
    // Selene's rail groups of 20 nodes: one switch within one, leaf-spine-leaf beyond, at 1:1
    CHECK(c.leaf_group_nodes() == 20);
    CHECK(c.inter_link(20).latency_ps == Approx(130e3));
    CHECK(c.inter_link(21).latency_ps == Approx(3 * 130e3));
    CHECK(c.inter_link(21).effective_bytes_per_s() == Approx(c.inter_link(20).effective_bytes_per_s()));
    // RoCE hashes flows: beyond the rail group 0.60 / 0.95 of the rate, unless it routes adaptively
    const ClusterConfig roce = load_cluster(std::string(ARCHSIM_SOURCE_DIR) + "/configs/clusters/dgx_a100_superpod.toml", {"network.kind=\"roce\""});
    CHECK(roce.inter_link(20).effective_bytes_per_s() == Approx(c.inter_link(20).effective_bytes_per_s()));
    CHECK(roce.inter_link(21).effective_bytes_per_s() == Approx(c.inter_link(21).effective_bytes_per_s() * 0.60 / 0.95));
    // a fat tree puts 32 / 8 = 4 nodes under a leaf; oversubscription halves the share beyond it
    const ClusterConfig fat = load_cluster(std::string(ARCHSIM_SOURCE_DIR) + "/configs/clusters/dgx_a100_superpod.toml",
                                           {"network.topology=\"fat-tree\"", "network.leaf_nodes=0", "network.oversubscription=2"});
    CHECK(fat.leaf_group_nodes() == 4);
    CHECK(fat.inter_link(5).bandwidth_bytes_per_s == Approx(12.5e9));
    CHECK(c.intra_link().effective_bytes_per_s() == Approx(240e9));
    CHECK_THROWS_WITH(load_cluster(std::string(ARCHSIM_SOURCE_DIR) + "/configs/clusters/dgx_a100_superpod.toml", {"node.devices=0"}),
                      Catch::Contains("node.devices"));
}

TEST_CASE("every bundled cluster file loads and names an existing device config", "[unit][cluster][smoke]") {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(std::string(ARCHSIM_SOURCE_DIR) + "/configs/clusters")) {
        if (e.path().extension() != ".toml") continue;
        INFO(e.path());
        const ClusterConfig c = load_cluster(e.path().string());
        CHECK(std::filesystem::exists(c.device));
        CHECK(c.devices() >= 8);
        ++n;
    }
    CHECK(n >= 3);
}
