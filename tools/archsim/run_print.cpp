#include "tools/archsim/run_print.h"

#include <fmt/format.h>

#include <cstdio>

#include "traces/display_units.h"

namespace archsim::cli {

using nlohmann::json;

namespace {

double num(const json& j, const char* key) { return j.at(key).get<double>(); }
std::string text(const json& j, const char* key) { return j.at(key).get<std::string>(); }

/// The line naming the precision and device runtime a job ran at, and where the precision came from.
std::string choice_line(const json& out) {
    const json& m = out.at("model");
    return "  precision            " + text(m, "precision") + " (" + text(m, "precision_from") + "), device runtime " +
           text(out, "device_runtime") + "\n";
}

/// A job's power lines: per device, and the nodes' overhead beside the devices' total.
std::string power_lines(const json& out) {
    const json& o = out.at("node_overhead_power");
    return fmt::format("  power                {} per device; nodes' overhead {} ({} node(s) x {}: host {}, NICs {}; not modeled: {}); "
                       "devices and nodes {}\n",
                       with_unit(num(out, "power_per_device_w"), "W"), with_unit(num(o, "total_w"), "W"), o.at("nodes").get<int64_t>(),
                       with_unit(num(o, "per_node_w"), "W"), with_unit(num(o, "host_w"), "W"), with_unit(num(o, "nics_w"), "W"),
                       text(o, "not_modeled"), with_unit(num(o, "job_with_nodes_w"), "W"));
}

std::string phases_text(const json& out, const std::string& out_dir) {
    const json& phases = out.at("phases");
    std::string s = fmt::format("{} on {}: {} phases over {:g} minutes\n", text(out, "workload"), text(out, "target"), phases.size(),
                                num(out, "duration_minutes"));
    for (const auto& p : phases)
        s += fmt::format("  {:<16} {:6g} min  x{:<5g} {:<12} tokens/s {}  power {} per device\n", text(p, "name"), num(p, "duration_minutes"),
                         num(p, "tokens_scale"), text(p, "request_profile"),
                         p.contains("tokens_per_s") ? fmt::format("{:.1f}", num(p, "tokens_per_s")) : "-",
                         p.contains("power_per_device_w") ? fmt::format("{:.1f} W", num(p, "power_per_device_w")) : "-");
    if (out.contains("tokens_per_s")) s += fmt::format("  weighted by duration: {:.1f} tokens/s\n", num(out, "tokens_per_s"));
    if (out.contains("serving")) {  // the requests of every phase together
        const json& v = out.at("serving");
        s += fmt::format("  all {:.0f} requests:  {:.2f} requests/s", num(v, "requests"), num(v, "achieved_requests_per_s"));
        for (const char* k : {"ttft_s", "tpot_s"})
            s += fmt::format(", {} p50 {} p99 {}", std::string(k).substr(0, 4), with_unit(num(v.at(k), "p50"), "s"), with_unit(num(v.at(k), "p99"), "s"));
        s += "\n";
    }
    return s + fmt::format("  wrote {}/last_run.json (each phase under {}/phases/)\n", out_dir, out_dir);
}

std::string inference_text(const json& out, const std::string& out_dir) {
    const json& p = out.at("parallelism");
    std::string s = fmt::format("{} on {}: {} devices (tp {} x pp {} x dp {}), batch {} per replica, {} prompt + {} generated tokens\n",
                                text(out, "workload"), text(out, "target"), out.at("devices").get<int64_t>(), p.at("tp").get<int64_t>(),
                                p.at("pp").get<int64_t>(), p.at("dp").get<int64_t>(), p.at("batch_per_replica").get<int64_t>(),
                                out.at("prompt_tokens").get<int64_t>(), out.at("generated_tokens").get<int64_t>());
    s += choice_line(out);
    s += fmt::format("  time to first token   {}\n  time per output token {} (tensor-parallel collectives {} a microbatch's token, {:.1f}% of its path)\n",
                     with_unit(num(out, "ttft_s"), "s"), with_unit(num(out, "time_per_output_token_s"), "s"),
                     with_unit(num(out, "tensor_comm_per_token_s"), "s"), 100 * num(out, "tensor_comm_share_of_token"));
    const json& mem = out.at("memory");
    s += fmt::format("  tokens per second     {} (all replicas)\n  memory per device     {} (weights {}, KV cache {})\n",
                     in_unit(num(out, "tokens_per_s"), DisplayUnit{"", 1}), with_unit(num(out, "memory_per_device_bytes"), "B"),
                     with_unit(num(mem, "weights_bytes"), "B"), with_unit(num(mem, "kv_cache_bytes"), "B"));
    return s + power_lines(out) + fmt::format("  wrote {}/last_run.json\n", out_dir);
}

std::string serving_text(const json& out, const std::string& out_dir) {
    const json& s = out.at("serving");
    const json& e = s.at("engine");
    const json& par = out.at("parallelism");
    std::string t = fmt::format("{} on {}: {} requests of {:.0f} + {:.0f} tokens{} at {} requests/s ({}), {} device(s) (tp {} x dp {})\n",
                                text(out, "workload"), text(out, "target"), s.at("requests").get<int64_t>(), num(s, "prompt_tokens"),
                                num(s, "output_tokens"), s.contains("lengths") && text(s.at("lengths"), "kind") != "fixed" ? " on average" : "",
                                s.at("arrival_rate_per_s").dump(), text(s, "arrival"), out.at("devices").get<int64_t>(),
                                par.at("tp").get<int64_t>(), par.at("dp").get<int64_t>());
    t += choice_line(out);
    if (out.contains("search")) {  // the replica split a search chose, and the others it served
        const json& x = out.at("search");
        t += fmt::format("  plan search          {} of {} plans served ({} replica splits, each with several max_batch, then the best with other engine "
                         "settings), {}; by {}\n",
                         x.at("plans_evaluated").get<int64_t>(), x.at("plans_enumerated").get<int64_t>(), x.at("splits").get<int64_t>(),
                         with_unit(num(x, "wall_s"), "s"), text(x, "objective"));
        for (const auto& r : x.at("top"))
            t += fmt::format("    {:<16} {} output tokens/s, goodput {} requests/s, p99 TTFT {}, p99 end to end {}\n", text(r, "id"),
                             in_unit(num(r, "output_tokens_per_s"), DisplayUnit{"", 1}), in_unit(num(r, "goodput_requests_per_s"), DisplayUnit{"", 1}),
                             with_unit(num(r, "ttft_p99_s"), "s"), with_unit(num(r, "e2e_p99_s"), "s"));
    }
    t += fmt::format("  engine               {}: {} batching, {}, at most {} sequences and {} tokens per iteration, KV blocks of {} tokens{}\n",
                     text(e, "profile"), text(e, "policy"), text(e, "scheduler"), e.at("max_batch").get<int64_t>(),
                     e.at("max_num_tokens").get<int64_t>() > 0 ? std::to_string(e.at("max_num_tokens").get<int64_t>()) : std::string("any"),
                     e.at("kv_block_tokens").get<int64_t>(), e.at("chunked_prefill").get<bool>() ? ", chunked prefill" : "");
    t += fmt::format("  achieved             {:.2f} requests/s, {} output tokens/s\n", num(s, "achieved_requests_per_s"),
                     in_unit(num(s, "output_tokens_per_s"), DisplayUnit{"", 1}));
    for (const char* k : {"ttft_s", "tpot_s", "itl_s", "e2e_s"}) {
        const json& x = s.at(k);
        t += fmt::format("  {:<20} mean {}, p50 {}, p90 {}, p99 {}\n", k, with_unit(num(x, "mean"), "s"), with_unit(num(x, "p50"), "s"),
                         with_unit(num(x, "p90"), "s"), with_unit(num(x, "p99"), "s"));
    }
    if (s.contains("goodput_requests_per_s"))
        t += fmt::format("  goodput              {:.2f} requests/s meet the objectives ({:.1f}% of requests)\n", num(s, "goodput_requests_per_s"),
                         100 * num(s, "slo_attainment"));
    t += fmt::format("  KV cache             peak {} of {} tokens; {} preemption(s){}; queue peak {}\n", s.at("peak_kv_tokens").get<int64_t>(),
                     s.at("kv_capacity_tokens").get<int64_t>(), s.at("preemptions").get<int64_t>(),
                     s.value("swaps_out", 0) > 0 ? fmt::format(" ({} by swap, {} of copies)", s.at("swaps_out").get<int64_t>(), with_unit(num(s, "swap_s"), "s"))
                                                 : std::string(),
                     s.at("peak_queue").get<int64_t>());
    if (par.at("tp").get<int64_t>() > 1)
        t += fmt::format("  tensor parallel      collectives {:.1f}% of the iterations' time\n", 100 * num(s, "tensor_comm_share"));
    t += fmt::format("  energy               {} per output token, {} per device on average\n", with_unit(num(out, "energy_per_token_j"), "J"),
                     with_unit(num(out, "power_per_device_w"), "W"));
    return t + fmt::format("  wrote {}/last_run.json ({} device runs under {}/devices)\n", out_dir, s.at("device_runs").get<int64_t>(), out_dir);
}

std::string training_text(const json& out, const std::string& out_dir) {
    const json& p = out.at("parallelism");
    std::string s = fmt::format("{} on {}: {} devices (tp {} x pp {} x dp {}), {} schedule, {} microbatches of {}\n", text(out, "workload"),
                                text(out, "target"), out.at("devices").get<int64_t>(), p.at("tp").get<int64_t>(), p.at("pp").get<int64_t>(),
                                p.at("dp").get<int64_t>(), text(p, "schedule"), p.at("microbatches_per_pipeline").get<int64_t>(),
                                p.at("microbatch").get<int64_t>());
    s += choice_line(out);
    if (out.contains("search")) {  // the plan a search chose, and what it looked at
        const json& x = out.at("search");
        s += fmt::format("  plan search          {} of {} plans evaluated ({} do not fit, {} bounded out, {} left), {} device runs, {}; {}\n",
                         x.at("plans_evaluated").get<int64_t>(), x.at("plans_enumerated").get<int64_t>(), x.at("plans_infeasible").get<int64_t>(),
                         x.at("plans_pruned").get<int64_t>(), x.at("plans_left").get<int64_t>(), x.at("device_runs").get<int64_t>(),
                         with_unit(num(x, "wall_s"), "s"), text(x, "stopped"));
        for (const auto& r : x.at("top"))
            s += fmt::format("    {:<40} step {}  memory {}\n", text(r, "id"), with_unit(num(r, "step_time_s"), "s"),
                             with_unit(num(r, "memory_per_device_bytes"), "B"));
        const json& y = x.at("job_plan");
        s += fmt::format("    the job's own plan {}: {}\n", text(y, "id"),
                         y.contains("step_time_s") ? "step " + with_unit(num(y, "step_time_s"), "s") : text(y, "status"));
    }
    s += fmt::format("  step time            {}\n", with_unit(num(out, "step_time_s"), "s"));
    const bool megatron = text(out.at("model"), "family") == "gpt";
    s += fmt::format("  per-device           {:.1f} TFLOP/s ({}), MFU {:.1f}% (model FLOPs), HFU {:.1f}% (recomputation included)\n",
                     num(out, "tflops_per_device"), megatron ? "Megatron's formula" : "model FLOPs of the device runs", 100 * num(out, "mfu"),
                     100 * num(out, "hfu"));
    const json& b = out.at("breakdown_s");
    s += fmt::format("  split (mean device)  compute {}, exposed communication {}, bubble {}\n", with_unit(num(b, "compute"), "s"),
                     with_unit(num(b, "exposed_communication"), "s"), with_unit(num(b, "bubble"), "s"));
    for (const auto& [k, v] : b.at("exposed_by").items()) s += fmt::format("    exposed {:<14} {}\n", k, with_unit(v.get<double>(), "s"));
    for (const auto& c : out.at("communication"))
        s += fmt::format("  {:<9} {:<14} {:<12} {:<6} x{:<7} {}, {} of it hidden\n", text(c, "scope"), text(c, "collective"), text(c, "algorithm"),
                         text(c, "protocol"), c.at("count").get<int64_t>(), with_unit(num(c, "time_s"), "s"), with_unit(num(c, "hidden_s"), "s"));
    const double most = num(out, "memory_per_device_bytes"), cap = num(out, "memory_capacity_bytes");
    s += fmt::format("  memory per device    {} (peak stage){}\n", with_unit(most, "B"),
                     cap > 0 && most > cap ? fmt::format(": over the device's {}", with_unit(cap, "B")) : "");
    s += fmt::format("  energy               {} per device, {} per job\n", with_unit(num(out, "energy_per_device_j"), "J"),
                     with_unit(num(out, "energy_job_j"), "J"));
    return s + power_lines(out) +
           fmt::format("  wrote {}/last_run.json and {}/trace.h5 (archsim trace summary / export --perfetto)\n", out_dir, out_dir);
}

}  // namespace

void print_llm_serving(const json& j, const std::string& format, const std::string& out_dir) {
    if (format == "json") {
        std::fputs((j.dump(2) + "\n").c_str(), stdout);
        return;
    }
    const json& decode = j.at("decode");
    const int64_t steps = decode.at("steps").get<int64_t>();
    std::string out = fmt::format("{} ({} parameters), batch {}, {} prompt + {} generated tokens, {}\n", text(j, "model"),
                                  with_unit(num(j, "parameters"), ""), j.at("batch").get<int64_t>(), j.at("prompt_tokens").get<int64_t>(),
                                  j.at("generated_tokens").get<int64_t>(), text(j, "precision"));
    out += fmt::format("time to first token    {} (prefill, {})\n", with_unit(num(j.at("prefill"), "latency_s"), "s"),
                       with_unit(num(j.at("prefill"), "energy_j"), "J"));
    out += fmt::format("time per output token  {} (mean of {} decode steps)\n", with_unit(num(j, "time_per_output_token_s"), "s"), steps);
    out += fmt::format("tokens per second      {} (batch x generated over the whole request)\n", in_unit(num(j, "tokens_per_s"), DisplayUnit{"", 1}));
    out += fmt::format("energy per token       {}\n", with_unit(num(j, "energy_per_token_j"), "J"));
    out += "decode step at KV length:";
    if (j.contains("decode_points"))
        for (const auto& p : j.at("decode_points"))
            out += fmt::format("  {}: {}", p.at("kv_length").get<int64_t>(), with_unit(num(p, "latency_s"), "s", 5));
    out += fmt::format("\nwrote {}/llm.json, per-phase traces under {}/prefill and {}/decode_kv*\n", out_dir, out_dir, out_dir);
    std::fputs(out.c_str(), stdout);
}

void print_job(const json& out, const std::string& format, const std::string& out_dir) {
    if (format == "json") {
        std::printf("%s\n", out.dump(2).c_str());
        return;
    }
    const std::string s = out.contains("weighting")                                  ? phases_text(out, out_dir)
                          : out.value("mode", std::string()) == "inference" ? inference_text(out, out_dir)
                          : out.value("mode", std::string()) == "serving"   ? serving_text(out, out_dir)
                                                                               : training_text(out, out_dir);
    std::fputs(s.c_str(), stdout);
}

}  // namespace archsim::cli
