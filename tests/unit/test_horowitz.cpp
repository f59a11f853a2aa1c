// Energy constants reproduce their published anchors (Horowitz, ISSCC 2014).
#include <catch2/catch.hpp>

#include "arch/energy/horowitz.h"

using namespace archsim;

TEST_CASE("SRAM energy per byte hits the published 64-bit read energies", "[unit][energy]") {
    CHECK(horowitz::sram_pj_per_byte(8 * 1024) == Approx(10.0 / 8));
    CHECK(horowitz::sram_pj_per_byte(32 * 1024) == Approx(20.0 / 8));
    CHECK(horowitz::sram_pj_per_byte(1024 * 1024) == Approx(100.0 / 8));
    // monotone in between
    CHECK(horowitz::sram_pj_per_byte(64 * 1024) > horowitz::sram_pj_per_byte(32 * 1024));
    CHECK(horowitz::sram_pj_per_byte(64 * 1024) < horowitz::sram_pj_per_byte(1024 * 1024));
}

TEST_CASE("MAC energy is multiply plus accumulate", "[unit][energy]") {
    CHECK(horowitz::mac_pj(Precision::Int8) == Approx(0.3));
    CHECK(horowitz::mac_pj(Precision::Fp16) == Approx(2.0));
    CHECK(horowitz::mac_pj(Precision::Fp32) == Approx(4.6));
    CHECK(horowitz::mac_pj(Precision::Bf16) < horowitz::mac_pj(Precision::Fp16));
    // fp8 (E4M3): the fp16 multiply scaled by its 4-bit mantissa's area, then the fp32 add
    CHECK(horowitz::mac_pj(Precision::Fp8) == Approx(1.1 * 16.0 / 121.0 + 0.9));
    CHECK(operand_bytes(Precision::Fp8) == 1);
    CHECK(to_string(parse_precision("fp8", "test")) == "fp8");
    CHECK(horowitz::kDramPjPerByte == Approx(162.5));  // 1.3 nJ per 64-bit access = 8 bytes
}

TEST_CASE("node scaling is first-order C V^2 from 45 nm, 0.9 V", "[unit][energy]") {
    CHECK(horowitz::node_scale(45, 0.9) == 1.0);
    CHECK(horowitz::node_scale(7, 0.75) == Approx(0.108).epsilon(1e-3));  // the factor the 7 nm configs used to carry as literals
    CHECK(horowitz::node_scale(22.5, 0.9) == Approx(0.5));
    CHECK(horowitz::node_scale(45, 0.45) == Approx(0.25));
    CHECK_THROWS(horowitz::node_scale(0, 0.9));
    CHECK(horowitz::tf32_mac_pj() == Approx(3.7 * 121.0 / 576.0 + 0.9));
}
