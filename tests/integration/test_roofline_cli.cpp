// The roofline machine (kind = "roofline"): exact cycle formulas on a hand-made layer, energy as
// the sum of its parts, and the bound it reports.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kSrc = ARCHSIM_SOURCE_DIR;

/// One 1x1 convolution, 56x56x64 -> 56x56x64 (a GEMM of 3136 x 64 x 64), as a SCALE-Sim topology.
std::string layer(const std::string& dir) {
    const std::string path = dir + "/pw.csv";
    std::ofstream(path) << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
                           "PW,56,56,1,1,64,64,1,\n";
    return path;
}

constexpr double kMacs = 3136.0 * 64 * 64;
constexpr double kBytes = 3136.0 * 64 + 64 * 64 + 3136.0 * 64;  // int8: ifmap, filter, ofmap once each

}  // namespace

TEST_CASE("roofline: an operator takes the longer of its compute and its slowest level", "[e2e][roofline]") {
    const std::string dir = temp_dir("roofline");
    const std::string base = "run " + layer(dir) + " --arch " + kSrc + "/configs/roofline/tpu_v1.toml --precision int8 " +
                             "--set clock_mhz=1000 --set compute.macs_per_cycle.int8=1024 --set energy.static_w=0 ";
    SECTION("compute-bound") {
        json m = run_json_ok(base + "--set dram.bandwidth_gbps=100000");
        CHECK(m["total"]["latency_cycles"].get<double>() == std::ceil(kMacs / 1024));
        CHECK(m["total"]["stall_cycles"].get<double>() == 0);
        CHECK(m["ops"][0]["bound"] == "compute");
        CHECK(m["total"]["utilization"].get<double>() == Approx(1.0));
    }
    SECTION("memory-bound: DRAM at 1 GB/s moves 1 byte per cycle of a 1 GHz clock") {
        json m = run_json_ok(base + "--set dram.bandwidth_gbps=1");
        CHECK(m["total"]["latency_cycles"].get<double>() == kBytes);
        CHECK(m["total"]["compute_cycles"].get<double>() == std::ceil(kMacs / 1024));
        CHECK(m["total"]["stall_cycles"].get<double>() == kBytes - std::ceil(kMacs / 1024));
        CHECK(m["ops"][0]["bound"] == "memory_bound");
        CHECK(m["total"]["traffic_bytes"]["dram"].get<double>() == kBytes);
    }
    SECTION("an on-chip level slower than DRAM binds instead") {
        json m = run_json_ok(base + "--set dram.bandwidth_gbps=100000 --set sram.bandwidth_gbps=2 --set sram.pj_per_byte=1.5");
        CHECK(m["total"]["latency_cycles"].get<double>() == std::ceil(kBytes / 2));
        CHECK(m["total"]["traffic_bytes"]["sram"].get<double>() == kBytes);
    }
    SECTION("energy is MACs x pJ/MAC plus bytes x pJ/byte at each level") {
        json m = run_json_ok(base + "--set energy.pj_per_mac.int8=0.5 --set dram.pj_per_byte=10 --set sram.bandwidth_gbps=50 "
                                    "--set sram.pj_per_byte=2");
        const json& e = m["total"]["energy_breakdown_j"];
        CHECK(e["compute"].get<double>() == Approx(kMacs * 0.5e-12));
        CHECK(e["dram"].get<double>() == Approx(kBytes * 10e-12));
        CHECK(e["sram"].get<double>() == Approx(kBytes * 2e-12));
        CHECK(m["total"]["energy_j"].get<double>() == Approx(kMacs * 0.5e-12 + kBytes * 12e-12));
    }
    fs::remove_all(dir);
}

TEST_CASE("roofline: each config's peak is its detailed twin's peak", "[e2e][roofline]") {
    // the roofline configs describe the same devices as the detailed ones: same peak MACs per cycle
    const std::pair<const char*, const char*> twins[] = {{"tpu/tpu_v1.toml", "roofline/tpu_v1.toml"},
                                                         {"kpu/t256.toml", "roofline/kpu_t256.toml"},
                                                         {"gpu/a100_sxm4_80gb.toml", "roofline/a100_sxm4_80gb.toml"},
                                                         {"cpu/host.toml", "roofline/host.toml"}};
    const std::string model = kSrc + "/workloads/models/resnet18.onnx";
    for (const auto& [detailed, roofline] : twins)
        for (const char* p : {"int8", "fp16", "bf16", "fp32"}) {
            INFO(detailed << " vs " << roofline << " at " << p);
            json d = run_json_ok("run " + model + " --arch " + kSrc + "/configs/" + detailed + " --precision " + p);
            json r = run_json_ok("run " + model + " --arch " + kSrc + "/configs/" + roofline + " --precision " + p);
            CHECK(r["total"]["peak_macs_per_cycle"] == d["total"]["peak_macs_per_cycle"]);
            CHECK(r["total"]["macs"] == d["total"]["macs"]);
        }
}
