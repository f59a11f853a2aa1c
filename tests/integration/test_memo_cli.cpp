// Kernel memoization (arch/common/kernel_memo.h): a model whose layers repeat is replayed on the
// machines that memoize, and the run's numbers are the full-detail reference's (run --reference:
// no memoization, one DRAM transaction per burst), at either trace detail.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
const std::string kSrc = ARCHSIM_SOURCE_DIR;

/// metrics.json of a run with `extra` arguments, and the "N kernels replayed of M" it reported.
json run_metrics(const std::string& model, const std::string& config, const std::string& extra, long& replayed, long& kernels) {
    const std::string out = temp_dir("memo");
    CliResult r = run_archsim("run " + model + " --arch " + kSrc + "/configs/" + config + " --out " + out + " --format json " + extra);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.err, m, std::regex("([0-9]+) kernels replayed of ([0-9]+)")));
    replayed = std::stol(m[1]), kernels = std::stol(m[2]);
    json j = json::parse(slurp(out + "/metrics.json"));
    fs::remove_all(out);
    j["total"].erase("events");  // how many events were emitted is what the fast paths change
    return j;
}
}  // namespace

TEST_CASE("repeated layers are replayed on the TPU, KPU and GPU with the reference's numbers", "[e2e][memo]") {
    // six identical encoder layers (generated: the shapes of ../shared/models/bert_like_encoder.onnx)
    const std::string dir = temp_dir("memo_wl");
    const std::string wl = dir + "/w.toml";
    std::ofstream(wl) << ("[enc]\nfamily = \"transformer_encoder\"\nlayers = 6\nd_model = 512\nheads = 8\nffn = 2048\nsequence = 128\n");
    // the KPU's envelope lifted (power.mid_w = 0): under it the power controller gives each layer a
    // clock of its own, and a kernel is replayed only at the clock it was recorded at (the golden
    // tests check the fast paths' exactness under the envelope)
    for (const std::string cfg : {"tpu/tpu_32x32_ws.toml", "kpu/t64.toml --set power.mid_w=0", "gpu/a100_sxm4_80gb.toml"}) {
        INFO(cfg);
        long replayed = 0, kernels = 0, ref_replayed = 0, ref_kernels = 0, k_replayed = 0, k_kernels = 0;
        const json fast = run_metrics(wl + "#enc", cfg, "", replayed, kernels);
        const json kern = run_metrics(wl + "#enc", cfg, "--detail kernel", k_replayed, k_kernels);
        const json ref = run_metrics(wl + "#enc", cfg, "--reference", ref_replayed, ref_kernels);
        CHECK(ref_replayed == 0);
        CHECK(ref_kernels == 0);
        CHECK(replayed > kernels / 2);  // five of six layers repeat the first
        CHECK(k_replayed == replayed);
        CHECK(fast == kern);
        // the reference rounds each burst's time on its own: equal to 1e-9, as the golden tests compare
        const double a = fast["total"]["latency_s"].get<double>(), b = ref["total"]["latency_s"].get<double>();
        CHECK(std::abs(a - b) <= 1e-9 * b);
        const double ea = fast["total"]["energy_j"].get<double>(), eb = ref["total"]["energy_j"].get<double>();
        CHECK(std::abs(ea - eb) <= 1e-9 * eb);
        CHECK(fast["total"]["compute_cycles"] == ref["total"]["compute_cycles"]);
        CHECK(fast["total"]["stall_cycles"] == ref["total"]["stall_cycles"]);
        CHECK(fast["total"]["traffic_bytes"] == ref["total"]["traffic_bytes"]);
    }
    fs::remove_all(dir);
}

TEST_CASE("repeated layers are replayed on the CPU with the numbers of simulating every layer", "[e2e][memo][cpu]") {
    // the six encoder layers on the host CPU: its caches meet layer n as they met layer n - 1
    // (renamed) once the layers before the stack have left them, and from there on the layers
    // replay (arch/cpu/repeat_replay.h): exactly the run that simulates every layer
    // (replay.repeats = false), at either trace detail; within the CPU golden tolerance of the
    // reference, which also turns the CPU's bounded fast paths off
    const std::string dir = temp_dir("memo_cpu");
    const std::string wl = dir + "/w.toml";
    std::ofstream(wl) << ("[enc]\nfamily = \"transformer_encoder\"\nlayers = 6\nd_model = 512\nheads = 8\nffn = 2048\nsequence = 128\n");
    long replayed = 0, kernels = 0, k_replayed = 0, k_kernels = 0, all_replayed = 1, all_kernels = 1, ref_replayed = 1, ref_kernels = 1;
    const json fast = run_metrics(wl + "#enc", "cpu/host.toml", "", replayed, kernels);
    const json kern = run_metrics(wl + "#enc", "cpu/host.toml", "--detail kernel", k_replayed, k_kernels);
    const json all = run_metrics(wl + "#enc", "cpu/host.toml", "--set replay.repeats=false", all_replayed, all_kernels);
    const json ref = run_metrics(wl + "#enc", "cpu/host.toml", "--reference", ref_replayed, ref_kernels);
    CHECK(replayed >= kernels / 4);  // at least the last two layers' kernels
    CHECK(k_replayed == replayed);
    CHECK(all_replayed == 0);
    CHECK(ref_replayed == 0);
    CHECK(fast == kern);
    CHECK(fast == all);
    for (const char* key : {"latency_s", "energy_j"}) {
        INFO(key);
        CHECK(std::abs(fast["total"][key].get<double>() / ref["total"][key].get<double>() - 1) <= 5e-3);
    }
    fs::remove_all(dir);
}

