// GPU kernels alone (the `kernel` workload family): what tools/validate_kernels.py checks against
// measurements, held here as behaviour: a GEMM's operands from DRAM once per wave, a causal
// attention kernel's short CTAs making room for the next ones, the family's operators and errors.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/support/cli.h"
#include "tests/support/temp_file.h"

using namespace archsim::test;
using json = nlohmann::json;

namespace {
const std::string kA100 = std::string(ARCHSIM_SOURCE_DIR) + "/configs/gpu/a100_sxm4_80gb.toml";

/// A workload file holding one `kernel` entry [k] of `fields` (TOML lines), as FILE#k.
std::string kernel_file(const std::string& tag, const std::string& fields) {
    return write_temp(tag + ".toml", "[k]\nfamily = \"kernel\"\n" + fields) + "#k";
}

const json& op_of_type(const json& m, const std::string& type) {
    for (const auto& o : m["ops"])
        if (o["op_type"] == type) return o;
    FAIL("no operator of type " << type);
    return m;
}
}  // namespace

TEST_CASE("a GEMM whose B does not fit the L2 reads it from DRAM once per wave, not once per CTA", "[e2e][gpu]") {
    // 2048 x 8192 x 8192 fp16: B is 134 MB against a 40 MiB L2, and the plan's CTAs fill a few
    // waves. Each CTA's whole-K B tile loaded as one object thrashed the L2: every CTA fetched its
    // own from DRAM, gigabytes in all.
    const std::string w = kernel_file("gemm_waves", "op = \"matmul\"\nm = 2048\nn = 8192\nk = 8192\n");
    const json m = run_json_ok("run " + w + " --arch " + kA100 + " --precision fp16 --runtime torch-eager");
    const double a = 2048.0 * 8192 * 2, b = 8192.0 * 8192 * 2, c = 2048.0 * 8192 * 2;
    const double dram = m["total"]["traffic_bytes"]["dram"].get<double>();
    CHECK(dram >= a + b + c);           // every operand at least once
    CHECK(dram <= 6 * (a + b) + c);     // at most once per wave, in at most 6 waves
    CHECK(m["ops"].size() == 1);
    CHECK(m["ops"][0]["macs"].get<double>() == 2048.0 * 8192 * 8192);
}

TEST_CASE("a causal attention kernel's short CTAs make room for the next: about half the full kernel's time", "[e2e][gpu]") {
    // sequence 4096, 16 heads of 64, batch 2: 1,024 CTAs over 108 SMs; under the causal mask a
    // query tile sees 128 to 4096 keys. With a barrier between waves each wave lasted as long as
    // its longest CTA and the causal kernel took as long as the full one.
    const std::string fields = "op = \"attention\"\nhidden = 1024\nheads = 16\nsequence = 4096\nbatch = 2\n";
    const std::string base = " --arch " + kA100 + " --precision fp16 --runtime tensorrt";
    const json full = run_json_ok("run " + kernel_file("attn_full", fields + "causal = false\n") + base);
    const json causal = run_json_ok("run " + kernel_file("attn_causal", fields + "causal = true\n") + base);
    const json& f = op_of_type(full, "Attention");
    const json& c = op_of_type(causal, "Attention");
    const double mac_ratio = c["macs"].get<double>() / f["macs"].get<double>();
    CHECK(mac_ratio == Approx(0.5 + 128.0 / 4096 / 2).epsilon(0.01));  // the diagonal blocks whole
    const double time_ratio = c["latency_s"].get<double>() / f["latency_s"].get<double>();
    CHECK(time_ratio < 0.7);
    CHECK(time_ratio > 0.45);
}

TEST_CASE("the kernel family: one operator each, and its fields checked", "[e2e][gpu]") {
    const std::string base = " --arch " + kA100 + " --precision fp16 --runtime torch-eager";
    const json sm = run_json_ok("run " + kernel_file("k_softmax", "op = \"softmax\"\nm = 256\nn = 1024\n") + base);
    REQUIRE(sm["ops"].size() == 1);
    CHECK(sm["ops"][0]["op_type"] == "Softmax");
    const json ln = run_json_ok("run " + kernel_file("k_ln", "op = \"layernorm\"\nm = 256\nn = 1024\n") + base);
    REQUIRE(ln["ops"].size() == 1);
    CHECK(ln["ops"][0]["op_type"] == "LayerNormalization");
    // the exported erf GELU is five ONNX nodes; a runtime with native activations runs one kernel
    const json gelu = run_json_ok("run " + kernel_file("k_gelu", "op = \"gelu\"\nm = 65536\n") + base);
    REQUIRE(gelu["ops"].size() == 1);
    CHECK(gelu["ops"][0]["op_type"] == "GELU");
    // its input read and its output written once (and its three scalar constants)
    CHECK(gelu["total"]["traffic_bytes"]["dram"].get<double>() == Approx(2.0 * 65536 * 2).margin(16));
    const CliResult bad = run_archsim("run " + kernel_file("k_bad", "op = \"conv\"\n") + base);
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("[k].op") != std::string::npos);
    const CliResult heads = run_archsim("run " + kernel_file("k_heads", "op = \"attention\"\nhidden = 100\nheads = 3\nsequence = 8\n") + base);
    CHECK(heads.exit_code == 2);
    CHECK(heads.err.find("[k].heads") != std::string::npos);
    // a field set on the command line that the operator does not read (another operator's) is refused
    const CliResult typo = run_archsim("run " + kernel_file("k_typo", "op = \"matmul\"\nm = 8\nn = 8\nk = 8\n") + " --workload-set kk=3" + base);
    CHECK(typo.exit_code == 2);
    CHECK(typo.err.find("kk") != std::string::npos);
}

TEST_CASE("a layer normalization reads its rows twice: from the L2 while the rows in flight fit it, else from DRAM", "[e2e][gpu]") {
    // one CTA of 4 warps per row, 16 per SM: 1,728 rows in flight on the A100's 108 SMs. Rows of
    // 4096 fp16 elements (8 KiB) in flight take 14 MB of the 40 MiB L2, so the normalizing pass
    // re-reads them there; rows of 32768 (64 KiB) take 113 MB, so it re-reads them from DRAM
    // (3,456 rows: two whole groups in flight; a last group of fewer rows could fit the L2).
    const std::string base = " --arch " + kA100 + " --precision fp16 --runtime torch-eager";
    const auto dram_read = [&](int64_t rows, int64_t cols) {
        const std::string f = "op = \"layernorm\"\nm = " + std::to_string(rows) + "\nn = " + std::to_string(cols) + "\n";
        const json m = run_json_ok("run " + kernel_file("ln_" + std::to_string(cols), f) + base);
        REQUIRE(m["ops"].size() == 1);
        return m["total"]["read_bytes"]["dram"].get<double>() / (2.0 * static_cast<double>(rows * cols));
    };
    CHECK(dram_read(4096, 4096) == Approx(1.0).margin(0.01));
    CHECK(dram_read(3456, 32768) == Approx(2.0).margin(0.01));
}
