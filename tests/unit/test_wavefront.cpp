// KPU wavefront timing from first principles, fabric tiling, and the published design points.
#include <catch2/catch.hpp>

#include "arch/kpu/kpu_config.h"
#include "arch/kpu/wavefront.h"

using namespace archsim;

namespace {
KpuConfig fabric(int64_t tiles_r, int64_t tiles_c, int64_t pe_r, int64_t pe_c, int64_t fill = 0, int64_t drain = 0) {
    ParamSet p(kpu_params().schema());
    p.apply_override("tiles.rows=" + std::to_string(tiles_r));
    p.apply_override("tiles.cols=" + std::to_string(tiles_c));
    p.apply_override("pe.rows=" + std::to_string(pe_r));
    p.apply_override("pe.cols=" + std::to_string(pe_c));
    p.apply_override("pipeline.fill_cycles=" + std::to_string(fill));
    p.apply_override("pipeline.drain_cycles=" + std::to_string(drain));
    return make_kpu_config(p);
}
GemmView gemm(int64_t m, int64_t n, int64_t k, int64_t groups = 1) {
    GemmView g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.groups = groups;
    g.a_unique_elems = m * k;
    return g;
}
KpuConfig published(const std::string& file) {
    ParamSet p(kpu_params().schema());
    p.load_toml_file(std::string(ARCHSIM_SOURCE_DIR) + "/configs/kpu/" + file, {"kind"});
    return make_kpu_config(p);
}
}  // namespace

TEST_CASE("a 1x1 array computes a k-long dot product in k cycles", "[unit][kpu]") {
    CHECK(wavefront_cycles(7, 1, 1) == 7);
    CHECK(plan_gemm(gemm(1, 1, 7), fabric(1, 1, 1, 1)).ideal_cycles == 7);
}

TEST_CASE("an N x N x N matmul on an N x N array takes 3N - 2 steps under t = i + j + k", "[unit][kpu]") {
    for (int64_t n : {1, 2, 3, 8, 16, 32}) {
        INFO(n);
        CHECK(wavefront_cycles(n, n, n) == 3 * n - 2);
        CHECK(plan_gemm(gemm(n, n, n), fabric(1, 1, n, n)).ideal_cycles == 3 * n - 2);
    }
}

TEST_CASE("a tile that fits exactly is one block, and one element more is a second, pipelined block", "[unit][kpu]") {
    const KpuConfig one_tile = fabric(1, 1, 4, 4);
    auto fits = plan_gemm(gemm(4, 4, 10), one_tile);
    CHECK(fits.blocks == 1);
    CHECK(fits.ideal_cycles == 10 + 3 + 3);
    auto more = plan_gemm(gemm(5, 4, 10), one_tile);
    CHECK(more.blocks == 2);
    CHECK(more.waves == 2);
    CHECK(more.ideal_cycles == 2 * 10 + 3 + 3);  // the second wavefront follows the first: skew paid once
    auto wider = plan_gemm(gemm(4, 5, 10), one_tile);
    CHECK(wider.blocks == 2);
}

TEST_CASE("pipelined tiles overlap fill and drain, so utilization approaches 1", "[unit][kpu]") {
    const int64_t R = 32, C = 32, k = 64;
    double prev = 0;
    for (int64_t blocks : {1, 4, 16, 64, 256}) {
        const double cycles = double(pipelined_cycles(blocks, k, R, C));
        const double util = double(blocks * k) / cycles;  // each block keeps every PE busy for k cycles
        CHECK(util > prev);
        prev = util;
    }
    CHECK(prev > 0.99);
    CHECK(pipelined_cycles(3, k, R, C) == 3 * k + 62);
}

TEST_CASE("blocks spread over tiles in waves, and a larger fabric does not help a layer that cannot fill it", "[unit][kpu]") {
    // 4 blocks of 32x32 on 2x2 tiles: one wave; on 16x16 tiles: still one wave, 4 tiles used
    auto small = plan_gemm(gemm(64, 64, 100), fabric(2, 2, 32, 32, 32, 32));
    auto large = plan_gemm(gemm(64, 64, 100), fabric(16, 16, 32, 32, 32, 32));
    CHECK(small.tiles_used == 4);
    CHECK(large.tiles_used == 4);
    CHECK(small.ideal_cycles == large.ideal_cycles);
    // 64 blocks: 16 waves on 2x2 tiles, 1 wave on 8x8
    auto busy_small = plan_gemm(gemm(256, 256, 100), fabric(2, 2, 32, 32));
    auto busy_large = plan_gemm(gemm(256, 256, 100), fabric(8, 8, 32, 32));
    CHECK(busy_small.waves == 16);
    CHECK(busy_large.waves == 1);
    CHECK(busy_large.ideal_cycles < busy_small.ideal_cycles);
}

