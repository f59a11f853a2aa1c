// Serving over time end to end (docs/serving.md): a small Llama served on an H100 by the
// TensorRT-LLM profile, its last_run.json's serving object consistent with the load and the
// engine's settings, and its bad input one line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/support/cli.h"
#include "tests/support/temp_file.h"
#include "tests/support/undeclared.h"

using namespace archsim::test;
using json = nlohmann::json;

namespace {

const std::string kSrc = ARCHSIM_SOURCE_DIR;
const std::string kH100 = kSrc + "/configs/clusters/targets.yaml#NVIDIA_H100_8x_NVLink";

/// A 4-layer Llama served with `serving` (the block's YAML flow mapping), `dp` replicas of `tp`
/// devices each.
std::string serve_yaml(const std::string& name, const std::string& serving, int dp = 1, const std::string& framework = "tensorrt-llm",
                       const std::string& dataloader = "synthetic", const std::string& track = "parity", int tp = 1) {
    return write_temp("archsim_serving_" + name + ".yaml", R"(workloads:
  - name: )" + name + R"(
    framework: )" + framework + R"(
    model_family: llama
    params: { hidden_size: 256, n_layers: 4, vocab_size: 1024, n_heads: 4, n_kv_heads: 4, ffn_hidden_size: 512 }
    parallelism: { tp: )" + std::to_string(tp) + R"(, pp: 1, dp: )" + std::to_string(dp) + R"( }
    sequence: { prompt: 64, generate: 32 }
    precision: { weights: bf16, activations: bf16 }
    dataloader: )" + dataloader + R"(
    duration_minutes: 1
    track: )" + track + R"(
    serving: )" + serving + "\n");
}

json run_serving(const std::string& yaml, const std::string& name, const std::string& out) {
    const CliResult r = run_archsim("run " + yaml + "#" + name + " --target " + kH100 + " --out " + out + " --quiet");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(slurp(out + "/last_run.json"));
}

/// The powers of two a serving search tries below the largest batch its run `id` (at the
/// engine's own max_batch, in OUT/search/) held: at most four, largest first.
std::vector<int64_t> limits_below(const std::string& out, const std::string& id) {
    const int64_t peak = json::parse(slurp(out + "/search/" + id + "/last_run.json"))["serving"]["peak_running"].get<int64_t>();
    std::vector<int64_t> v;
    int64_t p = 1;
    while (p * 2 < peak) p *= 2;
    for (; p >= 1 && p < peak && v.size() < 4; p /= 2) v.push_back(p);
    return v;
}

/// A serving plan's settings as the search varies them, written "t<budget> chunked|whole
/// <scheduler> <policy> p<prefill replicas>" after its split and max_batch ("tp1_dp4_b2048").
std::string setting_text(const std::string& split, int64_t tokens, bool chunked, const std::string& scheduler, const std::string& policy,
                         int64_t prefill) {
    return split + " t" + std::to_string(tokens) + (chunked ? " chunked " : " whole ") + scheduler + " " + policy + " p" + std::to_string(prefill);
}
/// A search row's (top or failed) settings.
std::string row_setting(const json& row) {
    const std::string id = row["id"];
    return setting_text(id.substr(0, id.find('_', id.find("_b") + 1)), row["max_num_tokens"], row["chunked_prefill"], row["scheduler"], row["policy"],
                        row["prefill_replicas"]);
}

/// The objectives a serving job states: time to first token, time per output token.
struct Objectives {
    bool ttft = false, tpot = false;
};

/// The settings a serving search runs beside its plan `id` (a run in OUT/search/), each departing
/// from the plan's own in one setting: half its token budget where that is below the largest
/// iteration the run held or its budget held work back; twice it and chunked prefill switched
/// only where it held work back; the other scheduler where its KV cache held a request back or
/// preempted one; with a TTFT or TPOT objective some request missed and dp >= 2, none, dp/4 and
/// dp/2 prefill replicas (at least 1, below dp, not its own); the other batching policy where
/// it is static or a TPOT objective was missed. `candidates` gets how many it considered before
/// the run pruned any (4 engine settings, the policy and the prefill-replica counts).
std::vector<std::string> settings_beside(const std::string& out, const std::string& id, Objectives slo, int64_t& candidates) {
    const json sv = json::parse(slurp(out + "/search/" + id + "/last_run.json"))["serving"];
    const json& e = sv["engine"];
    const std::string split = id.substr(0, id.find('_', id.find("_b") + 1));
    const int64_t dp = std::stoll(id.substr(id.find("_dp") + 3));
    const int64_t budget = e["max_num_tokens"], prefill = sv.contains("disaggregation") ? sv["disaggregation"]["prefill_replicas"].get<int64_t>() : 0;
    const bool chunked = e["chunked_prefill"];
    const std::string sched = e["scheduler"], policy = e["policy"];
    const int64_t peak = sv["peak_iteration_tokens"], held = sv["budget_limited_iterations"];
    std::vector<std::string> v;
    if (held > 0 || budget / 2 < peak) v.push_back(setting_text(split, budget / 2, chunked, sched, policy, prefill));
    if (held > 0) {
        v.push_back(setting_text(split, budget * 2, chunked, sched, policy, prefill));
        v.push_back(setting_text(split, budget, !chunked, sched, policy, prefill));
    }
    if (sv["kv_limited_iterations"].get<int64_t>() > 0 || sv["preemptions"].get<int64_t>() > 0)
        v.push_back(setting_text(split, budget, chunked, sched == "max_utilization" ? "guaranteed_no_evict" : "max_utilization", policy, prefill));
    const bool missed = sv.value("slo_attainment", 1.0) < 1;
    std::vector<int64_t> counts;
    for (const int64_t p : {int64_t(0), std::max<int64_t>(1, dp / 4), dp / 2})
        if (dp >= 2 && p != prefill && p < dp && std::find(counts.begin(), counts.end(), p) == counts.end()) counts.push_back(p);
    if ((slo.ttft || slo.tpot) && missed)
        for (const int64_t p : counts) v.push_back(setting_text(split, budget, chunked, sched, policy, p));
    if (policy == "static" || (slo.tpot && missed))
        v.push_back(setting_text(split, budget, chunked, sched, policy == "static" ? "continuous" : "static", prefill));
    candidates += 5 + int64_t(counts.size());
    return v;
}

/// What a finished search ran beside the engine's own settings (`own`, a setting_text() without
/// its split: TensorRT-LLM's own are "t<budget> whole guaranteed_no_evict continuous p0"), served
/// (`top`) or not (`failed`), sorted; what the rule expects beside every plan the search
/// expanded (`search.expanded`), sorted, without repeats; and the settings it pruned.
struct SettingsPlans {
    std::vector<std::string> ran, expected;
    int64_t pruned = 0;
};
SettingsPlans settings_plans(const std::string& out, const json& search, int64_t budget, Objectives slo = {}) {
    SettingsPlans r;
    const std::string own = " t" + std::to_string(budget) + " whole guaranteed_no_evict continuous p0";
    auto departs = [&](const std::string& s) { return s.substr(s.find(' ')) != own; };
    for (const char* list : {"top", "failed"})
        for (const json& row : search[list])
            if (departs(row_setting(row))) r.ran.push_back(row_setting(row));
    int64_t candidates = 0;
    size_t variants = 0;
    for (const json& id : search["expanded"]) {
        const std::vector<std::string> v = settings_beside(out, id, slo, candidates);
        variants += v.size();
        for (const std::string& s : v)
            if (departs(s)) r.expected.push_back(s);
    }
    r.pruned = candidates - int64_t(variants);
    for (std::vector<std::string>* v : {&r.ran, &r.expected}) {
        std::sort(v->begin(), v->end());
        v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    return r;
}

}  // namespace

TEST_CASE("a serving job serves its requests over time and reports latency percentiles with every figure declared", "[e2e][serving]") {
    const std::string out = temp_dir("serving_low");
    const json j = run_serving(serve_yaml("low", "{ arrival_rate_per_s: 20, requests: 40, arrival: uniform, max_num_tokens: 256, slo_ttft_ms: 1000 }"),
                               "low", out);
    CHECK(j["mode"] == "serving");
    const json& s = j["serving"];
    CHECK(s["engine"]["profile"] == "tensorrt-llm");
    CHECK(s["requests"] == 40);
    // a light load: every request is served as it comes, the last one 39 gaps of 50 ms after the first
    CHECK(s["duration_s"].get<double>() >= 39 * 0.050);
    CHECK(s["achieved_requests_per_s"].get<double>() <= 20.0 * 40 / 39);
    CHECK(s["achieved_requests_per_s"].get<double>() > 15.0);
    for (const char* k : {"ttft_s", "itl_s", "tpot_s", "e2e_s"}) {
        INFO(k);
        CHECK(s[k]["p50"].get<double>() > 0);
        CHECK(s[k]["p50"].get<double>() <= s[k]["p90"].get<double>());
        CHECK(s[k]["p90"].get<double>() <= s[k]["p99"].get<double>());
    }
    // e2e is the first token and 31 more: TTFT + 31 x TPOT on average
    CHECK(s["e2e_s"]["mean"].get<double>() == Approx(s["ttft_s"]["mean"].get<double>() + 31 * s["tpot_s"]["mean"].get<double>()));
    CHECK(s["preemptions"] == 0);
    CHECK(s["output_tokens_per_s"].get<double>() == Approx(32 * s["achieved_requests_per_s"].get<double>()));
    CHECK(j["power_per_device_w"].get<double>() > 0);
    CHECK(undeclared_numbers(j, archsim::MetricScope::Job) == std::vector<std::string>{});
    // the trace: an event per iteration and three per request (queued, prefill, decode), and the
    // queue, batch and KV-cache counters at every timeline sample
    const CliResult t = run_archsim("trace export " + out + "/trace.h5 --perfetto " + out + "/serving.json.gz");
    INFO(t.out << t.err);
    REQUIRE(t.exit_code == 0);
    const int64_t events = s["iterations"].get<int64_t>() + 3 * 40;
    INFO(events << " events, " << s["timeline"].size() << " samples");
    const std::string said = t.out + t.err;
    CHECK(said.find(std::to_string(events) + " events -> " + std::to_string(events) + " slices") != std::string::npos);
    // the export's own counters (DRAM bandwidth and compute occupancy bins) come first
    const size_t at = said.find(" counter samples");
    REQUIRE(at != std::string::npos);
    const size_t from = said.rfind(' ', at - 1) + 1;
    CHECK(std::stoll(said.substr(from, at - from)) >= int64_t(3 * s["timeline"].size()));
    // goodput: a loose TTFT objective every request meets; a TPOT objective none can
    CHECK(s["slo"]["ttft_s"] == 1.0);
    CHECK(s["slo_attainment"] == 1.0);
    CHECK(s["goodput_requests_per_s"] == s["achieved_requests_per_s"]);
    const json strict = run_serving(serve_yaml("strict", "{ arrival_rate_per_s: 20, requests: 40, arrival: uniform, max_num_tokens: 256, slo_tpot_ms: 0.000001 }"),
                                    "strict", temp_dir("serving_strict"));
    CHECK(strict["serving"]["slo_met_requests"] == 0);
    CHECK(strict["serving"]["goodput_requests_per_s"] == 0.0);
    // power over time: the intervals' energy adds up to the run's, less what follows the last sample
    double timeline_j = 0;
    const json& tl = s["timeline"];
    CHECK(tl[0]["power_w"].is_null());
    for (size_t k = 1; k < tl.size(); ++k)
        if (!tl[k]["power_w"].is_null()) timeline_j += tl[k]["power_w"].get<double>() * (tl[k]["t_s"].get<double>() - tl[k - 1]["t_s"].get<double>());
    CHECK(timeline_j <= j["energy_per_device_j"].get<double>());
    CHECK(timeline_j > 0.9 * j["energy_per_device_j"].get<double>());
    const CliResult summary = run_archsim("trace summary " + out);
    CHECK(summary.out.find("requests.decode") == std::string::npos);  // lanes are components, not operators
    CHECK(summary.out.find("queued") != std::string::npos);
}

TEST_CASE("all at once a batch limit queues requests and without reserving a small KV cache preempts", "[e2e][serving]") {
    const std::string out = temp_dir("serving_burst");
    const json free = run_serving(serve_yaml("burst", "{ arrival_rate_per_s: inf, requests: 16, max_num_tokens: 256 }"), "burst", out);
    const json capped = run_serving(serve_yaml("capped", "{ arrival_rate_per_s: inf, requests: 16, max_batch: 4, max_num_tokens: 256 }"), "capped", out);
    CHECK(free["serving"]["peak_queue"] == 0);
    CHECK(capped["serving"]["peak_queue"].get<int64_t>() == 12);  // 4 run, 12 wait
    CHECK(capped["serving"]["ttft_s"]["p99"].get<double>() > 2 * free["serving"]["ttft_s"]["p99"].get<double>());
    // a KV cache for about two requests of 96 tokens: reserving, no preemption; growing as tokens come, preemptions
    const std::string tiny = "max_num_tokens: 256, kv_cache_fraction: 0.000012";  // about 250 tokens of 4 KiB
    const json reserve = run_serving(serve_yaml("reserve", "{ arrival_rate_per_s: inf, requests: 8, " + tiny + " }"), "reserve", out);
    const json grow =
        run_serving(serve_yaml("grow", "{ arrival_rate_per_s: inf, requests: 8, scheduler: max_utilization, kv_block_tokens: 16, " + tiny + " }"),
                    "grow", out);
    CHECK(reserve["serving"]["preemptions"] == 0);
    CHECK(reserve["serving"]["peak_kv_tokens"].get<int64_t>() <= reserve["serving"]["kv_capacity_tokens"].get<int64_t>());
    CHECK(grow["serving"]["preemptions"].get<int64_t>() > 0);
    CHECK(grow["serving"]["peak_kv_tokens"].get<int64_t>() <= grow["serving"]["kv_capacity_tokens"].get<int64_t>());
    CHECK(grow["serving"]["swaps_out"] == 0);
    // the same with swap preemption: the KV goes to host memory and back over the host link
    const json swap = run_serving(serve_yaml("swap", "{ arrival_rate_per_s: inf, requests: 8, scheduler: max_utilization, kv_block_tokens: 16, "
                                                     "preemption: swap, " + tiny + " }"), "swap", out);
    const json& w = swap["serving"];
    CHECK(w["engine"]["preemption"] == "swap");
    CHECK(w["swaps_out"].get<int64_t>() > 0);
    CHECK(w["swaps_in"] == w["swaps_out"]);
    CHECK(w["swap_s"].get<double>() > 0);
    // out and back over the device's PCIe gen5 link to the host, 64 GB/s (configs/clusters/dgx_h100.toml)
    CHECK(w["swap_s"].get<double>() == Approx(2 * w["swapped_tokens"].get<double>() * w["kv_bytes_per_token"].get<double>() / 64e9));
    CHECK(undeclared_numbers(swap, archsim::MetricScope::Job) == std::vector<std::string>{});
}

TEST_CASE("a serving job's schedule phases shape the rate by request_profile and tokens_scale and add replicas by autoscale_factor", "[e2e][serving]") {
    const std::string y = write_temp("archsim_serving_day.yaml", R"(workloads:
  - name: day
    framework: tensorrt-llm
    model_family: llama
    params: { hidden_size: 256, n_layers: 4, vocab_size: 1024, n_heads: 4, n_kv_heads: 4, ffn_hidden_size: 512 }
    parallelism: { tp: 1, pp: 1, dp: 1 }
    sequence: { prompt: 64, generate: 32 }
    precision: { weights: bf16, activations: bf16 }
    dataloader: synthetic
    duration_minutes: 1
    track: parity
    serving: { arrival_rate_per_s: 2, arrival: uniform, max_batch: 16, max_num_tokens: 256 }
    schedule:
      phases:
        - { name: night, duration_minutes: 1, request_profile: low }
        - { name: rush, duration_minutes: 1, request_profile: peak, tokens_scale: 2 }
        - { name: scaled, duration_minutes: 0.5, request_profile: steady_state, autoscale_factor: 2 }
)");
    const std::string out = temp_dir("serving_day");
    const CliResult r = run_archsim("run " + y + "#day --target " + kH100 + " --out " + out + " --quiet");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json night = json::parse(slurp(out + "/phases/night/last_run.json"));
    const json rush = json::parse(slurp(out + "/phases/rush/last_run.json"));
    const json scaled = json::parse(slurp(out + "/phases/scaled/last_run.json"));
    // low: 2 x 0.25 = 0.5 requests/s over 60 s; peak x tokens_scale: 2 x 2 x 2 = 8 requests/s
    CHECK(night["serving"]["requests"] == 30);
    CHECK(rush["serving"]["requests"] == 480);
    CHECK(rush["serving"]["achieved_requests_per_s"].get<double>() == Approx(8.0).epsilon(0.05));
    CHECK(night["serving"]["achieved_requests_per_s"].get<double>() == Approx(0.5).epsilon(0.05));
    CHECK(night["not_modeled"].dump().find("request_profile = low") != std::string::npos);
    // autoscale_factor: two replicas serving 2 requests/s between them
    CHECK(scaled["devices"] == 2);
    CHECK(scaled["serving"]["achieved_requests_per_s"].get<double>() == Approx(2.0).epsilon(0.05));
    const json day = json::parse(slurp(out + "/last_run.json"));
    CHECK(day["tokens_per_s"].get<double>() ==
          Approx((1 * night["tokens_per_s"].get<double>() + 1 * rush["tokens_per_s"].get<double>() + 0.5 * scaled["tokens_per_s"].get<double>()) / 2.5));
    // the whole schedule: every phase's requests together (the scaled phase's two replicas each
    // serve its 60 alike), the percentiles from the merged histograms within half a bin (1.2%)
    CHECK(day["mode"] == "serving");
    const json& all = day["serving"];
    CHECK(all["requests"] == 30 + 480 + 60);
    const double ttft_mean = (30 * night["serving"]["ttft_s"]["mean"].get<double>() + 480 * rush["serving"]["ttft_s"]["mean"].get<double>() +
                              60 * scaled["serving"]["ttft_s"]["mean"].get<double>()) / 570;
    CHECK(all["ttft_s"]["mean"].get<double>() == Approx(ttft_mean));
    double lo = 1e9, hi = 0;
    for (const json* p : {&night, &rush, &scaled})
        lo = std::min(lo, (*p)["serving"]["e2e_s"]["p50"].get<double>()), hi = std::max(hi, (*p)["serving"]["e2e_s"]["p99"].get<double>());
    CHECK(all["e2e_s"]["p50"].get<double>() >= lo / 1.012);
    CHECK(all["e2e_s"]["p99"].get<double>() <= hi * 1.012);
    CHECK(all["achieved_requests_per_s"].get<double>() ==
          Approx((night["serving"]["achieved_requests_per_s"].get<double>() + rush["serving"]["achieved_requests_per_s"].get<double>() +
                  0.5 * scaled["serving"]["achieved_requests_per_s"].get<double>()) / 2.5));
    CHECK(undeclared_numbers(day, archsim::MetricScope::Job) == std::vector<std::string>{});
    CHECK(undeclared_numbers(rush, archsim::MetricScope::Job) == std::vector<std::string>{});
    // report: the figures, and the plots of every phase and of the pooled requests
    const CliResult rep = run_archsim("report " + out);
    INFO(rep.err);
    CHECK(rep.exit_code == 0);
    CHECK(rep.out.find("all 570 requests") != std::string::npos);
    for (const char* plot : {"/plots/serving_latency.svg", "/plots/serving_timeline.svg"}) {
        INFO(plot);
        const std::string svg = slurp(out + plot);
        for (const char* phase : {"night", "rush", "scaled"}) CHECK(svg.find(phase) != std::string::npos);
    }
    CHECK(slurp(out + "/plots/serving_latency.svg").find("all phases") != std::string::npos);
    CHECK(slurp(out + "/report.html").find("all phases") != std::string::npos);
}

TEST_CASE("the workload format's own command form runs the same job as archsim's", "[e2e][serving]") {
    const std::string y = serve_yaml("form", "{ arrival_rate_per_s: 10, requests: 8, max_num_tokens: 256 }");
    const std::string out = temp_dir("serving_form");
    const CliResult ours = run_archsim("run " + y + "#form --target " + kH100 + " --out " + out + "/a --quiet --format json");
    const CliResult theirs = run_archsim("run --targets " + kSrc + "/configs/clusters/targets.yaml --target NVIDIA_H100_8x_NVLink --workloads " + y +
                                         " --workload form --out " + out + "/b --quiet --format json");
    INFO(ours.err << theirs.err);
    REQUIRE(ours.exit_code == 0);
    REQUIRE(theirs.exit_code == 0);
    CHECK(json::parse(ours.out)["serving"]["ttft_s"] == json::parse(theirs.out)["serving"]["ttft_s"]);
    const CliResult half = run_archsim("run --workloads " + y + " --target " + kH100 + " --out " + out + "/c");
    CHECK(half.exit_code == 2);
    CHECK(half.err.find("--workloads FILE and --workload NAME go together") != std::string::npos);
}

TEST_CASE("dataloader replay serves the requests of a CSV with their own arrivals and lengths", "[e2e][serving]") {
    const std::string csv = write_temp("archsim_serving_replay.csv",
                                       "arrival_s,prompt_tokens,output_tokens\n0.0,64,8\n0.05,200,40\n0.05,16,4\n0.3,100,100\n");
    const std::string out = temp_dir("serving_replay");
    const std::string y = serve_yaml("replay", "{ replay_file: " + csv + ", max_num_tokens: 256 }", 1, "tensorrt-llm", "replay", "best");
    const CliResult r = run_archsim("run " + y + "#replay --target " + kH100 + " --out " + out + " --quiet");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(slurp(out + "/last_run.json"));
    CHECK(j["serving"]["requests"] == 4);
    CHECK(j["serving"]["output_tokens"].get<double>() == Approx((8 + 40 + 4 + 100) / 4.0));
    // the last request arrives at 0.3 s and generates 100 tokens: the run lasts past both
    CHECK(j["serving"]["duration_s"].get<double>() > 0.3);
    CHECK(j["serving"]["e2e_s"]["p99"].get<double>() > j["serving"]["e2e_s"]["p50"].get<double>());
    // track: best searches the replica splits: one device has one, run with the engine's
    // max_batch, then with the powers of two below the largest batch that run held, then the best
    // two with the token budget (256) halved where that could bind, and on from any of those
    // that beat them; a budget of 128 cannot hold the prompt of 200 without chunked prefill:
    // such a run is infeasible, named with its reason
    REQUIRE(j.contains("search"));
    const json& x = j["search"];
    CHECK(x["splits"] == 1);
    const int64_t batches = 1 + int64_t(limits_below(out, "tp1_dp1_b2048").size());
    const SettingsPlans sp = settings_plans(out, x, 256);
    CHECK(sp.ran == sp.expected);
    CHECK(x["plans_enumerated"] == batches + int64_t(sp.ran.size()));
    CHECK(x["plans_pruned"] == sp.pruned);
    REQUIRE(x["expanded"].size() >= std::min<size_t>(2, size_t(batches)));
    for (size_t k = 0; k < std::min<size_t>(2, size_t(batches)); ++k)  // the leaders: the best of the batch limits, at the engine's settings
        CHECK(x["expanded"][k].get<std::string>().find("_t") == std::string::npos);
    CHECK(x["plans_evaluated"].get<int64_t>() + x["plans_infeasible"].get<int64_t>() == x["plans_enumerated"].get<int64_t>());
    for (const json& f : x["failed"]) {
        CHECK(f["id"].get<std::string>().find("_t128") != std::string::npos);
        CHECK(f["why"].get<std::string>().find("200") != std::string::npos);
    }
    for (const auto& [rows, says] : std::vector<std::pair<std::string, std::string>>{
             {"arrival_s,prompt_tokens,output_tokens\n0.5,64,8\n0.1,64,8\n", ":3: arrivals must not decrease"},
             {"arrival_s,prompt_tokens,output_tokens\n0.5,sixty,8\n", ":2: '0.5,sixty,8' is not arrival_s,prompt_tokens,output_tokens"},
             {"time,in,out\n0.5,64,8\n", ":1: the header must be arrival_s,prompt_tokens,output_tokens"}}) {
        const std::string bad = write_temp("archsim_serving_bad_replay.csv", rows);
        const std::string yb = serve_yaml("badreplay", "{ replay_file: " + bad + " }", 1, "tensorrt-llm", "replay");
        const CliResult e = run_archsim("run " + yb + "#badreplay --target " + kH100 + " --out " + out + "/bad --quiet");
        INFO(rows << "\n" << e.err);
        CHECK(e.exit_code == 2);
        CHECK(e.err.find(says) != std::string::npos);
    }
    const CliResult none = run_archsim("run " + serve_yaml("noreplay", "{ arrival_rate_per_s: 2 }", 1, "tensorrt-llm", "replay") +
                                       "#noreplay --target " + kH100 + " --out " + out + "/none --quiet");
    CHECK(none.exit_code == 2);
    CHECK(none.err.find("dataloader: replay needs the CSV of requests to replay") != std::string::npos);
}

TEST_CASE("serving.lengths draws the synthetic requests' lengths around the means and the run serves them", "[e2e][serving]") {
    const std::string out = temp_dir("serving_lengths");
    const std::string load = "{ arrival_rate_per_s: 40, requests: 24, max_batch: 4, max_num_tokens: 256";  // a small device-run grid
    const json fixed = run_serving(serve_yaml("fixed", load + " }"), "fixed", out);
    const json drawn = run_serving(serve_yaml("drawn", load + ", lengths: uniform }"), "drawn", out);
    CHECK(fixed["serving"]["prompt_tokens"].get<double>() == 64.0);
    CHECK(fixed["serving"]["longest_request_tokens"] == 96);
    const double p = drawn["serving"]["prompt_tokens"].get<double>(), o = drawn["serving"]["output_tokens"].get<double>();
    CHECK(p != 64.0);  // 24 draws on [1, 127]
    CHECK(p == Approx(64).margin(20));
    CHECK(o == Approx(32).margin(10));
    CHECK(drawn["serving"]["longest_request_tokens"].get<int64_t>() > 96);
    CHECK(drawn["serving"]["lengths"]["kind"] == "uniform");
    CHECK(drawn["serving"]["output_tokens_per_s"].get<double>() == Approx(o * drawn["serving"]["achieved_requests_per_s"].get<double>()));
    // the spread shows in the latencies: requests of different lengths finish at different times
    CHECK(drawn["serving"]["e2e_s"]["p99"].get<double>() / drawn["serving"]["e2e_s"]["p50"].get<double>() >
          fixed["serving"]["e2e_s"]["p99"].get<double>() / fixed["serving"]["e2e_s"]["p50"].get<double>());
    bool says_fixed = false;
    for (const auto& line : fixed["not_modeled"]) says_fixed |= line.get<std::string>().find("fixed at sequence.prompt") != std::string::npos;
    CHECK(says_fixed);
    CHECK(undeclared_numbers(drawn, archsim::MetricScope::Job) == std::vector<std::string>{});
}

TEST_CASE("prefill_replicas splits the replicas into prefill and decode instances with the KV handed over", "[e2e][serving]") {
    const std::string out = temp_dir("serving_disagg");
    const std::string load = "{ arrival_rate_per_s: 40, requests: 24, max_batch: 4, max_num_tokens: 256";  // a small device-run grid
    const json mixed = run_serving(serve_yaml("mixed", load + " }", 2), "mixed", out);
    const json split = run_serving(serve_yaml("split", load + ", prefill_replicas: 1 }", 2), "split", out);
    const json& d = split["serving"]["disaggregation"];
    CHECK(!mixed["serving"].contains("disaggregation"));
    CHECK(d["prefill_replicas"] == 1);
    CHECK(d["decode_replicas"] == 1);
    CHECK(d["kv_link"] == "intra");  // two devices of one node: NVLink
    // 64 prompt tokens of KV over NVLink: positive, and under a millisecond
    CHECK(d["kv_transfer_s"].get<double>() > 0);
    CHECK(d["kv_transfer_s"].get<double>() < 1e-3);
    CHECK(split["serving"]["requests"] == 24);
    CHECK(d["prefill_iterations"].get<int64_t>() > 0);
    CHECK(d["decode_iterations"].get<int64_t>() > 0);
    // the first token comes from the prefill instance, the rest from the decode instance: e2e is
    // TTFT and the output's remaining 31 tokens at TPOT, as without disaggregation
    const json& s = split["serving"];
    CHECK(s["e2e_s"]["mean"].get<double>() == Approx(s["ttft_s"]["mean"].get<double>() + 31 * s["tpot_s"]["mean"].get<double>()));
    CHECK(undeclared_numbers(split, archsim::MetricScope::Job) == std::vector<std::string>{});
    const CliResult bad = run_archsim("run " + serve_yaml("all", load + ", prefill_replicas: 2 }", 2) + "#all --target " + kH100 + " --out " + out + " --quiet");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("must leave at least one of the 2 dp replicas to decode") != std::string::npos);
}

