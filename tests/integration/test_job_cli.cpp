// `archsim run WORKLOADS.yaml#NAME --target TARGETS.yaml#NAME`: a small tensor x pipeline x data
// parallel GPT training job end to end, its last_run.json consistent with itself and with
// Megatron's FLOP formula, the format's custom keys kept, and its one-line errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "sim/base/version.h"
#include "tests/support/cli.h"
#include "tests/support/temp_file.h"
#include "tests/support/undeclared.h"

using namespace archsim::test;
using json = nlohmann::json;

namespace {

const std::string kSrc = ARCHSIM_SOURCE_DIR;
const std::string kTarget = kSrc + "/configs/clusters/targets.yaml#NVIDIA_A100_80GB_SuperPOD";

/// A small GPT job in the workloads.yaml format; `edit` rewrites one line of it.
std::string job_yaml(const std::string& from = "", const std::string& to = "", const std::string& from2 = "", const std::string& to2 = "") {
    std::string y = R"(workloads:
  - name: tiny
    framework: megatron
    model_family: gpt
    params: { hidden_size: 256, n_layers: 4, vocab_size: 1024, n_heads: 4 }
    parallelism: { tp: 2, pp: 2, dp: 2 }
    sequence: { prompt: 128, generate: 0 }
    precision: { weights: fp16, activations: fp16 }
    dataloader: synthetic
    duration_minutes: 5
    track: parity
    runtime_tuning: { microbatch: 2, gpudirect_rdma: true }
    training: { optimizer: adam, recompute: full }
    global_batch: 16
    team: perf-lab
    cost_center: 4711
    ticket: "4711"
    budget: { gpus: 16, share: 0.25, tags: [nightly, 2], pinned: false }
)";
    if (!from.empty()) y = std::regex_replace(y, std::regex(from), to);
    if (!from2.empty()) y = std::regex_replace(y, std::regex(from2), to2);
    return write_temp("archsim_job_" + std::to_string(std::hash<std::string>()(y)) + ".yaml", y);
}

/// A small tensor x pipeline parallel Llama serving job in the workloads.yaml format, its weights
/// and activations at `precision`.
std::string serve_yaml(const std::string& precision) {
    return write_temp("archsim_job_serve_" + precision + ".yaml", R"(workloads:
  - name: serve
    framework: tensorrt
    model_family: llama
    params: { hidden_size: 256, n_layers: 4, vocab_size: 1024, n_heads: 4, n_kv_heads: 2, ffn_hidden_size: 512 }
    parallelism: { tp: 2, pp: 2, dp: 1 }
    sequence: { prompt: 64, generate: 8 }
    precision: { weights: )" + precision + ", activations: " + precision + R"( }
    dataloader: synthetic
    duration_minutes: 1
    track: parity
    runtime_tuning: { microbatch: 2 }
)");
}

/// A small tensor-parallel Llama inference entry `day` of 30 minutes up to its `schedule.phases:`
/// line (the phases follow).
std::string day_yaml(const std::string& dataloader, const std::string& track) {
    return R"(workloads:
  - name: day
    framework: tensorrt
    model_family: llama
    params: { hidden_size: 256, n_layers: 2, vocab_size: 1024, n_heads: 4 }
    parallelism: { tp: 2, pp: 1, dp: 1 }
    sequence: { prompt: 64, generate: 4 }
    precision: { weights: fp16, activations: fp16 }
    dataloader: )" + dataloader + R"(
    duration_minutes: 30
    track: )" + track + R"(
    runtime_tuning: { microbatch: 2 }
    schedule:
      phases:
)";
}

}  // namespace

