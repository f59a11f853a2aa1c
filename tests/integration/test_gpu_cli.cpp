// GPU end to end: a memory-bound kernel at its bandwidth, fusion, and the tail wave.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
const std::string kA100 = std::string(ARCHSIM_SOURCE_DIR) + "/configs/gpu/a100_sxm4_80gb.toml";

}  // namespace

TEST_CASE("a memory-bound kernel runs at exactly its sustained DRAM bandwidth", "[e2e][gpu]") {
    const std::string relu = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx";  // 3x4x5 fp32
    if (!fs::exists(relu)) {
        WARN("libonnx-testdata not installed; skipped");
        return;
    }
    // batch 2^20 replaces dim 0 (3): 20 Mi elements of fp16 in and out; no launch gap, no latency
    const std::string base = "run " + relu + " --arch " + kA100 +
                             " --batch 1048576 --set kernel.launch_overhead_us=0 --set dram.latency_ns=0 --set l2.latency_cycles=0";
    const double bytes = 2.0 * 1048576 * 20 * 2;
    json m = run_json_ok(base + " --set dram.efficiency=1");
    CHECK(m["total"]["traffic_bytes"]["dram"].get<double>() == bytes);
    CHECK(m["total"]["latency_s"].get<double>() == Approx(bytes / 2039e9).epsilon(0.001));
    // twice the bandwidth, half the time
    json fast = run_json_ok(base + " --set dram.efficiency=1 --set dram.bandwidth_gbps=4078");
    CHECK(fast["total"]["latency_s"].get<double>() == Approx(bytes / 4078e9).epsilon(0.001));
    // the config's own measured efficiency (0.852 of the datasheet's 2039 GB/s): streams at 1737 GB/s
    json sustained = run_json_ok(base);
    CHECK(sustained["total"]["latency_s"].get<double>() == Approx(bytes / (2039e9 * 0.852)).epsilon(0.001));
}

TEST_CASE("fused elementwise epilogues launch no kernel of their own", "[e2e][gpu]") {
    const std::string model = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx";
    // the machine's own fusion rule, which applies to the graph as imported (--runtime none)
    json fused = run_json_ok("run " + model + " --arch " + kA100 + " --runtime none");
    json unfused = run_json_ok("run " + model + " --arch " + kA100 + " --runtime none --set fusion.elementwise=false");
    const auto launches = [](const json& m) { return m["total"]["stall_cycles_by_cause"]["launch"].get<double>(); };
    CHECK(launches(unfused) > launches(fused));
    CHECK(unfused["total"]["latency_s"].get<double>() > fused["total"]["latency_s"].get<double>());
    CHECK(unfused["total"]["traffic_bytes"]["dram"].get<double>() > fused["total"]["traffic_bytes"]["dram"].get<double>());
}

