// CPU end to end: compute-bound and memory-bound kernels at their roofs, and cache spills that
// the simulated hierarchy sees.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli.h"
#include "tests/support/undeclared.h"

using namespace archsim::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
const std::string kHost = std::string(ARCHSIM_SOURCE_DIR) + "/configs/cpu/host.toml";
const std::string kBundled = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx";
}  // namespace

TEST_CASE("a GEMM whose blocks fit the caches runs at the compute roof", "[e2e][cpu]") {
    // C (256 x 256) = A (256 x 256) B (256 x 256), fp32, one core, free packing, ideal DRAM: the
    // MAC time is exactly MACs / (fp32 FMA/cycle x efficiency.gemm); cold L2/L3 fills add a few %.
    // The machine on the operator itself (--runtime none: no framework layout conversions).
    const std::string dir = temp_dir("cpu_gemm");
    std::ofstream(dir + "/gemm.csv") << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                                        "Num Filter, Strides,\ngemm,16,16,1,1,256,256,1,\n";
    json m = run_json_ok("run " + dir + "/gemm.csv --arch " + kHost +
                         " --runtime none --precision fp32 --set cores=1 --set core.pack_bytes_per_cycle=1e9 --set dram.ideal=true"
                         " --set core.macs_per_cycle.fp32=32 --set efficiency.gemm=0.5");
    const double macs = 256.0 * 256 * 256;
    const double roof_cycles = macs / (32 * 0.5);
    CHECK(m["total"]["macs"].get<double>() == macs);
    CHECK(m["total"]["compute_cycles"].get<double>() == Approx(roof_cycles).epsilon(0.001));
    CHECK(m["total"]["latency_cycles"].get<double>() >= roof_cycles * 0.999);
    CHECK(m["total"]["latency_cycles"].get<double>() <= roof_cycles * 1.03);
    // twice the efficiency halves the compute time
    json fast = run_json_ok("run " + dir + "/gemm.csv --arch " + kHost +
                            " --runtime none --precision fp32 --set cores=1 --set core.pack_bytes_per_cycle=1e9 --set dram.ideal=true"
                            " --set core.macs_per_cycle.fp32=32 --set efficiency.gemm=1.0");
    CHECK(fast["total"]["compute_cycles"].get<double>() == Approx(roof_cycles / 2).epsilon(0.001));
    fs::remove_all(dir);
}

TEST_CASE("a streaming kernel runs at exactly the sustained DRAM bandwidth", "[e2e][cpu]") {
    const std::string relu = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx";  // 3x4x5 fp32
    if (!fs::exists(relu)) {
        WARN("libonnx-testdata not installed; skipped");
        return;
    }
    // 2^20 x 20 fp32 elements in and out (80 MiB each), far beyond the caches: every input line
    // and every output line (write-allocate) comes from DRAM, most dirty output lines go back.
    // The machine on the operator itself (--runtime none: no framework layout conversions).
    json m = run_json_ok("run " + relu + " --arch " + kHost +
                         " --runtime none --batch 1048576 --set dram.latency_ns=0 --set dram.bandwidth_gbps=40 --set efficiency.dram=0.5");
    const double tensor = 1048576.0 * 20 * 4;
    const double dram = m["total"]["traffic_bytes"]["dram"].get<double>();
    CHECK(dram >= 2 * tensor);
    CHECK(dram <= 3 * tensor);
    CHECK(m["total"]["latency_s"].get<double>() == Approx(dram / 20e9).epsilon(0.005));
}

TEST_CASE("a smaller L3 spills: more DRAM traffic and a slower run", "[e2e][cpu]") {
    // at batch 8 the early activations (up to 26 MB) fit a 32 MiB L3 but not a 4 MiB one
    json big = run_json_ok("run " + kBundled + " --arch " + kHost + " --batch 8");
    json small = run_json_ok("run " + kBundled + " --arch " + kHost + " --batch 8 --set l3.kib=4096");
    CHECK(small["total"]["traffic_bytes"]["dram"].get<double>() > 1.5 * big["total"]["traffic_bytes"]["dram"].get<double>());
    CHECK(small["total"]["latency_s"].get<double>() > big["total"]["latency_s"].get<double>());
    // a smaller L2 sends more lines to the L3
    json l2 = run_json_ok("run " + kBundled + " --arch " + kHost + " --batch 8 --set l2.kib=128");
    CHECK(l2["total"]["traffic_bytes"]["l3"].get<double>() > 1.2 * big["total"]["traffic_bytes"]["l3"].get<double>());
    CHECK(big["total"]["macs"].get<uint64_t>() == 8 * 1814073344ULL);
}