TEST_CASE("a tp x pp x dp training job writes last_run.json whose parts add up", "[e2e][cluster]") {
    const std::string out = temp_dir("job_tiny");
    const CliResult r = run_archsim("run " + job_yaml() + "#tiny --target " + kTarget + " --out " + out);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(slurp(out + "/last_run.json"));
    const double step = j["step_time_s"].get<double>();
    CHECK(step > 0);
    CHECK(j["devices"] == 8);
    CHECK(j["parallelism"]["microbatches_per_pipeline"] == 4);
    // Megatron's formula over the simulated step, per device
    const double h = 256, l = 4, s = 128, V = 1024, B = 16;
    const double F = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    CHECK(j["model_flops_per_iteration"].get<double>() == Approx(F));
    CHECK(j["tflops_per_device"].get<double>() == Approx(F / 8 / step / 1e12));
    // MFU counts model FLOPs (no recomputation: Korthikanti et al. 2022), HFU the hardware FLOPs,
    // with full recomputation Megatron's formula
    const double model_F = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    const double peak = j["peak_tflops_per_device"].get<double>() * 1e12;
    CHECK(j["mfu"].get<double>() == Approx(model_F / 8 / step / peak));
    CHECK(j["hfu"].get<double>() == Approx(j["tflops_per_device"].get<double>() / j["peak_tflops_per_device"].get<double>()));
    CHECK(j["mfu"].get<double>() < j["hfu"].get<double>());
    // every stage's time is its compute, the communication it waited on and its bubble
    for (const auto& st : j["stages"])
        CHECK(st["compute_s"].get<double>() + st["exposed_communication_s"].get<double>() + st["bubble_s"].get<double>() == Approx(step));
    // Megatron's tensor-parallel all-reduces per microbatch: stage 0 (embedding + 2 layers):
    // 1 + 2 x 2 forward, 2 x 4 backward (recomputation included); stage 1 (2 layers + head):
    // 2 x 2 + 3 (cross-entropy) forward, 2 x 4 + 1 backward; over 4 microbatches
    int64_t tp_ar = 0, sends = 0;
    for (const auto& c : j["communication"]) {
        if (c["scope"] == "tensor" && c["collective"] == "all_reduce") tp_ar += c["count"].get<int64_t>();
        if (c["scope"] == "pipeline") sends += c["count"].get<int64_t>();
        CHECK(c["exposed_s"].get<double>() <= c["time_s"].get<double>() * (1 + 1e-9));
    }
    CHECK(tp_ar == (13 + 16) * 4);
    CHECK(sends == 2 * 4);  // one activation forward, one gradient back, per microbatch
    // custom keys keep their YAML types, at every depth
    CHECK(j["custom"]["team"] == "perf-lab");
    CHECK(j["custom"]["global_batch"] == 16);
    CHECK(j["custom"]["cost_center"] == 4711);
    CHECK(j["custom"]["ticket"] == "4711");
    CHECK(j["custom"]["budget"] == json::parse(R"({"gpus": 16, "share": 0.25, "tags": ["nightly", 2], "pinned": false})"));
    CHECK(j["memory_per_device_bytes"].get<double>() > 0);
    CHECK(j["energy_job_j"].get<double>() == Approx(j["energy_per_device_j"].get<double>() * 8));
    // the nodes' power outside the devices, reported apart: 8 devices fill one DGX A100 node, whose
    // file cites 2 x 65 W of host CPUs and 8 NICs of 16.7 W
    const json& nodes = j["node_overhead_power"];
    CHECK(nodes["nodes"] == 1);
    CHECK(nodes["per_node_w"].get<double>() == Approx(130 + 8 * 16.7));
    CHECK(nodes["total_w"].get<double>() == Approx(nodes["per_node_w"].get<double>()));
    CHECK(nodes["job_with_nodes_w"].get<double>() == Approx(j["power_job_w"].get<double>() + nodes["total_w"].get<double>()));
    CHECK(nodes["not_modeled"] == "network switches");
    CHECK(r.out.find("nodes' overhead") != std::string::npos);
    // the trace: a lane per stage and per link; its summary gives the split and the overlap
    const CliResult sum = run_archsim("trace summary " + out + "/trace.h5");
    INFO(sum.err);
    REQUIRE(sum.exit_code == 0);
    CHECK(sum.out.find("job: where the step went") != std::string::npos);
    CHECK(sum.out.find("pipeline_bubble") != std::string::npos);
    CHECK(sum.out.find("communication hidden under compute") != std::string::npos);
    CHECK(sum.out.find("stage1.nvlink") == std::string::npos);  // links are not compute components
    const CliResult e = run_archsim("trace export " + out + "/trace.h5 --perfetto " + out + "/p.json.gz");
    CHECK(e.exit_code == 0);
    // the same job as an llm entry of archsim's TOML workloads, with a parallelism table
    const std::string toml = write_temp("archsim_job_tiny.toml", R"([tiny]
family = "llm"
model_family = "gpt"
hidden = 256
layers = 4
heads = 4
ffn = 1024
vocab = 1024
max_positions = 128
sequence = { prompt = 128, generate = 0 }
precision = { weights = "fp16", activations = "fp16" }
batch = 2
global_batch = 16
parallelism = { tp = 2, pp = 2, dp = 2 }
training = { optimizer = "adam", recompute = "full" }
)");
    const std::string out2 = temp_dir("job_tiny_toml");
    const CliResult t = run_archsim("run " + toml + "#tiny --target " + kTarget + " --out " + out2);
    INFO(t.err);
    REQUIRE(t.exit_code == 0);
    CHECK(json::parse(slurp(out2 + "/last_run.json"))["step_time_s"].get<double>() == Approx(step));
    // resumable: the device runs are reused when nothing changed, and rerun when the job did
    const std::string sig = slurp(out + "/devices/train_tp2_ep1_mb2_full_l2_first/signature.txt");
    CHECK(sig.find("--batch\n2") != std::string::npos);
    // a run cached by another archsim build is run again: its signature starts with the build
    const std::string sig_path = out + "/devices/train_tp2_ep1_mb2_full_l2_first/signature.txt";
    CHECK(sig.rfind(std::string("archsim ") + archsim::version() + ", build ", 0) == 0);
    std::ofstream(sig_path) << "archsim 0.0.0, build 0000000000000000" << sig.substr(sig.find('\n'));
    REQUIRE(run_archsim("run " + job_yaml() + "#tiny --target " + kTarget + " --out " + out).exit_code == 0);
    CHECK(slurp(sig_path) == sig);
    const CliResult again = run_archsim("run " + job_yaml() + "#tiny --target " + kTarget + " --out " + out + " --microbatch 1");
    REQUIRE(again.exit_code == 0);
    CHECK(slurp(out + "/devices/train_tp2_ep1_mb1_full_l2_first/signature.txt").find("--batch\n1") != std::string::npos);
    CHECK(json::parse(slurp(out + "/last_run.json"))["parallelism"]["microbatches_per_pipeline"] == 8);
    // CUDA graphs: the GPU devices launch their kernels graph_launch_overhead_us apart, so the step shortens
    const double streams_step = json::parse(slurp(out + "/last_run.json"))["step_time_s"].get<double>();
    const CliResult graphs = run_archsim("run " + job_yaml() + "#tiny --target " + kTarget + " --out " + out + " --microbatch 1 --cuda-graphs on");
    REQUIRE(graphs.exit_code == 0);
    CHECK(slurp(out + "/devices/train_tp2_ep1_mb1_full_l2_first/signature.txt").find("kernel.cuda_graphs=true") != std::string::npos);
    const json g = json::parse(slurp(out + "/last_run.json"));
    CHECK(g["step_time_s"].get<double>() < streams_step);
    CHECK(g["not_modeled"].dump().find("cuda_graphs") == std::string::npos);
    // every figure is a declared job metric (`archsim metrics`)
    CHECK(undeclared_numbers(j, archsim::MetricScope::Job) == std::vector<std::string>{});
}