TEST_CASE("a power limit lowers the SM clock until the run fits it, and a limit never reached changes nothing", "[e2e][gpu]") {
    const std::string model = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx";
    const std::string base = "run " + model + " --arch " + kA100 + " --batch 16 --set power.window_us=20";
    json free = run_json_ok(base + " --set power.tdp_w=0");
    const double free_w = free["total"]["energy_j"].get<double>() / free["total"]["latency_s"].get<double>();
    REQUIRE(free_w > 10);
    // a limit far above what it draws: the same run to the bit
    json far = run_json_ok(base + " --set power.tdp_w=100000");
    CHECK(far["total"]["latency_s"] == free["total"]["latency_s"]);
    CHECK(far["total"]["energy_j"] == free["total"]["energy_j"]);
    CHECK(far["total"]["throttled_share"] == 0.0);
    // half the power it draws unlimited: slower, less energy per operation (the lower clock runs at
    // a lower voltage: the A100's voltage-frequency points), and the average power down to the
    // limit (the controller pays back the first window, run at the boost clock)
    const double limit_w = free_w / 2;
    json capped = run_json_ok(base + " --set power.tdp_w=" + std::to_string(limit_w));
    CHECK(capped["total"]["latency_s"].get<double>() > 1.2 * free["total"]["latency_s"].get<double>());
    CHECK(capped["total"]["energy_breakdown_j"]["compute"].get<double>() < free["total"]["energy_breakdown_j"]["compute"].get<double>());
    CHECK(capped["total"]["energy_breakdown_j"]["dram"] == free["total"]["energy_breakdown_j"]["dram"]);  // off chip: no voltage factor
    CHECK(capped["total"]["power_avg_w"].get<double>() <= limit_w * (1 + 1e-9));
    CHECK(capped["total"]["clock_min_hz"].get<double>() < capped["total"]["clock_mean_hz"].get<double>() + 1);
    CHECK(capped["total"]["clock_mean_hz"].get<double>() < 1410e6);
    CHECK(capped["total"]["throttled_share"].get<double>() > 0.5);
    CHECK(capped["total"]["power_unthrottled_w"].get<double>() > limit_w);
    CHECK(capped["total"]["macs"] == free["total"]["macs"]);
    // with fixed voltage (voltage.boost_v = 0) the energy per operation stays: power ~ clock
    json fixed_v = run_json_ok(base + " --set voltage.boost_v=0 --set power.tdp_w=" + std::to_string(limit_w));
    CHECK(fixed_v["total"]["energy_breakdown_j"]["compute"] == free["total"]["energy_breakdown_j"]["compute"]);
    CHECK(fixed_v["total"]["latency_s"].get<double>() > capped["total"]["latency_s"].get<double>());
    // a limit at or below the static power is a config error
    CliResult bad = run_archsim(base + " --set energy.static_w=50 --set power.tdp_w=40 --out " + temp_dir("gpu_power_bad"));
    CHECK(bad.exit_code != 0);
    CHECK(bad.err.find("power.tdp_w") != std::string::npos);
}

TEST_CASE("CUDA graphs shorten every kernel's launch gap to the graph launch overhead", "[e2e][gpu]") {
    const std::string model = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx";
    // the clock fixed (no power limit) so that the gaps' cycles compare directly
    const std::string base = "run " + model + " --arch " + kA100 + " --set power.tdp_w=0 --set kernel.launch_overhead_us=2.6 "
                             "--set kernel.graph_launch_overhead_us=1.3";
    const json streams = run_json_ok(base);
    const json graphs = run_json_ok(base + " --set kernel.cuda_graphs=true");
    const auto launches = [](const json& m) { return m["total"]["stall_cycles_by_cause"]["launch"].get<double>(); };
    REQUIRE(launches(streams) > 0);
    CHECK(launches(graphs) == Approx(launches(streams) * 1.3 / 2.6).epsilon(1e-6));
    CHECK(streams["total"]["latency_s"].get<double>() - graphs["total"]["latency_s"].get<double>() ==
          Approx((launches(streams) - launches(graphs)) / 1410e6).epsilon(1e-3));
}

TEST_CASE("each GEMM kernel reports the CTA tile and split-K and raster order its search chose under every --mapper", "[e2e][gpu][mapping]") {
    const std::string model = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx";
    const json m = run_json_ok("run " + model + " --arch " + kA100 + " --detail kernel");
    int mapped = 0;  // ResNet-18's 20 convolutions run as GEMM kernels (the batch-1 classifier as a GEMV, a streaming kernel)
    for (const auto& op : m["ops"]) {
        if (!op.contains("mapping")) continue;
        ++mapped;
        INFO(op["name"]);
        CHECK(op["mapping"].get<std::string>().rfind("CTA ", 0) == 0);
        // the menu's 6 tiles x 8 split-K factors x 2 raster orders; priced: at least one plan and both orders
        CHECK(op["mapspace"] == 96);
        CHECK(op["mappings_evaluated"].get<int64_t>() >= 3);
        CHECK(op["mappings_evaluated"].get<int64_t>() <= 96);
    }
    CHECK(mapped == 20);
    // the tile chooser is the GPU's search whatever --mapper says: fixed maps and times alike
    const json fixed = run_json_ok("run " + model + " --arch " + kA100 + " --detail kernel --mapper fixed");
    CHECK(fixed["total"]["latency_s"] == m["total"]["latency_s"]);
    for (size_t i = 0; i < m["ops"].size(); ++i) CHECK(fixed["ops"][i].value("mapping", "") == m["ops"][i].value("mapping", ""));
}
