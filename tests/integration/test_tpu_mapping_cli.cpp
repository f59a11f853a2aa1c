// The TPU's dataflow search end to end: a config that names its dataflow keeps it (SCALE-Sim's
// cycles stay exact), `--mapper search` or `dataflow = "search"` chooses per layer.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/cli.h"

using namespace archsim::test;
using json = nlohmann::json;

TEST_CASE("a TPU config's dataflow is kept unless the search is asked for", "[e2e][tpu][mapping]") {
    const std::string dir = temp_dir("tpu_map");
    // a fully connected layer with a long reduction over 16 rows (M = 16, K = 4096, N = 128) and a
    // 3x3 convolution (M = 3136, K = 576, N = 64)
    std::ofstream(dir + "/layers.csv") << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                                          "Num Filter, Strides,\nfc,4,4,1,1,4096,128,1,\nconv,58,58,3,3,64,64,1,\n";
    const std::string run = "run " + dir + "/layers.csv --arch " + std::string(ARCHSIM_SOURCE_DIR) + "/configs/tpu/tpu_128x128_ws.toml";
    json by_default = run_json_ok(run), fixed = run_json_ok(run + " --mapper fixed"), search = run_json_ok(run + " --mapper search"),
         open = run_json_ok(run + " --set dataflow=search");
    CHECK(by_default["total"] == fixed["total"]);
    CHECK(by_default["ops"][0]["mapping"] == "ws");
    CHECK(by_default["ops"][0]["mapspace"] == 1);
    // weight stationary folds the 4096-long reduction 32 times; output stationary holds the
    // 16 x 128 outputs while it streams
    CHECK(search["ops"][0]["mapping"] == "os");
    // 3 dataflows x 2 loop orders; no streamed tiles, T (M = 16 for WS, N = 128 for IS) being no
    // longer than the array's side
    CHECK(search["ops"][0]["mapspace"] == 6);
    CHECK(search["ops"][0]["mappings_evaluated"].get<int64_t>() >= 1);
    CHECK(search["ops"][0]["mappings_evaluated"].get<int64_t>() <= 6);
    CHECK(search["ops"][0]["compute_cycles"].get<int64_t>() < fixed["ops"][0]["compute_cycles"].get<int64_t>());
    CHECK(search["total"]["latency_s"].get<double>() < fixed["total"]["latency_s"].get<double>());
    CHECK(search["total"]["macs"] == fixed["total"]["macs"]);
    // a config that leaves the dataflow open is searched by default, and runs WS under fixed
    CHECK(open["total"] == search["total"]);
    CHECK(run_json_ok(run + " --set dataflow=search --mapper fixed")["total"] == fixed["total"]);
    std::filesystem::remove_all(dir);
}