TEST_CASE("a job's bad input is one line and exit code 2", "[e2e][cluster][bad_input]") {
    const std::string out = temp_dir("job_bad");
    struct Case {
        std::string from, to, says, from2 = "", to2 = "";
    };
    for (const Case& c : std::vector<Case>{{"tp: 2", "tp: 3", "parallelism.tp = 3"},
                                           {"pp: 2", "pp: 3", "does not divide the 4 layers"},
                                           {"dp: 2", "dp: 4096", "devices", "global_batch: 16", "global_batch: 16384"},
                                           {"    track: parity\n", "", "track: missing"},
                                           {"global_batch: 16", "global_batch: 15", "global_batch = 15"},
                                           {"dp: 2 \\}", "dp: 2, ep: 2 }", "needs a mixture-of-experts model"}}) {
        INFO(c.says);
        const CliResult r = run_archsim("run " + job_yaml(c.from, c.to, c.from2, c.to2) + "#tiny --target " + kTarget + " --out " + out);
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(c.says) != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    const CliResult r = run_archsim("run " + job_yaml() + "#tiny --target " + kSrc + "/configs/clusters/targets.yaml#NoSuchTarget --out " + out);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("NVIDIA_H100_8x_NVLink") != std::string::npos);  // lists the known targets
    const CliResult onnx = run_archsim("run " + kSrc + "/workloads/models/resnet18.onnx --target " + kTarget + " --out " + out);
    CHECK(onnx.exit_code == 2);
    CHECK(onnx.err.find("a parallel job is WORKLOADS.yaml#NAME") != std::string::npos);
}

