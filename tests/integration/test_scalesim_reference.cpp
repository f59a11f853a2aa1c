// In ideal-memory mode the simulated per-layer compute cycles equal SCALE-Sim v2's, layer by layer.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;

namespace {
void check_reference(const std::string& array, const std::string& df) {
    const std::string ref = shared_path("reference/scalesim");
    if (!fs::is_directory(ref)) {
        WARN("shared/reference/scalesim not found; skipped");
        return;
    }
    const std::string out = temp_dir("ss");
    CliResult r = run_archsim("run " + ref + "/Resnet18.csv --arch " + std::string(ARCHSIM_SOURCE_DIR) + "/configs/tpu/tpu_" +
                              array + "_" + df + ".toml --set dram.ideal=true --format json --out " + out);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto m = nlohmann::json::parse(r.out);
    std::ifstream in(ref + "/Resnet18_" + array + "_" + df + "/COMPUTE_REPORT.csv");
    std::string line;
    std::getline(in, line);
    size_t i = 0;
    int64_t total = 0, ref_total = 0;
    while (std::getline(in, line)) {
        std::stringstream ss(line);
        std::string id, cycles;
        std::getline(ss, id, ',');
        std::getline(ss, cycles, ',');
        REQUIRE(i < m["ops"].size());
        INFO("layer " << i << " " << m["ops"][i]["name"]);
        CHECK(m["ops"][i]["compute_cycles"].get<int64_t>() == std::stoll(cycles));
        CHECK(m["ops"][i]["stall_cycles"].get<int64_t>() == 0);
        total += m["ops"][i]["compute_cycles"].get<int64_t>();
        ref_total += std::stoll(cycles);
        ++i;
    }
    CHECK(i == m["ops"].size());
    CHECK(total == ref_total);
    fs::remove_all(out);
}
}  // namespace

TEST_CASE("SCALE-Sim Resnet18 32x32 WS, layer by layer", "[e2e][regression]") { check_reference("32x32", "ws"); }
TEST_CASE("SCALE-Sim Resnet18 32x32 OS, layer by layer", "[e2e][regression]") { check_reference("32x32", "os"); }
TEST_CASE("SCALE-Sim Resnet18 32x32 IS, layer by layer", "[e2e][regression]") { check_reference("32x32", "is"); }
TEST_CASE("SCALE-Sim Resnet18 128x128 WS, layer by layer", "[e2e][regression]") { check_reference("128x128", "ws"); }
TEST_CASE("SCALE-Sim Resnet18 128x128 OS, layer by layer", "[e2e][regression]") { check_reference("128x128", "os"); }
TEST_CASE("SCALE-Sim Resnet18 128x128 IS, layer by layer", "[e2e][regression]") { check_reference("128x128", "is"); }

TEST_CASE("at a clock whose period is not a whole ps, ideal-memory latency is exactly the sum of fold cycles", "[e2e][regression]") {
    // 700 MHz: 1428.57 ps per cycle. Layers run back to back with no stall, so no rounding may
    // add or lose a cycle at any of the 21 operator boundaries.
    const std::string ref = shared_path("reference/scalesim");
    if (!fs::is_directory(ref)) return;
    const std::string out = temp_dir("v1");
    CliResult r = run_archsim("run " + ref + "/Resnet18.csv --arch " + std::string(ARCHSIM_SOURCE_DIR) +
                              "/configs/tpu/tpu_v1.toml --set dram.ideal=true --format json --out " + out);
    REQUIRE(r.exit_code == 0);
    auto m = nlohmann::json::parse(r.out);
    CHECK(m["total"]["stall_cycles"].get<int64_t>() == 0);
    CHECK(m["total"]["latency_cycles"].get<int64_t>() == m["total"]["compute_cycles"].get<int64_t>());
    fs::remove_all(out);
}
