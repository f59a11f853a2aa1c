// Runtimes end to end: each machine kind runs its deployed runtime by default, `--runtime none`
// is the graph as imported, a fusing runtime runs fewer kernels with the same MACs, and the trace
// says which operators each kernel ran.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/support/cli.h"
#include "traces/trace_reader.h"

using namespace archsim::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
const std::string kSrc = ARCHSIM_SOURCE_DIR;
const std::string kA100 = kSrc + "/configs/gpu/a100_sxm4_80gb.toml";
}  // namespace

TEST_CASE("each kind runs its deployed runtime by default, and naming it reproduces the default run exactly", "[e2e][runtime]") {
    const std::string model = kSrc + "/workloads/models/resnet18.onnx";
    const std::vector<std::pair<std::string, std::string>> defaults = {
        {"gpu/a100_sxm4_80gb.toml", "tensorrt"}, {"cpu/host.toml", "torch-frozen"}, {"tpu/tpu_v1.toml", "xla"},
        {"kpu/t64.toml", "kpu-domain-flow"}, {"roofline/tpu_v1.toml", "xla"}};
    for (const auto& [cfg, rt] : defaults) {
        INFO(cfg);
        const std::string a = temp_dir("rt_default"), b = temp_dir("rt_named"), c = temp_dir("rt_none");
        REQUIRE(run_archsim("run " + model + " --arch " + kSrc + "/configs/" + cfg + " --out " + a + " --format json").exit_code == 0);
        REQUIRE(run_archsim("run " + model + " --arch " + kSrc + "/configs/" + cfg + " --runtime " + rt + " --out " + b + " --format json")
                    .exit_code == 0);
        REQUIRE(run_archsim("run " + model + " --arch " + kSrc + "/configs/" + cfg + " --runtime none --out " + c + " --format json")
                    .exit_code == 0);
        const json def = json::parse(slurp(a + "/metrics.json")), none = json::parse(slurp(c + "/metrics.json"));
        CHECK(def["runtime"] == rt);
        CHECK(none["runtime"] == "none");
        // the same run, but for where its runtime came from
        json named = json::parse(slurp(b + "/metrics.json")), as_default = def;
        CHECK(as_default["runtime_from"] == "machine config");
        CHECK(named["runtime_from"] == "--runtime");
        as_default.erase("runtime_from"), named.erase("runtime_from");
        CHECK(as_default == named);
        CHECK(def["total"]["macs"] == none["total"]["macs"]);
        // every default runtime lowers ResNet-18 into other kernels than its operators (the CPU's
        // torch-frozen adds oneDNN layout conversions, more kernels than operators)
        CHECK(def["ops"].size() != none["ops"].size());
        for (const auto& d : {a, b, c}) fs::remove_all(d);
    }
}

TEST_CASE("a fusing runtime runs fewer kernels with the same MACs, and the trace maps kernels to operators", "[e2e][runtime]") {
    const std::string model = have_shared() ? shared_path("models/bert_like_encoder.onnx") : kSrc + "/workloads/models/resnet18.onnx";
    const std::string none = temp_dir("rt_none"), trt = temp_dir("rt_trt");
    REQUIRE(run_archsim("run " + model + " --arch " + kA100 + " --runtime none --out " + none + " --format json").exit_code == 0);
    REQUIRE(run_archsim("run " + model + " --arch " + kA100 + " --runtime tensorrt --out " + trt + " --format json").exit_code == 0);
    const json a = json::parse(slurp(none + "/metrics.json")), b = json::parse(slurp(trt + "/metrics.json"));
    CHECK(b["total"]["macs"] == a["total"]["macs"]);
    CHECK(b["ops"].size() < a["ops"].size());
    // fewer launches and no round trips of fused intermediates through HBM
    CHECK(b["total"]["latency_s"].get<double>() < a["total"]["latency_s"].get<double>());
    CHECK(b["total"]["traffic_bytes"]["dram"].get<double>() < a["total"]["traffic_bytes"]["dram"].get<double>());

    archsim::TraceReader tr(trt + "/trace.h5");
    CHECK(tr.attr_string("runtime") == "tensorrt");
    std::multiset<std::string> ran;
    for (const auto& k : tr.ops()) {
        INFO(k.name);
        CHECK_FALSE(k.members.empty());
        std::istringstream in(k.members);
        for (std::string m; std::getline(in, m);) ran.insert(m);
    }
    CHECK(ran.size() == a["ops"].size());  // every operator of the graph, each in one kernel
    // trace ops --by operator: one row per source operator, against its kernel
    CliResult by_op = run_archsim("trace ops " + trt + "/trace.h5 --by operator");
    REQUIRE(by_op.exit_code == 0);
    CHECK(by_op.out.find(std::to_string(a["ops"].size()) + " operators in " + std::to_string(b["ops"].size()) + " of " +
                         std::to_string(b["ops"].size()) + " kernels") != std::string::npos);
    CHECK(run_archsim("trace ops " + trt + "/trace.h5 --by layer").exit_code != 0);
    archsim::TraceReader tn(none + "/trace.h5");
    CHECK(tn.attr_string("runtime") == "none");
    fs::remove_all(none);
    fs::remove_all(trt);
}