TEST_CASE("a tensor x pipeline parallel inference job reports TTFT, time per token and its collectives", "[e2e][cluster]") {
    const std::string y = serve_yaml("fp16");
    const std::string out = temp_dir("job_serve");
    const CliResult r = run_archsim("run " + y + "#serve --target " + kSrc + "/configs/clusters/targets.yaml#NVIDIA_H100_8x_NVLink --out " + out);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(slurp(out + "/last_run.json"));
    CHECK(j["mode"] == "inference");
    const double ttft = j["ttft_s"].get<double>(), tpot = j["time_per_output_token_s"].get<double>(), req = j["request_s"].get<double>();
    CHECK(ttft > 0);
    CHECK(tpot > 0);
    CHECK(req == Approx(ttft + 7 * tpot));                   // the prefill's token, then 7 decode steps
    CHECK(j["tokens_per_s"].get<double>() == Approx(2 * 8 / req));
    // 4 devices occupy one DGX H100 node: its hosts (147 W) and 8 ConnectX-7 NICs (24.9 W) draw beside them
    CHECK(j["node_overhead_power"]["nodes"] == 1);
    CHECK(j["node_overhead_power"]["total_w"].get<double>() == Approx(147 + 8 * 24.9));
    CHECK(j["node_overhead_power"]["job_with_nodes_w"].get<double>() ==
          Approx(j["power_per_device_w"].get<double>() * 4 + j["node_overhead_power"]["total_w"].get<double>()));
    // the batch of 2 flows through the 2 stages as 2 microbatches (pipelined prefill and decode);
    // per microbatch and pass: the embedding's all-reduce and two per layer (4 layers over the two
    // stages), and the LM head's logits all-gather; 8 passes (the prefill and 7 decode steps)
    CHECK(j["parallelism"]["pipeline_microbatches"] == 2);
    int64_t ar = 0, ag = 0;
    for (const auto& c : j["communication"]) {
        if (c["scope"] == "tensor" && c["collective"] == "all_reduce") ar += c["count"].get<int64_t>();
        if (c["scope"] == "tensor" && c["collective"] == "all_gather") ag += c["count"].get<int64_t>();
    }
    CHECK(ar == 2 * 9 * 8);
    CHECK(ag == 2 * 8);
    CHECK(j["tensor_comm_share_of_token"].get<double>() > 0);
    CHECK(j["tensor_comm_share_of_token"].get<double>() < 1);
    CHECK(undeclared_numbers(j, archsim::MetricScope::Job) == std::vector<std::string>{});
}

TEST_CASE("FP8 is its own precision: an H100 runs it at its FP8 rate and says so, an A100 (no FP8 tensor cores) refuses it", "[e2e][cluster]") {
    const std::string targets = kSrc + "/configs/clusters/targets.yaml#";
    auto run = [&](const std::string& prec, const std::string& target, const std::string& extra = "") {
        return run_archsim("run " + serve_yaml(prec) + "#serve --target " + targets + target + " --out " + temp_dir("job_fp8") + extra);
    };
    const CliResult fp8 = run("fp8", "NVIDIA_H100_8x_NVLink", " --format json");
    INFO(fp8.err);
    REQUIRE(fp8.exit_code == 0);
    const json j8 = json::parse(fp8.out);
    CHECK(j8["model"]["precision"] == "fp8");
    CHECK(j8["model"]["precision_from"].get<std::string>().rfind("workload ", 0) == 0);
    const CliResult fp16 = run("fp16", "NVIDIA_H100_8x_NVLink", " --format json");
    REQUIRE(fp16.exit_code == 0);
    // the one rule on jobs too: a device --set precision outranks the workload (it was ignored)
    const CliResult set16 = run("fp8", "NVIDIA_H100_8x_NVLink", " --format json --set precision=fp16");
    INFO(set16.err);
    REQUIRE(set16.exit_code == 0);
    const json js = json::parse(set16.out);
    CHECK(js["model"]["precision"] == "fp16");
    CHECK(js["model"]["precision_from"] == "--set");
    CHECK(js["time_per_output_token_s"].get<double>() > j8["time_per_output_token_s"].get<double>());
    // one byte per weight instead of two, at twice the tensor rate: every decode step is faster
    CHECK(j8["time_per_output_token_s"].get<double>() < json::parse(fp16.out)["time_per_output_token_s"].get<double>());
    const CliResult text = run("fp8", "NVIDIA_H100_8x_NVLink");
    CHECK(text.out.find("precision            fp8 (workload ") != std::string::npos);
    const CliResult a100 = run("fp8", "NVIDIA_A100_80GB_SuperPOD");
    CHECK(a100.exit_code == 2);
    CHECK(a100.err.find("a100_sxm4_80gb.toml: sm.macs_per_cycle.fp8: is 0: this GPU has no FP8 tensor cores") != std::string::npos);
}