TEST_CASE("a tensor-parallel replica splits the weights and KV heads over its devices and pays its collectives every iteration", "[e2e][serving]") {
    const std::string out = temp_dir("serving_tp");
    const std::string load = "{ arrival_rate_per_s: 40, requests: 24, max_batch: 4, max_num_tokens: 256 }";  // a small device-run grid
    const json one = run_serving(serve_yaml("tp1", load), "tp1", out);
    const json two = run_serving(serve_yaml("tp2", load, 1, "tensorrt-llm", "synthetic", "parity", 2), "tp2", out);
    const json &a = one["serving"], &b = two["serving"];
    CHECK(two["parallelism"]["tp"] == 2);
    CHECK(a["tensor_comm_share"].get<double>() == 0.0);
    CHECK(b["tensor_comm_share"].get<double>() > 0.0);
    CHECK(b["tensor_comm_share"].get<double>() < 1.0);
    // 4 KV heads over 2 devices: half the bytes per token on each; the capacity more than doubles,
    // since each device also holds half the weights
    CHECK(b["kv_bytes_per_token"].get<double>() == Approx(a["kv_bytes_per_token"].get<double>() / 2));
    CHECK(b["kv_capacity_tokens"].get<int64_t>() > 2 * a["kv_capacity_tokens"].get<int64_t>());
    CHECK(two["memory_per_device_bytes"].get<double>() < one["memory_per_device_bytes"].get<double>());
    // the same requests served: the job's energy is its two devices'
    CHECK(b["requests"] == 24);
    CHECK(two["energy_job_j"].get<double>() == Approx(2 * two["energy_per_device_j"].get<double>()));
    CHECK(undeclared_numbers(two, archsim::MetricScope::Job) == std::vector<std::string>{});
}