TEST_CASE("graph --runtime lists the kernels of the plan with their operators", "[e2e][runtime]") {
    const std::string model = kSrc + "/workloads/models/resnet18.onnx";
    CliResult g = run_archsim("graph " + model + " --format json");
    REQUIRE(g.exit_code == 0);
    const size_t ops = json::parse(g.out)["ops"].size();
    for (const std::string rt : {"tensorrt", "torch-frozen"}) {
        CliResult r = run_archsim("graph " + model + " --runtime " + rt + " --format json");
        REQUIRE(r.exit_code == 0);
        const json j = json::parse(r.out);
        CHECK(j["runtime"] == rt);
        size_t members = 0, conv_relu = 0, reorders = 0;
        for (const auto& k : j["kernels"]) {
            members += k["members"].size();
            conv_relu += k["pattern"].get<std::string>().rfind("Conv+", 0) == 0;
            reorders += k["pattern"] == "Reorder" && k["members"].empty();
        }
        CHECK(members == ops);  // every operator in exactly one kernel; conversions run none
        if (rt == "tensorrt") CHECK(conv_relu > 0);  // epilogues: Conv+Relu, Conv+Residual+Relu
        // PyTorch frozen: ReLU stays its own kernel, oneDNN's blocked layout is entered at the
        // input and left before the classifier's matmul
        if (rt == "torch-frozen") CHECK(conv_relu == 0);
        if (rt == "torch-frozen") CHECK(reorders == 2);
        if (rt == "tensorrt") CHECK(reorders == 0);
        // the classifier's Gemm goes to the BLAS under PyTorch, nothing does under TensorRT
        size_t blas = 0;
        for (const auto& k : j["kernels"]) blas += k["path"] == "blas";
        CHECK(blas == (rt == "torch-frozen" ? 1u : 0u));
    }
}

TEST_CASE("the TPU runs a fused attention kernel with its scores kept in the ofmap buffer", "[e2e][runtime]") {
    const std::string model = kSrc + "/tests/bad_inputs/workloads.toml#tiny_encoder";
    const std::string tpu = kSrc + "/configs/tpu/tpu_v1.toml";
    const std::string fused = temp_dir("rt_tpu_fused"), split = temp_dir("rt_tpu_split");
    REQUIRE(run_archsim("run " + model + " --arch " + tpu + " --runtime tensorrt --out " + fused + " --format json").exit_code == 0);
    REQUIRE(run_archsim("run " + model + " --arch " + tpu + " --runtime xla --out " + split + " --format json").exit_code == 0);
    const json f = json::parse(slurp(fused + "/metrics.json")), s = json::parse(slurp(split + "/metrics.json"));
    CHECK(f["total"]["macs"] == s["total"]["macs"]);
    int attention = 0;
    for (const auto& o : f["ops"]) attention += o["op_type"] == "Attention";
    CHECK(attention == 1);  // one layer: one kernel for both heads
    // the scores neither leave nor come back through DRAM
    CHECK(f["total"]["traffic_bytes"]["dram"].get<double>() < s["total"]["traffic_bytes"]["dram"].get<double>());
    fs::remove_all(fused);
    fs::remove_all(split);
}

TEST_CASE("the KPU runs a fused attention kernel with its scores through L3, spilling them only when they do not fit", "[e2e][runtime][kpu]") {
    // one layer, 8 heads of 512 x 512 int8 scores: 2 MiB, inside T64's 16 MiB of L3
    const std::string dir = temp_dir("rt_kpu_attention");
    std::ofstream(dir + "/w.toml") << "[enc]\nfamily = \"transformer_encoder\"\nlayers = 1\nd_model = 64\nheads = 8\nffn = 128\nsequence = 512\n";
    const std::string base = "run " + dir + "/w.toml#enc --arch " + kSrc + "/configs/kpu/t64.toml --format json --out ";
    REQUIRE(run_archsim(base + dir + "/fused --runtime tensorrt").exit_code == 0);
    REQUIRE(run_archsim(base + dir + "/split --runtime kpu-domain-flow").exit_code == 0);
    // a 2 x 2 fabric with 256 KiB of L3 per tile: 1 MiB, less than the scores
    REQUIRE(run_archsim(base + dir + "/spill --runtime tensorrt --set tiles.rows=2 --set tiles.cols=2 --set l3.kib_per_tile=256").exit_code == 0);
    const json f = json::parse(slurp(dir + "/fused/metrics.json")), s = json::parse(slurp(dir + "/split/metrics.json"));
    const json sp = json::parse(slurp(dir + "/spill/metrics.json"));
    CHECK(f["total"]["macs"] == s["total"]["macs"]);
    const auto attention = [](const json& m) {
        json found;
        int n = 0;
        for (const auto& o : m["ops"])
            if (o["op_type"] == "Attention") found = o, ++n;
        REQUIRE(n == 1);  // one layer: one kernel for all heads
        return found;
    };
    const double scores = 8.0 * 512 * 512;  // bytes at int8
    const json a = attention(f), b = attention(sp);
    CHECK(a["macs"] == b["macs"]);
    CHECK(a["traffic_bytes"]["dram"].get<double>() < scores / 100);      // Q, K, V already in L3; no score in DRAM
    CHECK(a["traffic_bytes"]["l3"].get<double>() >= 2 * scores);          // every score block to L3 and back
    CHECK(b["traffic_bytes"]["dram"].get<double>() >= 4 * scores);        // S and P each written and read back
    CHECK(b["traffic_bytes"]["dram"].get<double>() < 4 * scores + scores / 100);
    fs::remove_all(dir);
}

