// One rule for a run's precision and runtime on every path (issue 39, items 3 and 4): the
// command line, else the workload, else the machine; a training step takes its kind's training
// precision and runtime where neither names one, and the output says which it used and why.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli.h"

using namespace archsim::test;
using json = nlohmann::json;

namespace {
const std::string kSrc = ARCHSIM_SOURCE_DIR;
const std::string kResnet = kSrc + "/workloads/models/resnet18.onnx";

/// Two small MLP entries: one naming its precision, one not.
std::string workload_file(const std::string& dir) {
    const std::string path = dir + "/w.toml";
    std::ofstream(path) << "[named]\nfamily = \"mlp\"\nlayers = 2\ninput = 256\nwidth = 256\noutput = 16\nprecision = \"fp16\"\n\n"
                        << "[plain]\nfamily = \"mlp\"\nlayers = 2\ninput = 256\nwidth = 256\noutput = 16\n";
    return path;
}
}  // namespace

TEST_CASE("a run's precision is the command line's, else the workload's, else the machine's, on every path", "[e2e][precision]") {
    const std::string dir = temp_dir("choice"), w = workload_file(dir);
    // configs/kpu/t256.toml runs int8: entry and extra arguments -> precision, where it came from
    struct Case {
        const char *entry, *args, *precision, *from;
    };
    for (const Case& c : {Case{"named", "", "fp16", "workload named"}, Case{"plain", "", "int8", "machine config"},
                          Case{"named", " --precision bf16", "bf16", "--precision"}, Case{"named", " --set precision=fp32", "fp32", "--set"}}) {
        INFO(c.entry << c.args);
        const json m = run_json_ok("run " + w + "#" + c.entry + " --arch kpu/t256 --quiet" + c.args);
        CHECK(m["precision"] == c.precision);
        CHECK(m["precision_from"] == c.from);
    }

    // an llm entry: its serving run and one of its phases run alike (llama2_7b names fp16)
    const std::string llm = kSrc + "/workloads/llm_presets.toml#llama2_7b";
    json serving = run_json_ok("run " + llm + " --arch kpu/t256 --quiet");
    json phase = run_json_ok("run " + llm + "@decode=512 --arch kpu/t256 --quiet");
    CHECK(serving["precision"] == "fp16");
    CHECK(phase["precision"] == "fp16");
    CHECK(phase["precision_from"] == "workload llama2_7b@decode=512");

    // a sweep's points: the workload's precision, unless the study sets one
    const std::string study = dir + "/study.toml", out = dir + "/sweep";
    std::ofstream(study) << "name = \"p\"\nmodels = [\"" << w << "#named\", \"" << w << "#plain\"]\n"
                         << "[[machine]]\nlabel = \"t256\"\nconfig = \"" << kSrc << "/configs/kpu/t256.toml\"\n";
    CliResult r = run_archsim("sweep " + study + " --out " + out + " --quiet");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string csv = slurp(out + "/results.csv");
    CHECK(csv.find(",fp16,") != std::string::npos);  // #named
    CHECK(csv.find(",int8,") != std::string::npos);  // #plain
    const std::string study2 = dir + "/study2.toml", out2 = dir + "/sweep2";
    std::ofstream(study2) << "name = \"p2\"\nmodels = [\"" << w << "#named\"]\n[axes]\nprecision = [\"bf16\"]\n"
                          << "[[machine]]\nlabel = \"t256\"\nconfig = \"" << kSrc << "/configs/kpu/t256.toml\"\n";
    r = run_archsim("sweep " + study2 + " --out " + out2 + " --quiet");
    REQUIRE(r.exit_code == 0);
    CHECK(slurp(out2 + "/results.csv").find(",bf16,") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("a training step runs at its kind's training precision and runtime unless asked otherwise", "[e2e][precision][train]") {
    struct Case {
        const char* arch;
        const char* precision;
        const char* runtime;
    };
    // mixed FP16 on GPUs (FP32 master weights), BF16 on TPU and KPU, FP32 on CPUs; training runtimes
    for (const Case& c : {Case{"gpu/a100_sxm4_40gb", "fp16", "torch-eager"}, Case{"kpu/t256", "bf16", "kpu-domain-flow"},
                          Case{"tpu/tpu_128x128_ws", "bf16", "xla"}, Case{"cpu/epyc_9654", "fp32", "torch-eager"}}) {
        INFO(c.arch);
        json m = run_json_ok("run " + kResnet + " --train --arch " + c.arch + " --quiet");
        CHECK(m["precision"] == c.precision);
        CHECK(m["runtime"] == c.runtime);
        CHECK(m["precision_from"].get<std::string>().rfind("training default of the", 0) == 0);
        CHECK(m["runtime_from"].get<std::string>().rfind("training default of the", 0) == 0);
    }
    // INT8 training only when asked, with a warning
    const std::string out = temp_dir("int8train");
    CliResult r = run_archsim("run " + kResnet + " --train --arch kpu/t256 --quiet --precision int8 --format json --out " + out);
    REQUIRE(r.exit_code == 0);
    CHECK(json::parse(r.out)["precision"] == "int8");
    CHECK(r.err.find("warning: a training step in INT8 (asked for by --precision)") != std::string::npos);
    std::filesystem::remove_all(out);
}