TEST_CASE("a kernel the runtime sends to the BLAS runs on its threads and packs its whole weight at every call", "[e2e][cpu][runtime]") {
    // one Linear layer, 1 x 1024 by 1024 x 1024 fp32: oneDNN's path (the none runtime, weights
    // prepacked at load) reads the weight in place on both cores; a runtime whose blas.ops takes
    // Gemm/MatMul on one thread packs the weight and the input row on core 0 at the set rate
    const std::string dir = temp_dir("cpu_blas");
    std::ofstream(dir + "/lin.toml") << "[lin]\nfamily = \"mlp\"\nlayers = 1\ninput = 1024\nwidth = 1024\noutput = 1024\n"
                                        "batch = 1\n";
    std::ofstream(dir + "/blas1.toml") << "doc = \"one BLAS thread\"\n[blas]\nops = \"Gemm, MatMul\"\nthreads = 1\n";
    const std::string args = "run " + dir + "/lin.toml#lin --arch " + kHost +
                             " --precision fp32 --set cores=2 --set dram.ideal=true --set core.blas_pack_bytes_per_cycle=2";
    auto component = [](const json& m, const std::string& name) {
        for (const auto& c : m["components"])
            if (c["name"] == name) return c;
        FAIL("no component " << name);
        return json();
    };
    json blas = run_json_ok(args + " --runtime " + dir + "/blas1.toml");
    json none = run_json_ok(args + " --runtime none");
    const double macs = 1024.0 * 1024, packed = 1024.0 * 1024 * 4 + 1024 * 4;
    CHECK(component(blas, "core0")["ops"].get<double>() == macs);
    CHECK(component(blas, "core1")["ops"].get<double>() == 0);
    CHECK(component(blas, "packing")["bytes"].get<double>() == packed);
    const double clock_hz = blas["clock_hz"].get<double>();
    CHECK(component(blas, "packing")["busy_s"].get<double>() * clock_hz == Approx(packed / 2).epsilon(1e-6));
    CHECK(blas["total"]["latency_cycles"].get<double>() >= packed / 2);
    CHECK(component(none, "packing")["bytes"].get<double>() <= 2 * 1024 * 4);  // the input row per core, never the weight
    CHECK(component(none, "core1")["ops"].get<double>() > 0);
    CHECK(none["total"]["macs"].get<double>() == macs);
    CHECK(none["total"]["latency_s"].get<double>() < blas["total"]["latency_s"].get<double>());
    fs::remove_all(dir);
}

TEST_CASE("a kernel in the framework's scalar reference code takes core.reference_cycles_per_op per operation", "[e2e][cpu][runtime]") {
    const std::string pool = "/usr/share/libonnx-testdata/data/node/test_maxpool_2d_default/model.onnx";  // 1x3x32x32, 2x2
    if (!fs::exists(pool)) {
        WARN("libonnx-testdata not installed; skipped");
        return;
    }
    const std::string dir = temp_dir("cpu_reference");
    std::ofstream(dir + "/scalar.toml") << "doc = \"ATen's scalar max pooling\"\n[reference]\nops = \"MaxPool\"\n";
    // 3 x 31 x 31 outputs x 4 window elements, split over 2 cores at 10 cycles each
    json m = run_json_ok("run " + pool + " --arch " + kHost + " --runtime " + dir +
                         "/scalar.toml --set cores=2 --set core.reference_cycles_per_op=10 --set core.op_overhead_us=0");
    const double ops = 3.0 * 31 * 31 * 4;
    CHECK(m["total"]["compute_cycles"].get<double>() == Approx(ops / 2 * 10).epsilon(1e-3));
    CHECK(m["total"]["latency_cycles"].get<double>() >= ops / 2 * 10);
    // 0: the SIMD rate, as every other kernel
    json simd = run_json_ok("run " + pool + " --arch " + kHost + " --runtime " + dir + "/scalar.toml --set cores=2 --set core.op_overhead_us=0");
    CHECK(simd["total"]["compute_cycles"].get<double>() < ops / 2);
    fs::remove_all(dir);
}

