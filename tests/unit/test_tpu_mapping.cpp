// The TPU's mapping search: on an ideal DRAM a mapping's price is its folds' cycles exactly (for
// SCALE-Sim's walk, SCALE-Sim's fold arithmetic), the bound never exceeds the price, the branch
// and bound finds the mapspace's best, ties keep the config's own mapping, and a chunked streamed
// dimension keeps partial sums that would spill on chip.
#include <catch2/catch.hpp>

#include <tuple>

#include "arch/tpu/tpu_mapping.h"
#include "tests/support/gemm_view.h"
#include "sim/base/params.h"

using namespace archsim;

namespace {
TpuConfig config(const std::string& dataflow, bool ideal_dram, int64_t ofmap_kib = 0) {
    ParamSet p(tpu_params().schema());
    p.apply_override("array.rows=8");
    p.apply_override("array.cols=8");
    p.apply_override("dataflow=\"" + dataflow + "\"");
    if (ofmap_kib > 0) p.apply_override("sram.ofmap_kib=" + std::to_string(ofmap_kib));
    if (ideal_dram) p.apply_override("dram.ideal=true");
    return make_tpu_config(p);
}
GemmView gemm(int64_t m, int64_t n, int64_t k) { return test::gemm_view(m, n, k); }
const std::tuple<int64_t, int64_t, int64_t> kShapes[] = {{4, 8, 512}, {300, 40, 24}, {64, 64, 64}, {9, 200, 70}, {256, 8, 64}};
}  // namespace

TEST_CASE("on an ideal DRAM a mapping costs its folds' cycles and the bound is exact", "[unit][tpu][mapping]") {
    for (auto [m, n, k] : kShapes) {
        const GemmView g = gemm(m, n, k);
        const TpuConfig cfg = config("ws", true);
        for (Dataflow df : {Dataflow::WS, Dataflow::OS, Dataflow::IS}) {
            const FoldGeometry geo = fold_geometry(df, 8, 8, m, n, k);
            INFO(m << "x" << n << "x" << k << " " << to_string(df));
            CHECK(fold_cost(g, 0, cfg, df).cycles == geo.folds() * geo.cycles_per_fold);  // SCALE-Sim's walk
        }
        for (const TpuChoice& c : tpu_mapspace(g, cfg)) {
            INFO(m << "x" << n << "x" << k << " " << describe(c));
            CHECK(fold_cost(g, 0, cfg, c.dataflow, c.nest).cycles == fold_cost_bound(g, cfg, c));
        }
    }
    // a long reduction over few rows: output stationary holds the 4 x 8 outputs while k streams
    CHECK(search_mapping(gemm(4, 8, 512), 0, config("ws", true)).choice.dataflow == Dataflow::OS);
}

TEST_CASE("the branch and bound finds the mapspace's best, and every bound is below its price", "[unit][tpu][mapping]") {
    for (bool ideal : {true, false})
        for (const char* own : {"ws", "os", "is"})
            for (auto [m, n, k] : kShapes) {
                const GemmView g = gemm(m, n, k);
                const TpuConfig cfg = config(own, ideal, 1);
                const std::vector<TpuChoice> space = tpu_mapspace(g, cfg);
                REQUIRE(space.front() == (TpuChoice{cfg.dataflow, {}}));
                std::tuple<int64_t, int64_t, size_t> best{INT64_MAX, INT64_MAX, 0};
                for (size_t i = 0; i < space.size(); ++i) {
                    const FoldCost c = fold_cost(g, 0, cfg, space[i].dataflow, space[i].nest);
                    INFO(m << "x" << n << "x" << k << " " << describe(space[i]) << (ideal ? " ideal" : " real"));
                    CHECK(fold_cost_bound(g, cfg, space[i]) <= c.cycles);
                    best = std::min(best, std::make_tuple(c.cycles, c.dram_bytes, i));
                }
                const TpuMapping s = search_mapping(g, 0, cfg);
                INFO(m << "x" << n << "x" << k << " own " << own << (ideal ? " ideal" : " real"));
                CHECK(s.choice == space[std::get<2>(best)]);
                CHECK(s.cost.cycles == std::get<0>(best));
                CHECK(s.cost.dram_bytes == std::get<1>(best));
                CHECK(s.mapspace == static_cast<int64_t>(space.size()));
                CHECK(s.evaluated >= 1);
                CHECK(s.evaluated <= s.mapspace);
            }
}

