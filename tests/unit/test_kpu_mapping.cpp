// The KPU's mapping search: block orders are permutations of the blocks, their cost follows the
// L3's reuse exactly on small cases, and the search never picks an order worse than the fixed one.
#include <catch2/catch.hpp>

#include <set>

#include "arch/kpu/kpu_config.h"
#include "arch/kpu/kpu_mapping.h"
#include "tests/support/gemm_view.h"

using namespace archsim;

namespace {
/// A 2 x 2-tile fabric of 4 x 4 PEs at 1 GHz, INT8 (1 byte per operand), `l3_kib_per_tile` KiB
/// of L3 per tile, no fill or drain, ideal-rate movers and streamers so that only DRAM can stall
/// a wave: `dram_gbps` GB/s is that many bytes per cycle.
KpuConfig small_fabric(int64_t l3_kib_per_tile, double dram_gbps = 4, bool ideal_dram = false) {
    ParamSet p(kpu_params().schema());
    for (const std::string s : {"tiles.rows=2", "tiles.cols=2", "pe.rows=4", "pe.cols=4", "pipeline.fill_cycles=0", "pipeline.drain_cycles=0",
                                "block_mover.bytes_per_cycle=1e9", "streamer.bytes_per_cycle=1e9", "precision=\"int8\"", "power_mode=\"mid\"", "clock.high_mhz=1500", "clock.mid_mhz=1000"})
        p.apply_override(s);
    p.apply_override("l3.kib_per_tile=" + std::to_string(l3_kib_per_tile));
    p.apply_override("dram.bandwidth_gbps=" + std::to_string(dram_gbps));
    if (ideal_dram) p.apply_override("dram.ideal=true");
    return make_kpu_config(p);
}
GemmView gemm(int64_t m, int64_t n, int64_t k) { return test::gemm_view(m, n, k); }
}  // namespace

TEST_CASE("every block order deals each block exactly once", "[unit][kpu][mapping]") {
    for (int64_t rows : {1, 3, 7})
        for (int64_t cols : {1, 4, 5})
            for (bool rows_outer : {true, false})
                for (int64_t band : {0, 1, 2, 3, 8}) {
                    std::set<std::pair<int64_t, int64_t>> seen;
                    for (int64_t i = 0; i < rows * cols; ++i) seen.insert(block_at(i, rows, cols, {rows_outer, band}));
                    INFO(rows << "x" << cols << " rows_outer " << rows_outer << " band " << band);
                    CHECK(static_cast<int64_t>(seen.size()) == rows * cols);
                    CHECK(seen.begin()->first == 0);
                    CHECK(seen.rbegin()->first == rows - 1);
                }
}

TEST_CASE("row-major is the fixed order and bands cut the inner dimension", "[unit][kpu][mapping]") {
    // 3 x 4 blocks
    CHECK(block_at(5, 3, 4, {}) == std::pair<int64_t, int64_t>{1, 1});
    CHECK(block_at(5, 3, 4, {false, 0}) == std::pair<int64_t, int64_t>{2, 1});  // column-major
    // rows outer, bands of 2 columns: (0,0) (0,1) (1,0) (1,1) (2,0) (2,1) (0,2) ...
    CHECK(block_at(4, 3, 4, {true, 2}) == std::pair<int64_t, int64_t>{2, 0});
    CHECK(block_at(6, 3, 4, {true, 2}) == std::pair<int64_t, int64_t>{0, 2});
    // bands of 3 over 4 columns: the last band is one column wide
    CHECK(block_at(9, 3, 4, {true, 3}) == std::pair<int64_t, int64_t>{0, 3});
    CHECK(block_at(11, 3, 4, {true, 3}) == std::pair<int64_t, int64_t>{2, 3});
    CHECK(describe({}) == "rows>cols");
    CHECK(describe({false, 4}) == "cols>rows bands=4");
}

TEST_CASE("the order decides whether weight panels are re-read from DRAM", "[unit][kpu][mapping]") {
    // 16 x 64 x 1024 INT8 on 4 tiles of 4 x 4: 4 row blocks, 16 column blocks; an A panel is
    // 4 KiB, a B panel 4 KiB: A is 16 KiB, B 64 KiB. An L3 of 4 x 8 = 32 KiB holds A but not B.
    // A wave computes for 1024 cycles; at 4 bytes a cycle a B panel takes 1024 cycles to fetch.
    const KpuConfig cfg = small_fabric(8);
    const GemmView g = gemm(16, 64, 1024);
    const int64_t a = 16 * 1024, b = 64 * 1024;
    // row-major: each row block walks all 16 B panels, which do not fit: B is read 4 times
    const OrderCost fixed = order_cost(g, cfg, {});
    CHECK(fixed.dram_bytes == a + 4 * b);
    // column-major: each B panel is used by the 4 row blocks back to back (one wave), A stays
    const OrderCost cols = order_cost(g, cfg, {false, 0});
    CHECK(cols.dram_bytes == a + b);
    CHECK(cols.cycles < fixed.cycles);
    // the search finds an order with the compulsory traffic and no more cycles, and says so
    const KpuMapping m = search_mapping(g, cfg);
    CHECK(m.cost.dram_bytes == a + b);
    CHECK(m.cost.cycles <= cols.cycles);
    CHECK(m.fixed_cost.dram_bytes == fixed.dram_bytes);
    CHECK(m.evaluated >= 2);
    CHECK(m.evaluated <= m.mapspace);
    CHECK(order_cost(g, cfg, m.order, {}).cycles == m.cost.cycles);
    // operands the L3 already holds whole cost no DRAM traffic in any order
    CHECK(order_cost(g, cfg, {}, {true, true}).dram_bytes == 0);
    CHECK(order_cost(g, cfg, {false, 0}, {false, true}).dram_bytes == a);
    CHECK(search_mapping(g, cfg, {true, true}).cost.dram_bytes == 0);
}

TEST_CASE("a GEMM that no order can speed up keeps the fixed order after one evaluation", "[unit][kpu][mapping]") {
    const KpuConfig cfg = small_fabric(256, 4, true);  // 1 MiB: everything fits; an ideal DRAM never stalls
    const GemmView g = gemm(16, 64, 1024);
    const KpuMapping m = search_mapping(g, cfg);
    CHECK(m.order == BlockOrder{});
    CHECK(m.cost.dram_bytes == 16 * 1024 + 64 * 1024);
    CHECK(m.evaluated == 1);  // the row-major order meets the compulsory bound: the rest are pruned
    CHECK(m.mapspace > 1);
}

TEST_CASE("the search is never worse than the fixed order", "[unit][kpu][mapping]") {
    for (int64_t l3 : {2, 8, 32})
        for (auto [m_, n_, k_] : {std::tuple<int64_t, int64_t, int64_t>{48, 40, 512}, {100, 36, 300}, {8, 200, 2048}, {64, 64, 64}}) {
            const KpuConfig cfg = small_fabric(l3);
            const GemmView g = gemm(m_, n_, k_);
            const KpuMapping m = search_mapping(g, cfg);
            INFO(m_ << "x" << n_ << "x" << k_ << " L3 " << l3 << " KiB per tile: " << describe(m.order));
            const OrderCost fixed = order_cost(g, cfg, {});
            CHECK(m.fixed_cost.cycles == fixed.cycles);
            CHECK((m.cost.cycles < fixed.cycles || (m.cost.cycles == fixed.cycles && m.cost.dram_bytes <= fixed.dram_bytes)));
            CHECK(order_cost(g, cfg, m.order, {}).cycles == m.cost.cycles);
        }
}
