// `archsim run --train` end to end: a training step on every machine kind, its `training`
// object in metrics.json consistent with the run's totals, and its errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
const std::string kSrc = ARCHSIM_SOURCE_DIR;
const std::string kResnet18 = kSrc + "/workloads/models/resnet18.onnx";
}  // namespace

TEST_CASE("a training step runs on every machine kind and reports its phases", "[e2e][training]") {
    const std::string arch = GENERATE(std::string("tpu/tpu_128x128_ws"), std::string("kpu/t256"), std::string("gpu/a100_sxm4_40gb"),
                                      std::string("cpu/host"), std::string("roofline/tpu_v1"));
    INFO(arch);
    const std::string out = temp_dir("train_" + arch.substr(0, 3));
    const CliResult r = run_archsim("run " + kResnet18 + " --batch 2 --train --optimizer adam --arch " + kSrc + "/configs/" + arch +
                                    ".toml --detail kernel --format json --out " + out);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json m = json::parse(slurp(out + "/metrics.json"));
    CHECK(json::parse(r.out) == m);
    REQUIRE(m.contains("training"));
    const json& t = m["training"];
    CHECK(t["optimizer"] == "adam");
    CHECK(t["loss"] == "cross_entropy");
    CHECK(t["samples_per_step"] == 2);
    const double step_s = m["total"]["latency_s"].get<double>();
    CHECK(t["samples_per_s"].get<double>() == Approx(2 / step_s));
    // the interface checks rely on: total.flops is the step's hardware FLOPs
    CHECK(t["hardware_flops"].get<int64_t>() == m["total"]["flops"].get<int64_t>());
    // no recomputation yet: the model's FLOPs are the hardware's
    CHECK(t["model_flops"].get<int64_t>() == t["hardware_flops"].get<int64_t>());
    const json& p = t["phases"];
    const int64_t fwd = p["forward"]["macs"].get<int64_t>(), bwd = p["backward"]["macs"].get<int64_t>();
    CHECK(fwd > 0);
    CHECK(bwd > fwd);  // both gradients of every layer but the first's input gradient
    CHECK(bwd < 2 * fwd);
    CHECK(2 * (fwd + bwd) == t["model_flops"].get<int64_t>());
    CHECK(p["optimizer"]["latency_s"].get<double>() > 0);  // the updates run as kernels of their own
    double phases_s = 0;
    for (const auto& [name, v] : p.items()) phases_s += v["latency_s"].get<double>();
    CHECK(phases_s <= step_s * 1.0001);
    CHECK(phases_s >= step_s * 0.5);
    const double mfu = t["mfu"].get<double>();
    CHECK(mfu > 0);
    CHECK(mfu <= 1);
    fs::remove_all(out);
}

TEST_CASE("a training step's errors are one line", "[e2e][training]") {
    const CliResult llm = run_archsim("run " + kSrc + "/workloads/llm_presets.toml#llama2_7b --train --out " + temp_dir("train_llm"));
    CHECK(llm.exit_code != 0);
    CHECK(llm.err.find("--train on an llm workload") != std::string::npos);
    const CliResult opt = run_archsim("run " + kResnet18 + " --train --optimizer lamb --out " + temp_dir("train_opt"));
    CHECK(opt.exit_code != 0);
    CHECK(opt.err.find("--optimizer") != std::string::npos);
}