TEST_CASE("a tie keeps the config's own mapping", "[unit][tpu][mapping]") {
    // 64 x 64 x 8 on an 8 x 8 array: WS and IS both take 8 folds of 2R + C + T - 2 = 86 cycles
    // (the same bytes, by symmetry), OS 64 folds of K + R + C - 2 = 22
    const GemmView g = gemm(64, 64, 8);
    const FoldCost ws = fold_cost(g, 0, config("ws", true), Dataflow::WS), is = fold_cost(g, 0, config("ws", true), Dataflow::IS);
    CHECK(ws.cycles == 688);
    CHECK(is.cycles == 688);
    CHECK(ws.dram_bytes == is.dram_bytes);
    CHECK(fold_cost(g, 0, config("ws", true), Dataflow::OS).cycles == 1408);
    CHECK(search_mapping(g, 0, config("is", true)).choice == (TpuChoice{Dataflow::IS, {}}));
    CHECK(search_mapping(g, 0, config("ws", true)).choice == (TpuChoice{Dataflow::WS, {}}));
    CHECK(search_mapping(g, 0, config("search", true)).choice == (TpuChoice{Dataflow::WS, {}}));
    CHECK(config("search", true).dataflow_search);
    CHECK(config("search", true).dataflow == Dataflow::WS);
}

TEST_CASE("a real DRAM adds its transfers to a mapping's cycles", "[unit][tpu][mapping]") {
    const GemmView g = gemm(300, 40, 24);
    for (Dataflow df : {Dataflow::WS, Dataflow::OS, Dataflow::IS}) {
        const FoldCost ideal = fold_cost(g, 0, config("ws", true), df), real = fold_cost(g, 0, config("ws", false), df);
        CHECK(real.cycles > ideal.cycles);
        CHECK(real.dram_bytes > 0);
    }
}

TEST_CASE("chunking the streamed dimension keeps partial sums that would spill in the ofmap buffer", "[unit][tpu][mapping]") {
    // WS, M = 256, K = 64, N = 8 on 8 x 8 with a 1 KiB ofmap buffer (512 B resident): one column
    // fold's partial sums are 256 x 8 x 4 B = 8 KiB, spilled and read back by 7 of the 8 K folds;
    // in 16 chunks of 16 rows they are 512 B and stay. int8 operands, fp32 partial sums.
    const GemmView g = gemm(256, 8, 64);
    const TpuConfig cfg = config("ws", false, 1);
    const FoldCost whole = fold_cost(g, 0, cfg, Dataflow::WS), chunked = fold_cost(g, 0, cfg, Dataflow::WS, {false, 16});
    const int64_t compulsory = 256 * 64 + 64 * 8 + 256 * 8;  // A, B (kept in the filter buffer), C
    CHECK(chunked.dram_bytes == compulsory);
    CHECK(whole.dram_bytes == compulsory + 2 * 7 * 256 * 8 * 4);  // each spill written and read back
    const std::vector<TpuChoice> space = tpu_mapspace(g, cfg);
    CHECK(std::find(space.begin(), space.end(), TpuChoice{Dataflow::WS, {false, 16}}) != space.end());
    const TpuMapping s = search_mapping(g, 0, cfg);
    CHECK(s.cost.cycles < whole.cycles);
    CHECK(s.cost.dram_bytes < whole.dram_bytes);
}

TEST_CASE("a mapping is named by its dataflow and what differs from SCALE-Sim's walk", "[unit][tpu][mapping]") {
    CHECK(describe({Dataflow::WS, {}}) == "ws");
    CHECK(describe({Dataflow::WS, {true, 4}}) == "ws k-outer m/4");
    CHECK(describe({Dataflow::IS, {false, 2}}) == "is n/2");
    CHECK(describe({Dataflow::OS, {true, 1}}) == "os n-outer");
}
