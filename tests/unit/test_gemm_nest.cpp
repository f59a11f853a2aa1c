// The CPU's GEMM loop nest (arch/cpu/gemm_nest.h) apart from the machine: every MAC computed
// once, the B panel packed once, the work spread evenly, the packing rules of BLIS and oneDNN.
#include <catch2/catch.hpp>

#include <set>
#include <tuple>

#include "arch/cpu/gemm_nest.h"

using namespace archsim;

namespace {

/// AVX2's micro-tile (6 x 16) with cache-sized panels, as choose_blocking gives a Zen 3 core.
const Blocking kAvx2{6, 16, 256, 72, 4080};

/// Every (jc, pc) step of `nest`, calling f(ncb, kcb).
template <class F>
void each_step(const GemmNest& nest, F f) {
    for (int64_t jc = 0; jc < nest.n; jc += nest.b.nc)
        for (int64_t pc = 0; pc < nest.k; pc += nest.b.kc) f(std::min(nest.b.nc, nest.n - jc), std::min(nest.b.kc, nest.k - pc));
}

}  // namespace

TEST_CASE("a GEMM's loop nest computes every MAC once and covers every C tile of a step once", "[unit][cpu][gemm]") {
    // 9 shapes x 6 core counts: tiny and odd sizes, a GEMV, ResNet-18's convolutions as GEMMs, a
    // GEMM of several nc and kc blocks
    for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {5, 7, 3}, {6, 16, 256}, {784, 64, 576}, {50176, 64, 147},
                                  {1, 4096, 4096}, {8, 1000, 2048}, {2048, 2048, 1024}, {97, 33, 1000}})
        for (const int64_t cores : {1, 2, 3, 8, 64, 96}) {
            INFO(m << " x " << n << " x " << k << " on " << cores << " cores");
            const GemmNest nest = plan_gemm_nest(fit_blocking(kAvx2, m, n, k), m, n, k, cores, {});
            CHECK(nest.b.mc % nest.b.mr == 0);
            uint64_t macs = 0;
            each_step(nest, [&](int64_t ncb, int64_t kcb) {
                const MacroQueues q = macro_queues(nest, ncb, kcb);
                REQUIRE(q.queue.size() == static_cast<size_t>(cores));
                std::set<std::pair<int64_t, int64_t>> tiles;  // (block, panel) pairs computed
                size_t least = SIZE_MAX, most = 0;
                for (const auto& items : q.queue) {
                    least = std::min(least, items.size()), most = std::max(most, items.size());
                    for (const int64_t w : items) {
                        const MacroWork x = q.work(w);
                        CHECK(x.mcb > 0);
                        CHECK(x.ic + x.mcb <= m);
                        CHECK(x.p0 < x.p1);
                        CHECK(x.macs == static_cast<uint64_t>(x.mcb * x.cols * kcb));
                        macs += x.macs;
                        for (int64_t p = x.p0; p < x.p1; ++p) CHECK(tiles.insert({x.ic / nest.b.mc, p}).second);
                    }
                }
                CHECK(tiles.size() == static_cast<size_t>(q.ic_blocks * q.panels));
                CHECK(most - least <= 1);  // dealt in turn: no core two items ahead
                if (q.ic_blocks >= cores) CHECK(q.jsplit == 1);
                if (q.ic_blocks * q.panels >= cores) CHECK(least >= 1);  // every core has work when there is enough
            });
            CHECK(macs == static_cast<uint64_t>(m * n * k));
        }
}

TEST_CASE("the cores pack a B panel's rows once between them", "[unit][cpu][gemm]") {
    for (const int64_t kcb : {1, 5, 256, 257})
        for (const int64_t cores : {1, 2, 7, 96}) {
            const std::vector<PackRows> rows = pack_rows(kcb, cores);
            REQUIRE(rows.size() == static_cast<size_t>(cores));
            int64_t next = 0;
            for (const PackRows& r : rows) {
                if (r.rows == 0) continue;
                CHECK(r.row0 == next);
                next += r.rows;
            }
            CHECK(next == kcb);
        }
}

TEST_CASE("a GEMM packs as BLIS and oneDNN do: reuse packs, a single row or column of calls reads in place", "[unit][cpu][gemm]") {
    auto nest = [](int64_t m, int64_t n, const GemmPacking& p) { return plan_gemm_nest(fit_blocking(kAvx2, m, n, 512), m, n, 512, 2, p); };
    const GemmNest big = nest(512, 512, {});
    CHECK((big.pack_a && big.pack_b && !big.prepacked));
    CHECK_FALSE(nest(6, 512, {}).pack_b);   // m <= mr: one row of micro-kernel calls reads B once
    CHECK_FALSE(nest(512, 16, {}).pack_a);  // n <= nr: one column of calls reads A once
    const GemmNest weights = nest(512, 512, {false, true, true, false});
    CHECK((weights.prepacked && !weights.pack_b));  // weights reordered into panels at load time
    CHECK_FALSE(nest(512, 512, {false, false, false, true}).pack_a);  // a direct convolution's input
    const GemmNest blas = nest(1, 16, {true, true, true, true});
    CHECK((blas.pack_a && blas.pack_b && !blas.prepacked));  // the BLAS packs both at every call
}

TEST_CASE("the ic loop's rows are split evenly among the cores, within the cache's block", "[unit][cpu][gemm]") {
    // M = 784 on 96 cores: blocks of a few mr rows, not one block of 784 on a few cores
    const GemmNest g = plan_gemm_nest(fit_blocking(kAvx2, 784, 64, 576), 784, 64, 576, 96, {});
    CHECK(g.b.mc <= kAvx2.mc);
    CHECK(busiest_core_rows(784, g.b.mc, 96) <= 12);
    // one core and one block: the block is the cache's
    CHECK(plan_gemm_nest(fit_blocking(kAvx2, 60, 64, 576), 60, 64, 576, 1, {}).b.mc == 60);
}

TEST_CASE("a kc slice reads the A columns that exist: implicit im2col wraps onto the last ones", "[unit][cpu][gemm]") {
    CHECK(a_source_cols(0, 256, 1000) == std::pair<int64_t, int64_t>{0, 256});
    CHECK(a_source_cols(768, 256, 1000) == std::pair<int64_t, int64_t>{744, 256});  // would run past column 1000
    CHECK(a_source_cols(256, 256, 64) == std::pair<int64_t, int64_t>{0, 64});       // 64 distinct columns, read whole
    for (int64_t pc = 0; pc < 2000; pc += 256) {
        const auto [first, count] = a_source_cols(pc, 256, 300);
        CHECK(first >= 0);
        CHECK(first + count <= 300);
        CHECK(count == 256);
    }
}