TEST_CASE("a job's schedule phases run one by one and are weighted by duration", "[e2e][cluster]") {
    const std::string y = write_temp("archsim_job_phases.yaml", day_yaml("replay", "best") + R"(        - { name: steady, duration_minutes: 20, request_profile: steady_state }
        - { name: peak, duration_minutes: 10, tokens_scale: 4, request_profile: peak, overrides: { sequence.prompt: 32 }, slo_ms: 250 }
    runtime_tunning: { microbatch: 8 }
)");
    const std::string out = temp_dir("job_phases");
    const CliResult r = run_archsim("run " + y + "#day --target " + kSrc + "/configs/clusters/targets.yaml#NVIDIA_H100_8x_NVLink --out " + out);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(slurp(out + "/last_run.json"));
    REQUIRE(j["phases"].size() == 2);
    const json peak = json::parse(slurp(out + "/phases/peak/last_run.json"));
    CHECK(peak["parallelism"]["batch_per_replica"] == 16);  // tokens_scale 4 x peak's 2 x 2 sequences
    CHECK(peak["prompt_tokens"] == 32);                    // the phase's override
    const double a = j["phases"][0]["tokens_per_s"].get<double>(), b = j["phases"][1]["tokens_per_s"].get<double>();
    CHECK(j["tokens_per_s"].get<double>() == Approx((20 * a + 10 * b) / 30));
    CHECK(undeclared_numbers(j, archsim::MetricScope::Job) == std::vector<std::string>{});
    CHECK(j["phases"][1]["custom"]["slo_ms"] == 250);  // a phase's custom key, kept with its type
    // an entry key one edit from the format's is kept as custom (the format keeps custom keys), with a warning
    CHECK(r.err.find("warning: " + y + "#day.runtime_tunning: not a key of the format, kept as a custom key; did you mean "
                     "'runtime_tuning'?") != std::string::npos);
    CHECK(j["custom"]["runtime_tunning"]["microbatch"] == 8);
    const CliResult bad = run_archsim("run " + y + "#day --phase lunch --target " + kSrc + "/configs/clusters/targets.yaml#NVIDIA_H100_8x_NVLink --out " + out);
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("no such phase in schedule.phases (steady, peak)") != std::string::npos);
    const CliResult none = run_archsim("run " + y + "#night --target " + kSrc + "/configs/clusters/targets.yaml#NVIDIA_H100_8x_NVLink --out " + out);
    CHECK(none.exit_code == 2);
    CHECK(none.err.find("no such workload (the file has: day)") != std::string::npos);
}

TEST_CASE("a phase run as one batch scales it by tokens_scale and request_profile and its replicas by autoscale_factor", "[e2e][cluster]") {
    const std::string base = day_yaml("synthetic", "parity");
    const std::string target = " --target " + kSrc + "/configs/clusters/targets.yaml#NVIDIA_H100_8x_NVLink --quiet";
    const std::string y = write_temp("archsim_job_batch_phases.yaml", base + R"(        - { name: quiet, duration_minutes: 10, request_profile: low, tokens_scale: 4 }
        - { name: wide, duration_minutes: 10, autoscale_factor: 2 }
        - { name: same, duration_minutes: 10 }
)");
    const std::string out = temp_dir("job_batch_phases");
    const CliResult r = run_archsim("run " + y + "#day" + target + " --out " + out);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json quiet = json::parse(slurp(out + "/phases/quiet/last_run.json"));
    const json wide = json::parse(slurp(out + "/phases/wide/last_run.json"));
    const json same = json::parse(slurp(out + "/phases/same/last_run.json"));
    CHECK(quiet["parallelism"]["batch_per_replica"] == 2);  // 2 sequences x 4 x low's 0.25
    CHECK(same["parallelism"]["batch_per_replica"] == 2);
    CHECK(wide["parallelism"]["dp"] == 2);                  // two replicas, four devices
    CHECK(wide["devices"] == 4);
    CHECK(wide["tokens_per_s"].get<double>() == Approx(2 * same["tokens_per_s"].get<double>()));
    // duration_minutes: the batches that fit in the phase's 10 minutes, back to back
    CHECK(same["over_duration"]["minutes"] == 10.0);
    CHECK(same["over_duration"]["iterations"].get<double>() == std::floor(600.0 / same["request_s"].get<double>()));
    CHECK(same["over_duration"]["tokens"].get<double>() ==
          Approx(same["over_duration"]["iterations"].get<double>() * same["tokens_per_s"].get<double>() * same["request_s"].get<double>()));
    CHECK(undeclared_numbers(same, archsim::MetricScope::Job) == std::vector<std::string>{});
    // a framework with no runtime profile of its name says what runs instead
    bool said = false;
    for (const auto& line : same["not_modeled"]) said |= line.get<std::string>().rfind("framework = tensorrt:", 0) == 0;
    CHECK_FALSE(said);
    const std::string torch = write_temp("archsim_job_torch.yaml", std::regex_replace(base, std::regex("framework: tensorrt"), "framework: pytorch") +
                                                                       "        - { name: only, duration_minutes: 10 }\n");
    const CliResult t = run_archsim("run " + torch + "#day" + target + " --out " + out + "/torch");
    REQUIRE(t.exit_code == 0);
    const json tj = json::parse(slurp(out + "/torch/phases/only/last_run.json"));
    for (const auto& line : tj["not_modeled"]) said |= line.get<std::string>().rfind("framework = pytorch: no runtime profile of that name", 0) == 0;
    CHECK(said);
    // bursty arrivals need arrivals; a training phase has no request profile
    const std::string spike = write_temp("archsim_job_spike.yaml", base + "        - { name: burst, duration_minutes: 10, request_profile: spike }\n");
    const CliResult s = run_archsim("run " + spike + "#day" + target + " --out " + out);
    CHECK(s.exit_code == 2);
    CHECK(s.err.find("request_profile = spike: means bursty arrivals") != std::string::npos);
}