TEST_CASE("a training step's forward and backward layers both replay on the CPU, with the numbers of simulating every layer", "[e2e][memo][cpu]") {
    // six encoder layers trained: the forward runs layers 0..5 and the backward 5..0, reading
    // the forward's saved activations (some only through a view, a Reshape): two regions, each
    // with its own tensor correspondence (kernel_repeats.h), both replayed, and exactly the run
    // that simulates every layer
    const std::string dir = temp_dir("memo_cpu_train");
    const std::string wl = dir + "/w.toml";
    std::ofstream(wl) << ("[enc]\nfamily = \"transformer_encoder\"\nlayers = 6\nd_model = 256\nheads = 4\nffn = 1024\nsequence = 128\n");
    long replayed = 0, kernels = 0, all_replayed = 1, all_kernels = 1;
    const json fast = run_metrics(wl + "#enc --batch 4 --train", "cpu/host.toml", "--detail kernel", replayed, kernels);
    const json all = run_metrics(wl + "#enc --batch 4 --train", "cpu/host.toml", "--detail kernel --set replay.repeats=false", all_replayed, all_kernels);
    CHECK(replayed >= kernels / 2);
    CHECK(all_replayed == 0);
    CHECK(fast == all);
    fs::remove_all(dir);
}

TEST_CASE("on the CPU, layers replay from the second layer's first kernels that meet the caches as the first layer's did, to the last layer's tail", "[e2e][memo][cpu]") {
    // four encoder layers at batch 16 with the L3 cut to 2 MiB: every kernel streams more than
    // the L3, so the caches meet layer 1's second kernel as they met layer 0's (renamed); layer
    // 0 starts from cold caches, so the match is inside an instance (repeat_replay.h), and the
    // last layer, whose last kernel writes the graph's output, is a partial instance (the
    // region's tail, kernel_repeats.h) that replays too: only layer 0, a few kernels of layer 1
    // and the output kernel are simulated, and the numbers are exactly those of simulating every
    // layer (replay.repeats = false), which restores the caches at the region's end from a copy
    const std::string dir = temp_dir("memo_cpu_phase");
    const std::string wl = dir + "/w.toml";
    std::ofstream(wl) << ("[enc]\nfamily = \"transformer_encoder\"\nlayers = 4\nd_model = 256\nheads = 4\nffn = 1024\nsequence = 128\n");
    long replayed = 0, kernels = 0, all_replayed = 1, all_kernels = 1;
    const json fast = run_metrics(wl + "#enc --batch 16", "cpu/host.toml", "--set l3.kib=2048", replayed, kernels);
    const json all = run_metrics(wl + "#enc --batch 16", "cpu/host.toml", "--set l3.kib=2048 --set replay.repeats=false", all_replayed, all_kernels);
    CHECK(replayed >= kernels - kernels / 4 - 5);
    CHECK(all_replayed == 0);
    CHECK(fast == all);
    fs::remove_all(dir);
}

TEST_CASE("a kernel's repeated loop units are replayed on the CPU with the numbers of simulating every unit", "[e2e][memo][cpu]") {
    // one encoder layer at batch 16 on the host CPU with its L2 cut to 256 KiB: its GEMMs' mc-row
    // blocks (2,048 rows) and the attention's 64 instances are loops whose units move by whole set
    // spans; each core's units replay once its L1d and L2 meet one as they met the unit a period
    // before (arch/cpu/unit_replay.h): exactly the run that simulates every unit (replay.units =
    // false), line by line and under set sampling (the L3 cut to 1 MiB) alike
    const std::string dir = temp_dir("memo_units");
    const std::string wl = dir + "/w.toml";
    std::ofstream(wl) << ("[enc]\nfamily = \"transformer_encoder\"\nlayers = 1\nd_model = 256\nheads = 4\nffn = 1024\nsequence = 128\n");
    for (const std::string caches : {"--set l2.kib=256", "--set l2.kib=256 --set l3.kib=1024"}) {
        INFO(caches);
        const std::string out = temp_dir("memo_units_run");
        CliResult r = run_archsim("run " + wl + "#enc --batch 16 --arch " + kSrc + "/configs/cpu/host.toml --out " + out + " " + caches);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        std::smatch m;
        REQUIRE(std::regex_search(r.err, m, std::regex("([0-9]+) loop units replayed")));
        CHECK(std::stol(m[1]) >= 100);
        json fast = json::parse(slurp(out + "/metrics.json"));
        fs::remove_all(out);
        long replayed = 0, kernels = 0;
        const json all = run_metrics(wl + "#enc --batch 16", "cpu/host.toml", caches + " --set replay.units=false", replayed, kernels);
        fast["total"].erase("events");
        CHECK(fast == all);
    }
    fs::remove_all(dir);
}
