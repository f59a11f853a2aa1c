// The TPU's dataflow search: on an ideal DRAM a dataflow's price is SCALE-Sim's fold arithmetic
// exactly, the search takes the fastest, and ties keep the config's own dataflow.
#include <catch2/catch.hpp>

#include "arch/tpu/tpu_mapping.h"
#include "tests/support/gemm_view.h"
#include "sim/base/params.h"

using namespace archsim;

namespace {
TpuConfig config(const std::string& dataflow, bool ideal_dram) {
    ParamSet p(tpu_params().schema());
    p.apply_override("array.rows=8");
    p.apply_override("array.cols=8");
    p.apply_override("dataflow=\"" + dataflow + "\"");
    if (ideal_dram) p.apply_override("dram.ideal=true");
    return make_tpu_config(p);
}
GemmView gemm(int64_t m, int64_t n, int64_t k) { return test::gemm_view(m, n, k); }
}  // namespace

TEST_CASE("on an ideal DRAM a dataflow costs its folds' cycles and the search takes the fewest", "[unit][tpu][mapping]") {
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{4, 8, 512}, {300, 40, 24}, {64, 64, 64}, {9, 200, 70}}) {
        const GemmView g = gemm(m, n, k);
        const TpuConfig cfg = config("ws", true);
        int64_t best = INT64_MAX;
        for (Dataflow df : {Dataflow::WS, Dataflow::OS, Dataflow::IS}) {
            const FoldGeometry geo = fold_geometry(df, 8, 8, m, n, k);
            INFO(m << "x" << n << "x" << k << " " << to_string(df));
            CHECK(fold_cost(g, 0, cfg, df).cycles == geo.folds() * geo.cycles_per_fold);
            best = std::min(best, geo.folds() * geo.cycles_per_fold);
        }
        const TpuMapping s = search_dataflow(g, 0, cfg);
        CHECK(s.cost.cycles == best);
        CHECK(s.mapspace == 3);
        CHECK(s.evaluated == 3);
    }
    // a long reduction over few rows: output stationary holds the 4 x 8 outputs while k streams
    CHECK(search_dataflow(gemm(4, 8, 512), 0, config("ws", true)).dataflow == Dataflow::OS);
}

TEST_CASE("a tie keeps the config's own dataflow", "[unit][tpu][mapping]") {
    // 64 x 64 x 8 on an 8 x 8 array: WS and IS both take 8 folds of 2R + C + T - 2 = 86 cycles
    // (the same bytes, by symmetry), OS 64 folds of K + R + C - 2 = 22
    const GemmView g = gemm(64, 64, 8);
    const FoldCost ws = fold_cost(g, 0, config("ws", true), Dataflow::WS), is = fold_cost(g, 0, config("ws", true), Dataflow::IS);
    CHECK(ws.cycles == 688);
    CHECK(is.cycles == 688);
    CHECK(ws.dram_bytes == is.dram_bytes);
    CHECK(fold_cost(g, 0, config("ws", true), Dataflow::OS).cycles == 1408);
    CHECK(search_dataflow(g, 0, config("is", true)).dataflow == Dataflow::IS);
    CHECK(search_dataflow(g, 0, config("ws", true)).dataflow == Dataflow::WS);
    CHECK(search_dataflow(g, 0, config("search", true)).dataflow == Dataflow::WS);
    CHECK(config("search", true).dataflow_search);
    CHECK(config("search", true).dataflow == Dataflow::WS);
}

TEST_CASE("a real DRAM adds its transfers to a dataflow's cycles", "[unit][tpu][mapping]") {
    const GemmView g = gemm(300, 40, 24);
    for (Dataflow df : {Dataflow::WS, Dataflow::OS, Dataflow::IS}) {
        const FoldCost ideal = fold_cost(g, 0, config("ws", true), df), real = fold_cost(g, 0, config("ws", false), df);
        CHECK(real.cycles > ideal.cycles);
        CHECK(real.dram_bytes > 0);
    }
}