TEST_CASE("the waves of a pass execute exactly the GEMM's MACs", "[unit][kpu]") {
    GemmView g = gemm(70, 45, 33, 3);
    g.batch = 2;
    int64_t macs = 0, waves = 0;
    for_each_wave(g, fabric(2, 3, 8, 16), {}, [&](int64_t, const std::vector<FabricBlock>& blocks) {
        ++waves;
        CHECK(blocks.size() <= 6);
        for (const auto& b : blocks) macs += b.m * b.n * g.k;
    });
    CHECK(macs == g.macs());
    CHECK(waves == plan_gemm(g, fabric(2, 3, 8, 16)).waves);
}

TEST_CASE("a depthwise convolution uses one PE column per block", "[unit][kpu]") {
    // 3x3 depthwise over 64 channels of 56x56: 64 groups, n = 1 per group
    GemmView g = gemm(56 * 56, 1, 9, 64);
    const KpuConfig cfg = fabric(4, 4, 32, 32);
    auto p = plan_gemm(g, cfg);
    const double util = double(g.macs()) / (double(p.ideal_cycles) * cfg.peak_macs_per_cycle());
    CHECK(util <= 1.0 / 32);
}

TEST_CASE("the published design points have exactly the peak their configs imply", "[unit][kpu]") {
    auto t64 = published("t64.toml");
    CHECK(t64.peak_macs_per_second() == 8.0 * 8 * 32 * 32 * 1 * 475e6);
    CHECK(2 * t64.peak_macs_per_second() / 1e12 == Approx(62.26).epsilon(0.001));
    auto t256 = published("t256.toml");
    CHECK(t256.peak_macs_per_second() == 16.0 * 16 * 32 * 32 * 1 * 600e6);
    CHECK(2 * t256.peak_macs_per_second() / 1e12 == Approx(314.6).epsilon(0.001));
    auto t768 = published("t768.toml");
    CHECK(t768.peak_macs_per_second() == 32.0 * 24 * 16 * 8 * 5 * 1375e6);
    CHECK(2 * t768.peak_macs_per_second() / 1e12 == Approx(1354).epsilon(0.005));
    // the operating point selects the clock
    ParamSet p(kpu_params().schema());
    p.load_toml_file(std::string(ARCHSIM_SOURCE_DIR) + "/configs/kpu/t64.toml", {"kind"});
    p.apply_override("power_mode=high");
    CHECK(make_kpu_config(p).clock_mhz() == 550.0);
    CHECK(make_kpu_config(p).power_envelope_w() == 10.0);
}

TEST_CASE("mean hop distance on a mesh", "[unit][kpu]") {
    CHECK(mean_mesh_hops(1, 1) == 0.0);
    CHECK(mean_mesh_hops(2, 1) == Approx(0.5));
    CHECK(mean_mesh_hops(3, 3) == Approx(2 * 8.0 / 9));
}

TEST_CASE("a precision that only some tiles support runs on those tiles alone", "[unit][kpu]") {
    ParamSet p(kpu_params().schema());
    p.apply_override("precision=fp32");
    p.apply_override("tiles.fp32_tiles=64");
    const KpuConfig cfg = make_kpu_config(p);
    CHECK(cfg.tiles() == 256);
    CHECK(cfg.compute_tiles() == 64);
    CHECK(cfg.peak_macs_per_cycle() == 64.0 * 32 * 32 * 0.25);  // fp32 at a quarter of the INT8 rate (kpu_params)
    auto plan = plan_gemm(gemm(32 * 128, 32, 16), cfg);  // 128 blocks
    CHECK(plan.tiles_used == 64);
    CHECK(plan.waves == 2);
    p.apply_override("precision=int8");  // int8_tiles = 0: every tile
    CHECK(make_kpu_config(p).compute_tiles() == 256);
    p.apply_override("tiles.int8_tiles=1000");  // capped at the mesh
    CHECK(make_kpu_config(p).compute_tiles() == 256);
}
