// KPU end to end: fabric size, movers, and the depthwise weak case, through the archsim binary.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
const std::string kT256 = std::string(ARCHSIM_SOURCE_DIR) + "/configs/kpu/t256.toml";


std::string layer_csv(const std::string& rows) {
    const std::string dir = temp_dir("kpu_csv");
    std::ofstream(dir + "/layers.csv") << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                                          "Num Filter, Strides,\n"
                                       << rows;
    return dir + "/layers.csv";
}
}  // namespace

// The mapping's scaling, with the mode's power envelope lifted (power.mid_w = 0): a larger fabric
// under the same envelope would run at a lower clock.
TEST_CASE("a layer that fills one tile runs no faster on a larger fabric", "[e2e][kpu]") {
    // 1x1 conv over a 4x4 map, 32 filters, 64 channels: M = 16, N = 32, K = 64 -> one 32x32 block
    const std::string csv = layer_csv("small,4,4,1,1,64,32,1,\n");
    json small = run_json_ok("run " + csv + " --arch " + kT256 + " --set tiles.rows=2 --set tiles.cols=2 --set dram.ideal=true --set power.mid_w=0");
    json large = run_json_ok("run " + csv + " --arch " + kT256 + " --set tiles.rows=32 --set tiles.cols=32 --set dram.ideal=true --set power.mid_w=0");
    CHECK(small["total"]["latency_cycles"] == large["total"]["latency_cycles"]);
    CHECK(large["total"]["utilization"].get<double>() < small["total"]["utilization"].get<double>());
    // and its cycles are the wavefront's: k + (R-1) + (C-1) + fill + drain
    CHECK(small["total"]["compute_cycles"].get<int64_t>() == 64 + 31 + 31 + 32 + 32);
}

TEST_CASE("a layer with many blocks speeds up until the fabric outgrows it", "[e2e][kpu]") {
    const std::string csv = layer_csv("big,58,58,3,3,64,256,1,\n");  // M = 3136, N = 256 -> 98 x 8 = 784 blocks
    int64_t prev = INT64_MAX;
    std::vector<int64_t> cycles;
    for (int n : {2, 4, 8, 16, 32, 64}) {
        json m = run_json_ok("run " + csv + " --arch " + kT256 + " --set tiles.rows=" + std::to_string(n) +
                          " --set tiles.cols=" + std::to_string(n) + " --set dram.ideal=true --set power.mid_w=0");
        cycles.push_back(m["total"]["latency_cycles"].get<int64_t>());
        CHECK(cycles.back() <= prev);
        prev = cycles.back();
    }
    for (size_t i = 1; i < 5; ++i) CHECK(cycles[i] < cycles[i - 1]);  // 4 ... 1024 tiles: fewer waves each time
    CHECK(cycles[5] == cycles[4]);  // 4096 tiles: the 784 blocks already fit in one wave on 1024
}

TEST_CASE("slow streamers stall the wavefront and the trace says why", "[e2e][kpu]") {
    const std::string csv = layer_csv("big,58,58,3,3,64,256,1,\n");
    json fast = run_json_ok("run " + csv + " --arch " + kT256 + " --set dram.ideal=true");
    json slow = run_json_ok("run " + csv + " --arch " + kT256 + " --set dram.ideal=true --set streamer.bytes_per_cycle=8");
    CHECK(slow["total"]["stall_cycles_by_cause"]["streamer"].get<int64_t>() > 0);
    CHECK(slow["total"]["latency_cycles"].get<int64_t>() > fast["total"]["latency_cycles"].get<int64_t>());
    CHECK(slow["total"]["compute_cycles"] == fast["total"]["compute_cycles"]);
}

TEST_CASE("weights that do not fit the L3 are re-streamed and DRAM traffic shows it", "[e2e][kpu]") {
    // 3x3 conv with 512 filters over 512 channels (2.25 MiB of int8 weights), 28x28 map
    const std::string csv = layer_csv("conv,30,30,3,3,512,512,1,\n");
    json fits = run_json_ok("run " + csv + " --arch " + kT256);
    json tiny = run_json_ok("run " + csv + " --arch " + kT256 + " --set l3.kib_per_tile=1 --set tiles.rows=4 --set tiles.cols=4");
    const double weights = 3.0 * 3 * 512 * 512;
    CHECK(fits["total"]["traffic_bytes"]["dram"].get<double>() < 1.5 * weights + 30.0 * 30 * 512 * 2);
    CHECK(tiny["total"]["traffic_bytes"]["dram"].get<double>() > 2 * weights);
}

TEST_CASE("the mapping search reads weights that do not fit the L3 once where the fixed order re-reads them", "[e2e][kpu][mapping]") {
    // 1x1 conv, 16x16 map, 2048 -> 2048 channels: M = 256 (8 row blocks), N = 2048 (64 column
    // blocks), K = 2048; 4 MiB of int8 weights against a 2 MiB L3, 512 KiB of activations and as
    // much output (a model output: written to DRAM). Row-major deals rows 0-3 x all columns, then
    // rows 4-7: every weight panel twice. Column-major deals columns 0-31 x all rows, then 32-63:
    // every weight panel once (a wave's 32 weight panels fill the L3, so the activations come twice).
    const std::string csv = layer_csv("pw,16,16,1,1,2048,2048,1,\n");
    const std::string small_l3 = " --arch " + kT256 + " --set l3.kib_per_tile=8";
    json fixed = run_json_ok("run " + csv + small_l3 + " --mapper fixed");
    json search = run_json_ok("run " + csv + small_l3);
    const double weights = 2048.0 * 2048, acts = 256.0 * 2048;
    CHECK(fixed["mapper"] == "fixed");
    CHECK(search["mapper"] == "auto");
    CHECK(fixed["total"]["traffic_bytes"]["dram"].get<double>() == 2 * weights + 2 * acts);
    CHECK(search["total"]["traffic_bytes"]["dram"].get<double>() <= weights + 3 * acts);
    CHECK(search["total"]["latency_s"].get<double>() < fixed["total"]["latency_s"].get<double>());
    // each run says what it ran: the fixed schedule, and the search's choice with its effort
    const json& f = fixed["ops"][0];
    CHECK(f["mapping"] == "rows>cols");
    CHECK(f["mapspace"] == 1);
    CHECK(f["mappings_evaluated"] == 0);
    const json& s = search["ops"][0];
    CHECK(s["mapping"].get<std::string>().rfind("cols>rows", 0) == 0);
    CHECK(s["mappings_evaluated"].get<int64_t>() >= 2);
    CHECK(s["mappings_evaluated"].get<int64_t>() <= s["mapspace"].get<int64_t>());
    // the same MACs either way
    CHECK(search["total"]["macs"] == fixed["total"]["macs"]);
    CHECK(run_archsim("run " + csv + small_l3 + " --mapper best").exit_code != 0);
}

TEST_CASE("a depthwise convolution is a weak case: low utilization", "[e2e][kpu]") {
    const std::string csv = layer_csv("DPconv,58,58,3,3,256,256,1,\nPWconv,56,56,1,1,256,256,1,\n");
    json m = run_json_ok("run " + csv + " --arch " + kT256 + " --set dram.ideal=true");
    const double dw = m["ops"][0]["utilization"].get<double>();
    const double pw = m["ops"][1]["utilization"].get<double>();
    CHECK(dw < 1.0 / 32);
    CHECK(pw > 10 * dw);
}
