// `archsim run --train` end to end: a training step on every machine kind, its `training`
// object in metrics.json consistent with the run's totals, and its errors.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/cli.h"
#include "tests/support/temp_file.h"

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
    // no recomputation: the model's FLOPs are the hardware's
    CHECK(t["recompute"] == "none");
    CHECK(t["model_flops"].get<int64_t>() == t["hardware_flops"].get<int64_t>());
    // the memory footprint: its categories at the peak add up to it, and it fits
    const json& mem = t["memory"];
    int64_t sum = 0;
    for (const auto& [k, v] : mem["at_peak"].items()) sum += v.get<int64_t>();
    CHECK(sum == mem["peak_bytes"].get<int64_t>());
    CHECK(mem["at_peak"]["saved_activations_bytes"].get<int64_t>() > 0);
    CHECK(mem["at_peak"]["optimizer_state_bytes"].get<int64_t>() >= 2 * mem["at_peak"]["weights_bytes"].get<int64_t>() * 9 / 10);
    if (arch.rfind("roofline", 0) != 0) CHECK(mem["fits"] == true);
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

TEST_CASE("an llm entry with generate = 0 is a training step, with recomputation and microbatches", "[e2e][training]") {
    const std::string file = archsim::test::write_temp("archsim_train_llm.toml",
                                                       "[tiny]\nfamily = \"llm\"\nmodel_family = \"gpt\"\nhidden = 128\nlayers = 2\n"
                                                       "heads = 4\nffn = 512\nvocab = 1000\nmax_positions = 128\n"
                                                       "sequence = { prompt = 128, generate = 0 }\nbatch = 2\n");
    const std::string out = temp_dir("train_llm");
    const CliResult r = run_archsim("run " + file + "#tiny --recompute full --microbatches 2 --arch " + kSrc +
                                    "/configs/gpu/a100_sxm4_80gb.toml --detail kernel --format json --out " + out);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json t = json::parse(slurp(out + "/metrics.json"))["training"];
    CHECK(t["recompute"] == "full");
    CHECK(t["microbatches"] == 2);
    CHECK(t["mixed_precision"] == true);  // the entry's fp16 weights
    CHECK(t["tokens_per_step"] == 2 * 2 * 128);
    CHECK(t["recompute_flops"].get<int64_t>() > 0);
    CHECK(t["hardware_flops"].get<int64_t>() == t["model_flops"].get<int64_t>() + t["recompute_flops"].get<int64_t>());
    CHECK(t["phases"]["recompute"]["macs"].get<int64_t>() * 2 == t["recompute_flops"].get<int64_t>());
    // a machine too small for the step: refused, exit 2, one line with what it needs by category
    const std::string small_args = "run " + file + "#tiny --set dram.capacity_gib=0.001 --arch " + kSrc +
                                   "/configs/gpu/a100_sxm4_80gb.toml --detail kernel --format json --out " + out;
    const CliResult refused = run_archsim(small_args);
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("the training step does not fit in memory: needs ") != std::string::npos);
    CHECK(refused.err.find("(weights ") != std::string::npos);
    CHECK(refused.err.find("against the device's 1.07 MB (dram.capacity_gib); --allow-over-capacity simulates it anyway") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(out + "/metrics.json"));
    // ... and with --allow-over-capacity simulated, flagged, and a warning says so
    const CliResult small = run_archsim(small_args + " --allow-over-capacity");
    CHECK(small.exit_code == 0);
    CHECK(small.err.find("exceeds the machine's") != std::string::npos);
    CHECK(json::parse(slurp(out + "/metrics.json"))["training"]["memory"]["fits"] == false);
    fs::remove_all(out);
}

TEST_CASE("a training step's errors are one line", "[e2e][training]") {
    const CliResult opt = run_archsim("run " + kResnet18 + " --train --optimizer lamb --out " + temp_dir("train_opt"));
    CHECK(opt.exit_code != 0);
    CHECK(opt.err.find("--optimizer") != std::string::npos);
    const CliResult rec = run_archsim("run " + kResnet18 + " --train --recompute some --out " + temp_dir("train_opt"));
    CHECK(rec.exit_code != 0);
    CHECK(rec.err.find("--recompute") != std::string::npos);
    const CliResult mb = run_archsim("run " + kResnet18 + " --train --microbatches 0 --out " + temp_dir("train_opt"));
    CHECK(mb.exit_code != 0);
    CHECK(mb.err.find("--microbatches") != std::string::npos);
}

TEST_CASE("the training suite's presets run forward and --train, with their entries' losses", "[e2e][training]") {
    // three families of different shapes on different machines: recurrent (GPU), convolutional with skips (KPU), gated
    // experts (CPU); each preset's own loss field applies in training
    const std::vector<std::array<std::string, 3>> cases = {
        {"lstm_autoencoder", "gpu/a100_sxm4_40gb", "mse"}, {"unet_autoencoder", "kpu/t256", "mse"}, {"moe_mlp", "cpu/host", "cross_entropy"}};
    for (const auto& [name, arch, loss] : cases) {
        INFO(name);
        const std::string model = kSrc + "/workloads/training_suite.toml#" + name;
        const std::string flags = " --batch 2 --arch " + kSrc + "/configs/" + arch + ".toml --format json --out ";
        const std::string out = temp_dir("suite_" + name);
        const CliResult inf = run_archsim("run " + model + flags + out + "/infer");
        INFO(inf.err);
        REQUIRE(inf.exit_code == 0);
        const CliResult tr = run_archsim("run " + model + " --train" + flags + out + "/train");
        INFO(tr.err);
        REQUIRE(tr.exit_code == 0);
        const json i = json::parse(slurp(out + "/infer/metrics.json")), t = json::parse(slurp(out + "/train/metrics.json"));
        CHECK_FALSE(i.contains("training"));
        REQUIRE(t.contains("training"));
        CHECK(t["training"]["loss"] == loss);
        CHECK(t["training"]["phases"]["forward"]["macs"] == i["total"]["macs"]);
        CHECK(t["total"]["latency_s"].get<double>() > i["total"]["latency_s"].get<double>());
    }
}