TEST_CASE("the network fields change a job as documented: topology, leaf groups, oversubscription, RoCE, a vendor fabric, SR-IOV", "[e2e][cluster]") {
    // 64 H100s: tp 4 inside each node, dp 16 over 8 nodes: the gradient all-reduce crosses the network
    const std::string y = job_yaml("tp: 2, pp: 2, dp: 2", "tp: 4, pp: 1, dp: 16", "global_batch: 16", "global_batch: 32");
    const std::string superpod = kSrc + "/configs/clusters/targets.yaml#NVIDIA_H100_SuperPOD";
    const std::string out = temp_dir("job_network");  // one folder: the runs share their device runs (the network is not in them)
    auto data_s = [&](const std::string& extra, const std::string& target, const std::string& yaml) {
        const CliResult r = run_archsim("run " + yaml + "#tiny --target " + target + " --out " + out + " --quiet" + extra);
        INFO(extra << "\n" << r.err);
        REQUIRE(r.exit_code == 0);
        const json j = json::parse(slurp(out + "/last_run.json"));
        double t = 0;
        for (const auto& c : j["communication"])
            if (c["scope"] == "data") t += c["time_s"].get<double>();
        return t;
    };
    // dgx_h100.toml is rail-optimized: 8 nodes of one 32-node rail group, one switch apart
    const double rail = data_s("", superpod, y);
    // a fat tree puts 4 nodes under a leaf (32 down ports, 8 NICs each): 8 nodes cross the spine, 3 switches
    const double fat = data_s(" --cluster-set network.topology=\"fat-tree\"", superpod, y);
    CHECK(fat > rail);
    // ...unless the leaf holds all 8
    CHECK(data_s(" --cluster-set network.topology=\"fat-tree\" --cluster-set network.leaf_nodes=8", superpod, y) == Approx(rail));
    // 2:1 above the leaf: half the NIC share across the spine
    CHECK(data_s(" --cluster-set network.topology=\"fat-tree\" --cluster-set network.oversubscription=2", superpod, y) > 1.3 * fat);
    // RoCE hashes flows (ECMP): 0.60 / 0.95 of the throughput across the spine; with adaptive routing it is InfiniBand's
    const double roce = data_s(" --cluster-set network.topology=\"fat-tree\" --fabric RoCE", superpod, y);
    CHECK(roce > 1.1 * fat);  // the bandwidth term x 0.95 / 0.60; the latency term as before
    CHECK(data_s(" --cluster-set network.topology=\"fat-tree\" --fabric RoCE --cluster-set network.adaptive_routing=\"on\"", superpod, y) ==
          Approx(fat));
    // RoCE within one rail group: no spine, no flow collisions
    CHECK(data_s(" --fabric RoCE", superpod, y) == Approx(rail));
    // SR-IOV: 2% of the network bandwidth
    const double sriov = data_s(" --virt sriov", superpod, y);
    CHECK(sriov > rail);
    CHECK(sriov < 1.03 * rail);
    // a vendor fabric comes from the target file; a target without one refuses it
    const std::string vendor = write_temp("archsim_targets_vendor.yaml", "targets:\n  - name: fast\n    cluster: " + kSrc +
                                                                             "/configs/clusters/dgx_h100.toml\n    vendor_fabric: { nic_gbit: 800, "
                                                                             "switch_latency_ns: 100 }\n");
    CHECK(data_s(" --fabric Vendor", vendor + "#fast", y) < rail);
    const CliResult none = run_archsim("run " + y + "#tiny --target " + superpod + " --out " + temp_dir("job_vendor") + " --fabric Vendor");
    CHECK(none.exit_code == 2);
    CHECK(none.err.find("runtime_tuning.fabric = Vendor: the target NVIDIA_H100_SuperPOD names no vendor_fabric") != std::string::npos);
}