TEST_CASE("a bad CPU cache geometry is one line naming the config file", "[e2e][cpu][bad]") {
    CliResult r = run_archsim("run " + kBundled + " --arch " + kHost + " --set l1d.ways=7 --out " + temp_dir("cpu_bad"));
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("host.toml: l1d.kib") != std::string::npos);
}

TEST_CASE("an llm workload runs prefill and decode and reports serving metrics", "[e2e][llm]") {
    const std::string out = temp_dir("llm");
    CliResult r = run_archsim("run " + std::string(ARCHSIM_SOURCE_DIR) + "/workloads/llm_presets.toml#gpt2_small --arch " +
                              std::string(ARCHSIM_SOURCE_DIR) + "/configs/gpu/a100_sxm4_80gb.toml --out " + out + " --format json");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(r.out);
    const double ttft = j["time_to_first_token_s"], tpot = j["time_per_output_token_s"], tps = j["tokens_per_s"];
    CHECK(ttft > 0);
    CHECK(tpot > 0);
    // tokens/s is batch x generated over prefill + every decode step
    CHECK(tps == Approx(64.0 / (ttft + 63 * tpot)).epsilon(1e-6));
    CHECK(j["decode_points"].size() == 4);
    CHECK(undeclared_numbers(j, archsim::MetricScope::Serving) == std::vector<std::string>{});  // each declared (`archsim metrics`)
    // decode at batch 1 is memory-bound: each step reads every fp16 weight from DRAM
    const json d = json::parse(slurp(out + "/decode_kv256/metrics.json"));
    CHECK(d["total"]["traffic_bytes"]["dram"].get<double>() >= 2.0 * 124e6);
    CHECK(d["total"]["stall_cycles_by_cause"]["operand_load"].get<double>() > d["total"]["compute_cycles"].get<double>());
    // a longer KV cache costs more per step
    CHECK(j["decode_points"][3]["latency_s"].get<double>() >= j["decode_points"][0]["latency_s"].get<double>());
    fs::remove_all(out);
}

TEST_CASE("cache set sampling keeps a GEMM's time and its traffic within their bounds of simulating every line, and says so", "[e2e][cpu][sampling]") {
    // a 1024 x 1024 x 1024 fp32 GEMM (12 MiB of tensors) on the host with a 4 MiB L3, so that it
    // spans more than sampling.min_kernel_l3s (2) L3s and runs one set in 16; against the same run
    // with every line simulated (sampling.sets_per_sample = 1). A hard case for sampling: each
    // 4 KiB row of A is read in five kc slices, and the two lines where slices meet (13 and 40 of
    // 64) are read twice; the sampled residues (10, 26, 42, 58) miss them, so the L2, L3 and DRAM
    // traffic come out 1.6-2.8% low (set_sample.h). The time is compute-bound: exact.
    const std::string dir = temp_dir("cpu_sampling");
    std::ofstream(dir + "/gemm.csv") << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                                        "Num Filter, Strides,\ngemm,32,32,1,1,1024,1024,1,\n";
    const std::string args = "run " + dir + "/gemm.csv --arch " + kHost + " --runtime none --precision fp32 --set l3.kib=4096";
    json sampled = run_json_ok(args);
    json full = run_json_ok(args + " --set sampling.sets_per_sample=1");
    CHECK(sampled["approximations"].get<std::string>().find("cache set sampling (1 set in 16) on 1 operator") != std::string::npos);
    CHECK(full["approximations"].get<std::string>().find("sampling") == std::string::npos);
    auto within = [](const json& a, const json& b, double tol) { return std::abs(a.get<double>() / b.get<double>() - 1) <= tol; };
    CHECK(sampled["total"]["macs"] == full["total"]["macs"]);
    CHECK(within(sampled["total"]["latency_s"], full["total"]["latency_s"], 0.005));
    CHECK(sampled["total"]["traffic_bytes"]["l1d"] == full["total"]["traffic_bytes"]["l1d"]);  // accesses: counted exactly
    CHECK(within(sampled["total"]["energy_j"], full["total"]["energy_j"], 0.02));
    for (const char* level : {"dram", "l3", "l2"}) {
        INFO(level);
        CHECK(within(sampled["total"]["traffic_bytes"][level], full["total"]["traffic_bytes"][level], 0.03));
        CHECK_FALSE(sampled["total"]["traffic_bytes"][level] == full["total"]["traffic_bytes"][level]);  // sampled, not simulated
    }
    fs::remove_all(dir);
}