TEST_CASE("the TPU and KPU run every lowered kernel's epilogue arithmetic", "[e2e][runtime]") {
    const std::string model = kSrc + "/tests/bad_inputs/workloads.toml#tiny_encoder";
    CliResult g = run_archsim("graph " + model + " --runtime xla --format json");
    REQUIRE(g.exit_code == 0);
    uint64_t vector_ops = 0, macs = 0;  // bias, GELU, residual in the GEMM kernels; norms and softmax alone
    const json plan = json::parse(g.out);
    for (const auto& k : plan["kernels"]) {
        macs += k["macs"].get<uint64_t>();
        if (k["class"] != "data_movement") vector_ops += k["flops"].get<uint64_t>() - 2 * k["macs"].get<uint64_t>();
    }
    REQUIRE(vector_ops > 0);
    for (const char* cfg : {"tpu/tpu_v1.toml", "kpu/t64.toml"}) {
        INFO(cfg);
        const std::string out = temp_dir("rt_epilogue");
        REQUIRE(run_archsim("run " + model + " --arch " + kSrc + "/configs/" + cfg + " --runtime xla --out " + out + " --format json")
                    .exit_code == 0);
        const json m = json::parse(slurp(out + "/metrics.json"));
        uint64_t ops = 0;
        for (const auto& c : m["components"]) ops += c["ops"].get<uint64_t>();  // TPU: array + vector; KPU: the fabric
        CHECK(ops == macs + vector_ops);
        fs::remove_all(out);
    }
}

TEST_CASE("a runtime's device.sets change its kind's machine keys, under the user's --set, and no other kind's", "[e2e][runtime]") {
    const std::string model = kSrc + "/workloads/models/resnet18.onnx";
    auto config_of = [&](const std::string& arch, const std::string& extra) {
        const std::string out = temp_dir("rt_device_sets");
        const CliResult r = run_archsim("run " + model + " --arch " + arch + " --runtime megatron --format json --out " + out + extra);
        REQUIRE(r.exit_code == 0);
        return slurp(out + "/config.toml");
    };
    // the megatron profile: CUDA 11.1's GEMMs (sm.mma_efficiency = 0.7536) over the A100 config's 0.869
    CHECK(config_of(kA100, "").find("mma_efficiency = 0.7536") != std::string::npos);
    CHECK(config_of(kA100, " --set sm.mma_efficiency=0.5").find("mma_efficiency = 0.5") != std::string::npos);
    // a CPU runs the profile's lowering without the GPU's keys
    CHECK_NOTHROW(config_of(kSrc + "/configs/cpu/host.toml", ""));
    // and the slower main loops make a batch of 32 (its convolutions MMA-bound) slower, nothing else changing
    const json own = run_json_ok("run " + model + " --arch " + kA100 + " --batch 32 --runtime megatron --set sm.mma_efficiency=0.869");
    const json stack = run_json_ok("run " + model + " --arch " + kA100 + " --batch 32 --runtime megatron");
    CHECK(stack["total"]["latency_s"].get<double>() > own["total"]["latency_s"].get<double>());
    CHECK(stack["total"]["macs"] == own["total"]["macs"]);
}

TEST_CASE("the runtime keys' table in configs/runtimes/README.md is the declarations' (params runtime --format md)", "[e2e][runtime][docs]") {
    const CliResult r = run_archsim("params runtime --format md");
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("| `passes.layouts` | bool | false |") != std::string::npos);
    const std::string readme = slurp(std::string(ARCHSIM_SOURCE_DIR) + "/configs/runtimes/README.md");
    INFO("regenerate the table with: build/archsim params runtime --format md");
    CHECK(readme.find(r.out) != std::string::npos);
    const CliResult bad = run_archsim("params fpga");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("unknown machine kind (known: cpu, gpu, kpu, roofline, tpu, cluster and runtime)") != std::string::npos);
}