TEST_CASE("a job plan that does not fit its devices' memory is refused unless asked for, and a sweep files it as infeasible", "[e2e][job]") {
    const std::string jobs = kSrc + "/tests/bad_inputs/jobs_bad.yaml", out = temp_dir("job_capacity");
    const std::string target = " --target " + kSrc + "/configs/clusters/targets.yaml#NVIDIA_H100_8x_NVLink --quiet --out " + out;
    // inference: the weights and the KV cache of the sequences in flight, checked before anything runs
    CliResult refused = run_archsim("run " + jobs + "#small" + target + " --set dram.capacity_gib=0.001");
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("#small on NVIDIA_H100_8x_NVLink: does not fit in memory: needs ") != std::string::npos);
    CHECK(refused.err.find("(weights ") != std::string::npos);
    CHECK(refused.err.find("KV cache ") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out + "/devices/prefill0"));  // no device ran
    CliResult allowed = run_archsim("run " + jobs + "#small" + target + " --set dram.capacity_gib=0.001 --allow-over-capacity --format json");
    REQUIRE(allowed.exit_code == 0);
    CHECK(json::parse(allowed.out)["memory_fits"] == false);
    // training: the pipeline stages' peak, by category
    CliResult train = run_archsim("run " + jobs + "#small_train" + target + " --set dram.capacity_gib=0.001");
    CHECK(train.exit_code == 2);
    CHECK(train.err.find("pipeline stage 0 does not fit in memory: needs ") != std::string::npos);
    CHECK(train.err.find("optimizer state ") != std::string::npos);
    // a sweep point that does not fit is filed as infeasible, and the others run
    const std::string w = out + "/w.toml", study = out + "/study.toml";
    std::ofstream(w) << "[t]\nfamily = \"mlp\"\nlayers = 2\ninput = 256\nwidth = 256\noutput = 16\nmode = \"train\"\n";
    std::ofstream(study) << "name = \"cap\"\nmodels = [\"" << w << "#t\"]\n[axes]\n\"dram.capacity_gib\" = [0.000001, 80]\n"
                         << "[[machine]]\nlabel = \"a100\"\nconfig = \"" << kSrc << "/configs/gpu/a100_sxm4_80gb.toml\"\n";
    CliResult sweep = run_archsim("sweep " + study + " --out " + out + "/sweep --quiet");
    CHECK(sweep.exit_code != 0);  // not every point finished
    const std::string csv = slurp(out + "/sweep/results.csv");
    CHECK(csv.find(",infeasible,") != std::string::npos);
    CHECK(csv.find(",ok,") != std::string::npos);
    std::filesystem::remove_all(out);
}

TEST_CASE("track: best searches a training job's parallel plans and runs the best one", "[e2e][cluster][search]") {
    const std::string out = temp_dir("job_search");
    const CliResult r = run_archsim("run " + job_yaml("track: parity", "track: best") + "#tiny --target " + kTarget + " --out " + out +
                                    " --search-plans 6 --search-budget 1");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(slurp(out + "/last_run.json"));
    REQUIRE(j.contains("search"));
    const json& x = j["search"];
    CHECK(x["devices"] == 8);
    // every plan of the space is accounted for once
    const int64_t n = x["plans_enumerated"], inf = x["plans_infeasible"], ev = x["plans_evaluated"], pr = x["plans_pruned"], left = x["plans_left"];
    CHECK(n == inf + ev + pr + left);
    const json& by = x["infeasible_by"];
    CHECK(inf == by["placement"].get<int64_t>() + by["memory_lower_bound"].get<int64_t>() + by["memory"].get<int64_t>() +
                     by["simulation_failed"].get<int64_t>());
    CHECK(ev >= 6);
    // the top plans by step, the best first; the job's own plan among those evaluated, not faster than the best
    const json& top = x["top"];
    REQUIRE(top.size() >= 2);
    for (size_t i = 1; i < top.size(); ++i) CHECK(top[i - 1]["step_time_s"].get<double>() <= top[i]["step_time_s"].get<double>());
    const double best = x["best"]["step_time_s"];
    CHECK(best == top[0]["step_time_s"].get<double>());
    CHECK(x["job_plan"]["status"] == "evaluated");
    CHECK(x["job_plan"]["step_time_s"].get<double>() >= best);
    // the best plan's own run reproduces its step exactly, with its plan
    CHECK(j["step_time_s"].get<double>() == best);
    for (const char* k : {"tp", "pp", "dp", "microbatch", "virtual_stages", "zero_stage"}) CHECK(j["parallelism"][k] == x["best"]["parallelism"][k]);
    CHECK(j["parallelism"]["recompute"] == x["best"]["parallelism"]["recompute"]);
    // each evaluated plan's run is kept; the search's wall times go to its log, beside the metrics
    const json child = json::parse(slurp(out + "/search/" + top[1]["id"].get<std::string>() + "/last_run.json"));
    CHECK(child["step_time_s"].get<double>() == top[1]["step_time_s"].get<double>());
    CHECK(slurp(out + "/search/search_log.txt").find("best " + x["best"]["id"].get<std::string>()) != std::string::npos);
    CHECK(undeclared_numbers(j, archsim::MetricScope::Job) == std::vector<std::string>{});
    // --search off runs the plan as written
    const std::string out2 = temp_dir("job_search_off");
    const CliResult off = run_archsim("run " + job_yaml("track: parity", "track: best") + "#tiny --target " + kTarget + " --out " + out2 + " --search off");
    REQUIRE(off.exit_code == 0);
    const json o = json::parse(slurp(out2 + "/last_run.json"));
    CHECK_FALSE(o.contains("search"));
    CHECK(o["step_time_s"].get<double>() == x["job_plan"]["step_time_s"].get<double>());
}

