// The CPU's blocking search: a block's price on a hand case is CoreSchedule::finish_block's
// formula, every bound is below its price, the branch and bound finds the mapspace's best, and the
// mapspace holds the analytical blocking first and only whole micro-tiles.
#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>

#include "arch/cpu/blocking_search.h"
#include "sim/base/params.h"

using namespace archsim;

namespace {
CpuConfig config(int64_t cores, bool small_caches) {
    ParamSet p(cpu_params().schema());
    p.apply_override("cores=" + std::to_string(cores));
    if (small_caches) {
        p.apply_override("l2.kib=256");
        p.apply_override("l3.kib=4096");
    }
    return make_cpu_config(p);
}
CpuGemmShape shape(int64_t m, int64_t n, int64_t k, int64_t cores, bool blas = false) {
    CpuGemmShape s;
    s.m = m, s.n = n, s.k = k, s.a_cols = k, s.cores = cores;
    s.packing = {blas, true, !blas, false};
    return s;
}
const std::tuple<int64_t, int64_t, int64_t> kShapes[] = {{12, 16, 64}, {784, 256, 576}, {4096, 1024, 1024}, {49, 2048, 4608}, {1, 1000, 2048}};
}  // namespace

TEST_CASE("a one-block GEMM costs finish_block's formula", "[unit][cpu][mapping]") {
    // 12 x 16 x 64 on one core: A (not packed: 16 columns are one nr column) and the prepacked
    // B read in place, one block
    const CpuConfig cfg = config(1, false);
    const Blocking base = choose_blocking(cfg);
    REQUIRE(base.nr == 16);
    REQUIRE(base.kc >= 64);
    const CpuGemmShape g = shape(12, 16, 64, 1);
    const double e = 4, compute = 12.0 * 16 * 64 / (cfg.mac_rate() * cfg.eff_gemm);
    const double a = 12 * 64 * e, b = 64 * 16 * e, c = 12 * 16 * e;
    const double l1 = a + b + 2 * c, l2 = a + b + 2 * c, dram = a + c + c + b;  // C read on the first slice, written on the last
    const double dram_bpc = cfg.dram.bandwidth_gbps * cfg.eff_dram * 1e3 / cfg.clock_mhz;
    const double want = std::max({compute, l1 / (cfg.l2.bytes_per_cycle * cfg.eff_cache),
                                  l2 / (cfg.l3.bytes_per_cycle * cfg.eff_cache) + dram / dram_bpc});
    const BlockingCost cost = price_blocking(cfg, g, base);
    CHECK(cost.cycles == Approx(want).epsilon(1e-12));
    CHECK(cost.dram_bytes == Approx(dram));
    CHECK(cost.bound_cycles == Approx(compute).epsilon(1e-12));
}

TEST_CASE("the blocking search finds the mapspace's best and every bound is below its price", "[unit][cpu][mapping]") {
    for (const int64_t cores : {1, 2, 8})
        for (const bool small : {false, true})
            for (const bool blas : {false, true})
                for (auto [m, n, k] : kShapes) {
                    const CpuConfig cfg = config(cores, small);
                    const Blocking base = choose_blocking(cfg);
                    const CpuGemmShape g = shape(m, n, k, cores, blas);
                    const std::vector<Blocking> space = blocking_mapspace(base, g);
                    const Blocking fitted = fit_blocking(base, m, n, k);
                    REQUIRE(std::tie(space[0].kc, space[0].mc, space[0].nc) == std::tie(fitted.kc, fitted.mc, fitted.nc));
                    std::tuple<double, double, size_t> best{1e300, 1e300, 0};
                    for (size_t i = 0; i < space.size(); ++i) {
                        INFO(m << "x" << n << "x" << k << " cores " << cores << " small " << small << " blas " << blas << " candidate " << i);
                        const Blocking& bl = space[i];
                        CHECK(bl.mc % bl.mr == 0);
                        CHECK(bl.nc % bl.nr == 0);
                        CHECK((bl.kc % 4 == 0 || bl.kc == k));
                        for (size_t j = 0; j < i; ++j) CHECK(std::tie(space[j].kc, space[j].mc, space[j].nc) != std::tie(bl.kc, bl.mc, bl.nc));
                        const BlockingCost c = price_blocking(cfg, g, bl);
                        CHECK(c.bound_cycles <= c.cycles * (1 + 1e-12));
                        best = std::min(best, std::make_tuple(c.cycles, c.dram_bytes, i));
                    }
                    const CpuBlockingChoice s = search_blocking(cfg, g, base);
                    INFO(m << "x" << n << "x" << k << " cores " << cores << " small " << small << " blas " << blas);
                    const Blocking& want = space[std::get<2>(best)];
                    CHECK(std::tie(s.blocking.kc, s.blocking.mc, s.blocking.nc) == std::tie(want.kc, want.mc, want.nc));
                    CHECK(s.cost.cycles == std::get<0>(best));
                    CHECK(s.mapspace == static_cast<int64_t>(space.size()));
                    CHECK(s.evaluated >= 1);
                    CHECK(s.evaluated <= s.mapspace);
                }
}

TEST_CASE("a blocking is named by its nest's block sizes", "[unit][cpu][mapping]") {
    GemmNest n;
    n.b.mc = 444, n.b.kc = 512, n.b.nc = 4096;
    CHECK(describe(n) == "mc 444 kc 512 nc 4096");
}
