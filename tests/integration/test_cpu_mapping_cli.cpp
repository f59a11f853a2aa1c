// The CPU's blocking search end to end: the calibrated analytical blocking by default (and under
// `--mapper fixed`), the search under `--mapper search` or `gemm.blocking = "search"`, each GEMM's
// choice and effort in metrics.json.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/support/cli.h"

using namespace archsim::test;
using json = nlohmann::json;

TEST_CASE("a CPU's GEMM blocking is searched only when asked for", "[e2e][cpu][mapping]") {
    const std::string run = "run " + std::string(ARCHSIM_SHARED_DIR) + "/models/mlp.onnx --arch " + std::string(ARCHSIM_SOURCE_DIR) +
                            "/configs/cpu/epyc_9654.toml --detail kernel";
    json by_default = run_json_ok(run), fixed = run_json_ok(run + " --mapper fixed"), search = run_json_ok(run + " --mapper search"),
         open = run_json_ok(run + " --set gemm.blocking=search");
    CHECK(by_default["total"] == fixed["total"]);
    const json& first = by_default["ops"][0];
    REQUIRE(first["mapping"].is_string());
    CHECK(first["mapping"].get<std::string>().rfind("mc ", 0) == 0);
    CHECK(first["mapspace"] == 1);
    CHECK(first["mappings_evaluated"] == 0);
    int64_t space = 0, evaluated = 0;
    for (const json& op : search["ops"])
        if (op.contains("mapspace")) space += op["mapspace"].get<int64_t>(), evaluated += op["mappings_evaluated"].get<int64_t>();
    CHECK(space > 2);  // two GEMMs, several blockings each
    CHECK(evaluated >= 2);
    CHECK(evaluated <= space);
    CHECK(search["total"]["macs"] == fixed["total"]["macs"]);
    CHECK(open["total"] == search["total"]);
    CHECK(run_json_ok(run + " --set gemm.blocking=search --mapper fixed")["total"] == fixed["total"]);
}