TEST_CASE("under sequence parallelism a pipeline stage sends its 1/tp shard of the activation", "[e2e][cluster]") {
    // Megatron-LM's p2p tensor shape: seq_length / tp under sequence parallelism (the tiny job:
    // tp 2, pp 2, microbatch 2 of 128 tokens of 256 fp16 values: 131,072 bytes a send without it)
    const std::string out = temp_dir("job_sp_send");
    auto sends = [&](const std::string& sp) {
        const CliResult r = run_archsim("run " + job_yaml() + "#tiny --target " + kTarget + " --out " + out + " --parallel sequence_parallel=" + sp);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        const json j = json::parse(slurp(out + "/last_run.json"));
        for (const json& c : j["communication"])
            if (c["scope"] == "pipeline" && c["collective"] == "send_recv") return c["bytes"].get<double>() / c["count"].get<double>();
        return 0.0;
    };
    CHECK(sends("false") == 131072.0);
    CHECK(sends("true") == 65536.0);
}

TEST_CASE("run --parallel sets a field of the job's plan and a bad one is one line with exit code 2", "[e2e][cluster][bad_input]") {
    const std::string out = temp_dir("job_parallel");
    const CliResult r = run_archsim("run " + job_yaml() + "#tiny --target " + kTarget + " --out " + out +
                                    " --parallel tp=4 --parallel pp=1 --parallel sequence_parallel=true --parallel recompute=selective");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(slurp(out + "/last_run.json"));
    CHECK(j["parallelism"]["tp"] == 4);
    CHECK(j["parallelism"]["pp"] == 1);
    CHECK(j["parallelism"]["sequence_parallel"] == true);
    CHECK(j["parallelism"]["recompute"] == "selective");
    // the device runs take the job's --mapper (auto, the default, is not written: earlier runs stay
    // valid) and its sequence parallelism: the chunk's norms, dropouts and residual sums on 1/tp
    // of the tokens, so a norm is shorter and the chunk keeps less for its backward than without
    // it (its forward as a whole need not be: the tiny model's kernels are launch-bound, and the
    // embedding's dropout no longer fuses with its position add across the scatter)
    const std::string sp_sig = slurp(out + "/devices/train_tp4_ep1_mb2_selective_sp_l4_whole/signature.txt");
    REQUIRE_FALSE(sp_sig.empty());
    CHECK(sp_sig.find("--mapper") == std::string::npos);
    CHECK(sp_sig.find("shard.sequence_parallel=true") != std::string::npos);
    const CliResult no_sp = run_archsim("run " + job_yaml() + "#tiny --target " + kTarget + " --out " + out +
                                        " --parallel tp=4 --parallel pp=1 --parallel sequence_parallel=false --parallel recompute=selective");
    REQUIRE(no_sp.exit_code == 0);
    const json with = json::parse(slurp(out + "/devices/train_tp4_ep1_mb2_selective_sp_l4_whole/metrics.json"));
    const json without = json::parse(slurp(out + "/devices/train_tp4_ep1_mb2_selective_l4_whole/metrics.json"));
    auto saved = [](const json& m) { return m["training"]["memory"]["largest"]["saved_activations_bytes"].get<double>(); };
    CHECK(saved(with) < saved(without));
    auto norm_s = [](const json& m) {
        for (const json& op : m["ops"])
            if (op["name"] == "/model/layers.1/LayerNormalization") return op["latency_s"].get<double>();
        return 0.0;
    };
    CHECK(norm_s(with) > 0);
    CHECK(norm_s(with) < norm_s(without));
    const CliResult fixed = run_archsim("run " + job_yaml() + "#tiny --target " + kTarget + " --out " + out + " --parallel tp=4 --parallel pp=1 --mapper fixed");
    REQUIRE(fixed.exit_code == 0);
    CHECK(slurp(out + "/devices/train_tp4_ep1_mb2_full_l4_whole/signature.txt").find("--mapper\nfixed") != std::string::npos);
    for (const auto& [arg, says] : std::vector<std::pair<std::string, std::string>>{{"tp=x", "--parallel tp=x: must be an integer >= 1"},
                                                                                     {"nodes=2", "--parallel nodes=2: unknown key"},
                                                                                     {"recompute=some", "must be one of none, selective, full"},
                                                                                     {"tp=3", "parallelism.tp = 3"}}) {
        INFO(arg);
        const CliResult bad = run_archsim("run " + job_yaml() + "#tiny --target " + kTarget + " --out " + out + " --parallel " + arg);
        CHECK(bad.exit_code == 2);
        CHECK(bad.err.find(says) != std::string::npos);
        CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
    }
}
