// The GPU's GEMM schedules end to end: the library heuristics' tile, split-K and raster order by
// default (and under `--mapper fixed`), stream-K only under `--mapper search`, each GEMM's
// choice and effort in metrics.json, the same metrics at every trace detail.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/support/cli.h"

using namespace archsim::test;
using json = nlohmann::json;

TEST_CASE("a GPU's GEMMs take stream-K only under the mapping search", "[e2e][gpu][mapping]") {
    const std::string run = "run " + std::string(ARCHSIM_SHARED_DIR) + "/models/bert_like_encoder.onnx --arch " +
                            std::string(ARCHSIM_SOURCE_DIR) + "/configs/gpu/a100_sxm4_80gb.toml";
    const json by_default = run_json_ok(run + " --detail kernel"), fixed = run_json_ok(run + " --detail kernel --mapper fixed");
    const json search = run_json_ok(run + " --detail kernel --mapper search"), full = run_json_ok(run + " --mapper search");
    CHECK(by_default["total"] == fixed["total"]);
    int64_t streamed = 0, library_space = 0, searched_space = 0;
    REQUIRE(search["ops"].size() == fixed["ops"].size());
    for (size_t i = 0; i < search["ops"].size(); ++i) {
        const json &s = search["ops"][i], &f = fixed["ops"][i];
        CHECK(s["macs"] == f["macs"]);
        if (!s.contains("mapping") || !s["mapping"].is_string()) continue;
        CHECK(f["mapping"].get<std::string>().find("stream-K") == std::string::npos);
        library_space += f["mapspace"].get<int64_t>(), searched_space += s["mapspace"].get<int64_t>();
        if (s["mapping"].get<std::string>().find("stream-K") == std::string::npos) continue;
        ++streamed;
        CHECK(s["latency_s"].get<double>() < f["latency_s"].get<double>());
    }
    CHECK(streamed > 0);
    CHECK(searched_space > library_space);  // stream-K joins each GEMM's mapspace
    CHECK(search["total"]["latency_s"].get<double>() < fixed["total"]["latency_s"].get<double>());
    CHECK(search["total"]["traffic_bytes"]["dram"] == fixed["total"]["traffic_bytes"]["dram"]);
    CHECK(full["total"] == search["total"]);  // the full trace stores replayed stream-K kernels by reference
}

TEST_CASE("the run table shows each kernel's mapping where the machine reports one", "[e2e][gpu][mapping]") {
    const std::string model = std::string(ARCHSIM_SHARED_DIR) + "/models/mlp.onnx";
    const CliResult gpu = run_archsim("run " + model + " --arch gpu/a100_sxm4_80gb --detail kernel --mapper search --out " + temp_dir("gpu_table"));
    REQUIRE(gpu.exit_code == 0);
    const std::string head = gpu.out.substr(0, gpu.out.find('\n'));
    CHECK(head.substr(head.size() - 7) == "mapping");  // the last column
    CHECK(gpu.out.find("CTA 64x64, split-K 4, N fastest\n") != std::string::npos);  // whole, not cut
    const CliResult roof = run_archsim("run " + model + " --arch roofline/host --detail kernel --out " + temp_dir("roofline_table"));
    REQUIRE(roof.exit_code == 0);
    CHECK(roof.out.substr(0, roof.out.find('\n')).find("mapping") == std::string::npos);  // no machine mapping: no column
}