TEST_CASE("a serving job's bad input is one line and exit code 2", "[e2e][serving][bad_input]") {
    const std::string out = temp_dir("serving_bad");
    for (const auto& [serving, says] : std::vector<std::pair<std::string, std::string>>{
             {"{ arrival_rate_per_s: -1, requests: 4 }", "serving.arrival_rate_per_s"},
             {"{ arrival_rate_per_s: 2, requests: 4, arival: poisson }", "did you mean 'arrival'"},
             {"{ arrival_rate_per_s: 2, requests: 4, kv_cache_fraction: 0.0000001 }", "less than one request needs"},
             {"{ arrival_rate_per_s: 2, requests: 4, arrival: gaussian }", "must be one of poisson, uniform, bursty"},
             {"{ arrival_rate_per_s: 2, requests: 4, lengths: normal }", "must be one of fixed, uniform, exponential, lognormal"},
             {"{ arrival_rate_per_s: 2, requests: 4, length_cv: 2 }", "is read with lengths: lognormal only"},
             {"{ arrival_rate_per_s: 2, requests: 4, lengths: lognormal, length_cv: 0 }", "must be above 0"},
             {"{ arrival_rate_per_s: 2, requests: 4, slo_ttft_ms: -5 }", "slo_ttft_ms = -5: must be >= 0"}}) {
        const CliResult r = run_archsim("run " + serve_yaml("bad", serving) + "#bad --target " + kH100 + " --out " + out + " --quiet");
        INFO(serving << "\n" << r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(says) != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
}

TEST_CASE("track: best serves every tensor-parallel split of a serving job's devices and keeps the one with the most goodput", "[e2e][serving][search]") {
    const std::string out = temp_dir("serving_search");
    const std::string y = serve_yaml("split", "{ arrival_rate_per_s: 40, requests: 24, max_num_tokens: 256, slo_ttft_ms: 50 }", 4, "tensorrt-llm",
                                     "synthetic", "best");
    const json j = run_serving(y, "split", out);
    REQUIRE(j.contains("search"));
    const json& x = j["search"];
    // 4 devices: tp 1, 2 and 4 (the 4 heads), dp the rest; each at the engine's max_batch
    // (TensorRT-LLM's 2048), then at the four largest powers of two below the largest batch it held
    CHECK(x["splits"] == 3);
    size_t plans = 0;
    for (const char* own : {"tp1_dp4_b2048", "tp2_dp2_b2048", "tp4_dp1_b2048"}) {
        const std::vector<int64_t> limits = limits_below(out, own);
        CHECK(limits.size() <= 4);
        for (int64_t b : limits) CHECK(std::filesystem::exists(out + "/search/" + std::string(own).substr(0, 9) + std::to_string(b) + "/last_run.json"));
        plans += 1 + limits.size();
    }
    CHECK(plans > 3);  // some split's batches grew past 1
    // then the best two with the token budget at 128 (where that could bind) and 512 and chunked
    // prefill on (where 256 held work back; prompts of 64 fit 128: all are served), with 1 and 2
    // prefill replicas and static batching where the TTFT objective was missed, and on from any
    // that beat them, each a folder named by what departs from the engine's own
    const json& top = x["top"];
    const SettingsPlans sp = settings_plans(out, x, 256, {true, false});
    CHECK(sp.ran == sp.expected);
    CHECK(x["plans_pruned"] == sp.pruned);
    auto has = [](const std::string& id, const char* mark) { return id.find(mark) != std::string::npos; };
    for (const json& row : top) {
        const std::string id = row["id"];
        CHECK(std::filesystem::exists(out + "/search/" + id + "/last_run.json"));
        CHECK(row["max_num_tokens"] == (has(id, "_t128") ? 128 : has(id, "_t512") ? 512 : has(id, "_t1024") ? 1024 : 256));
        CHECK(row["chunked_prefill"] == has(id, "_chunked"));
        CHECK(row["scheduler"] == (has(id, "_max_utilization") ? "max_utilization" : "guaranteed_no_evict"));
        CHECK(row["policy"] == (has(id, "_static") ? "static" : "continuous"));
        CHECK(row["prefill_replicas"] == (has(id, "_p1") ? 1 : has(id, "_p2") ? 2 : 0));
    }
    plans += sp.ran.size();
    CHECK(x["plans_enumerated"] == plans);
    CHECK(x["plans_evaluated"] == plans);
    REQUIRE(top.size() == plans);
    for (size_t i = 1; i < top.size(); ++i) {  // ranked by goodput, then output tokens/s
        const double a = top[i - 1]["goodput_requests_per_s"], b = top[i]["goodput_requests_per_s"];
        CHECK(a >= b);
        if (a == b) CHECK(top[i - 1]["output_tokens_per_s"].get<double>() >= top[i]["output_tokens_per_s"].get<double>());
    }
    // the best split's own run is the job's result, and its figures are the search's
    CHECK(j["parallelism"]["tp"] == x["best"]["parallelism"]["tp"]);
    CHECK(j["serving"]["output_tokens_per_s"].get<double>() == x["best"]["output_tokens_per_s"].get<double>());
    CHECK(j["serving"]["goodput_requests_per_s"].get<double>() == x["best"]["goodput_requests_per_s"].get<double>());
    CHECK(j["serving"]["engine"]["max_batch"] == x["best"]["max_batch"]);
    CHECK(j["serving"]["engine"]["max_num_tokens"] == x["best"]["max_num_tokens"]);
    CHECK(j["serving"]["engine"]["chunked_prefill"] == x["best"]["chunked_prefill"]);
    CHECK(j["serving"]["engine"]["scheduler"] == x["best"]["scheduler"]);
    CHECK(j["serving"]["engine"]["policy"] == x["best"]["policy"]);
    CHECK((j["serving"].contains("disaggregation") ? j["serving"]["disaggregation"]["prefill_replicas"].get<int64_t>() : 0) ==
          x["best"]["prefill_replicas"]);
    CHECK(x["job_plan"]["id"] == "tp1_dp4_b2048");
    CHECK(x["job_plan"]["max_batch"] == 2048);
    CHECK(undeclared_numbers(j, archsim::MetricScope::Job) == std::vector<std::string>{});
}

TEST_CASE("run --serving sets an engine setting of a serving job and a bad one is one line with exit code 2", "[e2e][serving][bad_input]") {
    const std::string out = temp_dir("serving_set");
    const std::string y = serve_yaml("engine", "{ arrival_rate_per_s: 40, requests: 16, max_num_tokens: 256 }");
    const CliResult r = run_archsim("run " + y + "#engine --target " + kH100 + " --out " + out + " --quiet --serving max_batch=4 --serving policy=static");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(slurp(out + "/last_run.json"));
    CHECK(j["serving"]["engine"]["max_batch"] == 4);
    CHECK(j["serving"]["engine"]["policy"] == "static");
    for (const auto& [arg, says] : std::vector<std::pair<std::string, std::string>>{{"max_batch=0", "--serving max_batch=0: must be an integer >= 1"},
                                                                                     {"batch=4", "--serving batch=4: unknown key"},
                                                                                     {"scheduler=fifo", "must be one of guaranteed_no_evict, max_utilization"}}) {
        INFO(arg);
        const CliResult bad = run_archsim("run " + y + "#engine --target " + kH100 + " --out " + out + " --quiet --serving " + arg);
        CHECK(bad.exit_code == 2);
        CHECK(bad.err.find(says) != std::string::npos);
        CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
    }
}

TEST_CASE("the serving search tries the other scheduler only where the KV cache held requests back", "[e2e][serving][search]") {
    const std::string out = temp_dir("serving_search_kv");
    // room for one request at a time (209 tokens of KV cache, 2 blocks of 64 each): the queue's
    // head waits for blocks; the token budget (256) never binds with one request in flight
    const std::string y = serve_yaml("kvbound", "{ arrival_rate_per_s: 400, requests: 24, max_num_tokens: 256, kv_cache_fraction: 0.00001 }", 1,
                                     "tensorrt-llm", "synthetic", "best");
    const json j = run_serving(y, "kvbound", out);
    const json& x = j["search"];
    const json own = json::parse(slurp(out + "/search/tp1_dp1_b2048/last_run.json"))["serving"];
    REQUIRE(own["kv_limited_iterations"].get<int64_t>() > 0);
    CHECK(own["budget_limited_iterations"] == 0);
    const SettingsPlans sp = settings_plans(out, x, 256);
    CHECK(sp.ran == sp.expected);
    CHECK(sp.ran == std::vector<std::string>{"tp1_dp1_b2048 t256 whole max_utilization continuous p0"});
    // the budget halved and doubled, chunked prefill, the policy: none could bind (no objective),
    // and the same again from the max_utilization run if it climbed there
    CHECK(x["plans_pruned"] == sp.pruned);
    CHECK(sp.pruned >= 4);
    for (const json& row : x["top"])
        CHECK(row["scheduler"] == (row["id"] == "tp1_dp1_b2048_max_utilization" ? "max_utilization" : "guaranteed_no_evict"));
    CHECK(j["serving"]["engine"]["scheduler"] == x["best"]["scheduler"]);
}

TEST_CASE("the serving search tries prefill/decode disaggregation and static batching where a TPOT objective was missed, and climbs on from a winner",
          "[e2e][serving][search]") {
    const std::string out = temp_dir("serving_search_disagg");
    // 4 devices and an objective of 1 ns per output token that no plan meets: every leader missed
    // it, so each is also run with 1 and 2 of its dp replicas (where dp >= 2) running prompts only
    // and with static batching
    const std::string y = serve_yaml("disagg", "{ arrival_rate_per_s: 400, requests: 48, max_num_tokens: 256, slo_tpot_ms: 0.000001 }", 4,
                                     "tensorrt-llm", "synthetic", "best");
    const json j = run_serving(y, "disagg", out);
    const json& x = j["search"];
    const SettingsPlans sp = settings_plans(out, x, 256, {false, true});
    CHECK(sp.ran == sp.expected);
    CHECK(x["plans_pruned"] == sp.pruned);
    REQUIRE(x["expanded"].size() >= 2);
    int disaggregated = 0, static_runs = 0;
    for (const json& row : x["top"]) {
        const std::string id = row["id"];
        const json sv = json::parse(slurp(out + "/search/" + id + "/last_run.json"))["serving"];
        CHECK(sv["slo_attainment"] == 0.0);
        CHECK(sv["engine"]["policy"] == row["policy"]);
        const int64_t p = row["prefill_replicas"], dp = row["parallelism"]["dp"];
        CHECK(sv.contains("disaggregation") == (p > 0));
        if (p > 0) {  // its dp replicas split into p for prompts and the rest for decodes
            ++disaggregated;
            CHECK(sv["disaggregation"]["prefill_replicas"] == p);
            CHECK(sv["disaggregation"]["decode_replicas"] == dp - p);
            CHECK(id.find("_p" + std::to_string(p)) != std::string::npos);
        }
        static_runs += row["policy"] == "static";
    }
    // every plan misses: ranked by output tokens/s, the leaders of the batch round are expanded
    // (each with static batching, and those with dp >= 2 disaggregated too), and a variant that
    // beat every plan before it is expanded in turn
    CHECK(static_runs >= 1);
    bool leader_dp2 = false;
    for (size_t k = 0; k < 2; ++k) leader_dp2 |= std::stoll(x["expanded"][k].get<std::string>().substr(x["expanded"][k].get<std::string>().find("_dp") + 3)) >= 2;
    CHECK(disaggregated >= (leader_dp2 ? 1 : 0));
    for (size_t k = 2; k < x["expanded"].size(); ++k) {
        const std::string id = x["expanded"][k];
        bool departs = false;  // a variant: it departs from the engine's settings
        for (const char* mark : {"_t", "_p", "_static", "_chunked", "_max_utilization"}) departs |= id.find(mark) != std::string::npos;
        CHECK(departs);
    }
    CHECK(x["expanded"].size() <= 2 + 3);
    CHECK(j["serving"]["engine"]["policy"] == x["best"]["policy"]);
    const CliResult bad = run_archsim("run " + y + "#disagg --target " + kH100 + " --out " + out + "/bad --quiet --search off --serving prefill_replicas=4");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("prefill_replicas = 4") != std::string::npos);
    CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
}

TEST_CASE("the serving search climbs on from a variant that beats every plan before it, one setting at a time", "[e2e][serving][search]") {
    const std::string out = temp_dir("serving_search_climb");
    // an overload (2,000 requests/s) under a token budget of 80 that holds work back (a prompt of
    // 64 leaves room for 16 decodes): twice the budget serves more, and so does twice that
    const std::string y = serve_yaml("climb", "{ arrival_rate_per_s: 2000, requests: 64, max_num_tokens: 80 }", 1, "tensorrt-llm", "synthetic", "best");
    const json j = run_serving(y, "climb", out);
    const json& x = j["search"];
    const SettingsPlans sp = settings_plans(out, x, 80);
    CHECK(sp.ran == sp.expected);
    CHECK(x["plans_pruned"] == sp.pruned);
    const json& expanded = x["expanded"];
    REQUIRE(expanded.size() > 2);  // it climbed
    CHECK(expanded.size() <= 2 + 3);
    std::map<std::string, double> tokens_per_s;
    for (const json& row : x["top"]) tokens_per_s[row["id"]] = row["output_tokens_per_s"];
    for (size_t k = 2; k < expanded.size(); ++k) {  // each climbed to a plan that served more than the one before
        INFO(expanded[k - 1] << " -> " << expanded[k]);
        CHECK(tokens_per_s.at(expanded[k]) >= tokens_per_s.at(expanded[k - 1]));
        CHECK(tokens_per_s.at(expanded[k]) >= tokens_per_s.at(expanded[0]));
    }
    CHECK(expanded[2].get<std::string>().find("_t160") != std::string::npos);  // the budget doubled from a leader
    CHECK(x["best"]["max_num_tokens"].get<int64_t>() >= 160);
    CHECK(j["serving"]["engine"]["max_num_tokens"] == x["best"]["max_num_tokens"]);
}
