#include "sim/api/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "arch/cpu/cpu_config.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/machine_file.h"
#include "sim/api/calibrate_parts.h"
#include "sim/api/dnnl_measure.h"
#include "sim/api/host_cpu.h"
#include "sim/api/process_pool.h"

namespace archsim {

namespace fs = std::filesystem;

CalibrationResult run_calibration(const CalibrateArgs& a) {
    auto note = [&](const std::string& line) {
        if (a.note) a.note(line);
    };
    static const std::vector<std::string> scenarios = {"l1_fit", "l2_fit", "l3_fit", "dram_spill", "all"};
    if (std::find(scenarios.begin(), scenarios.end(), a.scenario) == scenarios.end())
        throw UserError("--scenario " + a.scenario, "must be one of l1_fit, l2_fit, l3_fit, dram_spill, all");
    if (read_machine_kind(a.arch) != "cpu") throw UserError(a.arch, "calibrate needs a kind = \"cpu\" config");
    ParamSet params(cpu_params().schema());
    params.load_toml_file(a.arch, {"kind"});
    params.set("precision", std::string("fp32"), "calibrate");
    const CpuConfig cfg = make_cpu_config(params);
    // a config measured on another machine: calibrating it here would mix two machines
    const std::string other_machine = host_cpu_mismatch(a.arch, cfg.host_cpu);
    if (!other_machine.empty() && a.apply)
        throw UserError("--apply", other_machine + "; write a config for this machine with tools/cpu-config and calibrate that");
    if (!other_machine.empty()) note("warning: " + other_machine);
    {  // a busy machine: said up front (the measurements below are made to withstand it)
        std::ifstream load("/proc/loadavg");
        double load1 = 0;
        if (load >> load1 && load1 > 0.5)
            note(fmt::format("warning: the machine is busy (load average {:.2f} on {} CPUs): timings are slower and noisier; "
                             "the clock is measured against CPU time and each case is timed again until its repeats agree",
                             load1, cfg.cores));
    }
    const std::string self = self_program();
    fs::create_directories(a.out_dir + "/cases");
    const std::string csv_path = a.out_dir + "/calibration.csv";

    // resume: rows already measured and simulated
    std::map<std::string, Row> done;
    {
        std::ifstream in(csv_path);
        std::string line;
        std::getline(in, line);
        while (std::getline(in, line)) {
            std::stringstream ss(line);
            std::vector<std::string> f;
            for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
            if (f.size() < 10) continue;  // a torn last line from an interrupted run
            Row r;
            r.measured_s = std::stod(f[6]), r.spread_pct = std::stod(f[7]), r.predicted_s = std::stod(f[8]);
            done[f[0]] = r;
        }
    }
    const bool fresh = done.empty();
    std::ofstream csv(csv_path, std::ios::app);
    if (!csv) throw UserError(csv_path, "cannot write");
    if (fresh) csv << "id,scenario,kind,shape,bytes,flop_per_byte,measured_s,spread_pct,predicted_s,error_pct\n";

    const std::vector<Case> cases = make_cases(cfg, a.scenario, a.quick);
    const double min_time = a.quick ? 0.03 : 0.2;
    std::vector<Row> rows;
    for (const Case& c : cases) {
        Row r;
        r.c = c;
        auto it = done.find(c.id());
        if (it != done.end()) {
            r.measured_s = it->second.measured_s, r.spread_pct = it->second.spread_pct, r.predicted_s = it->second.predicted_s;
        } else {
            // timed again while its repeats disagree (a shared machine): the calmest attempt counts
            const Timing t = stable_timing(
                [&] {
                    return c.kind == "matmul" ? time_matmul(c.m, c.n, c.k, int(cfg.cores), min_time, 5)
                                              : time_conv(c.b, c.c, c.h, c.w, c.oc, c.kh, c.kw, int(cfg.cores), min_time, 5);
                },
                kStablePct, kTimingAttempts);
            r.measured_s = t.median_s(), r.spread_pct = t.spread_pct();
            const std::string model = a.out_dir + "/cases/" + c.id() + ".onnx";
            write_case_model(c, model);
            r.predicted_s = simulate_case(self, model, a.arch, {"precision=fp32"}, a.out_dir + "/runs/" + c.id());
            csv << fmt::format("{},{},{},{},{:.0f},{:.3f},{:.6e},{:.2f},{:.6e},{:.2f}\n", c.id(), c.scenario, c.kind, c.shape(),
                               c.bytes(), c.intensity(), r.measured_s, r.spread_pct, r.predicted_s, r.error_pct());
            csv.flush();
        }
        note(fmt::format("  {:<44} measured {:10.3f} us (+-{:4.1f}%)  predicted {:10.3f} us  {:+7.1f}%{}", c.id(), r.measured_s * 1e6,
                         r.spread_pct / 2, r.predicted_s * 1e6, r.error_pct(), r.unstable() ? "  (unstable: not fitted)" : ""));
        rows.push_back(r);
    }

    // compute- vs memory-bound by the machine's ridge point (peak FLOP/s over sustained DRAM B/s)
    const double peak_flops = 2.0 * cfg.mac_rate() * double(cfg.cores) * cfg.clock_mhz * 1e6;
    const double dram_bps = cfg.dram.bandwidth_gbps * 1e9 * cfg.eff_dram;
    const double ridge = peak_flops / dram_bps;
    std::vector<const Row*> all, compute, memory;
    for (const Row& r : rows) {
        all.push_back(&r);
        (r.c.intensity() >= ridge ? compute : memory).push_back(&r);
    }
    // the coefficient a case governs: a compute-bound case efficiency.gemm, a memory-bound one
    // efficiency.dram when it spills the L3, efficiency.cache when it lives in the L2 or L3, and
    // none when it fits the L1 (there the time is mostly core.op_overhead_us)
    enum class Governs { Gemm, Dram, Cache, Nothing };
    auto governs = [&](const Row& r) {
        if (r.c.intensity() >= ridge) return Governs::Gemm;
        if (r.c.scenario == "dram_spill") return Governs::Dram;
        return r.c.scenario != "l1_fit" ? Governs::Cache : Governs::Nothing;
    };
    // Recommendation, fitted by fixed-point iteration because the coefficients interact (a
    // kernel's time is overhead + max(compute, traffic)): the clock is measured (a dependent-add
    // chain on every thread); then, three times, each coefficient is scaled by the median
    // predicted/measured ratio of the cases it governs, and every case is simulated again:
    //   efficiency.gemm  - compute-bound cases (clock x efficiency is what the ratio scales)
    //   efficiency.cache - memory-bound cases resident in the L2 or L3
    //   efficiency.dram  - memory-bound cases that spill the L3 (past 1, the config's DRAM
    //                      bandwidth was an underestimate, as a VM cannot see its DRAM: the
    //                      bandwidth is raised instead)
    //   core.op_overhead_us - plus the median time missed on the L1-resident cases
    const ClockMeasurement clock = measure_clock(int(cfg.cores));
    const bool clock_ok = clock.mhz > 0 && clock.spread_pct <= kClockStablePct;
    const double clock_meas = clock_ok ? clock.mhz : 0;
    const double clock_new = clock_ok ? clock.mhz : cfg.clock_mhz;
    if (clock.mhz > 0 && !clock_ok)
        note(fmt::format("warning: the clock did not settle ({:.0f} MHz, its 5 best of {} rounds {:.1f}% apart): the config's {:.0f} MHz is kept",
                         clock.mhz, clock.rounds, clock.spread_pct, cfg.clock_mhz));
    struct Coeffs { double clock, gemm, cache, dram, dram_bw, overhead; };
    Coeffs cur{cfg.clock_mhz, cfg.eff_gemm, cfg.eff_cache, cfg.eff_dram, cfg.dram.bandwidth_gbps, cfg.op_overhead_us};
    std::vector<double> pred_now, pred_cur;
    for (const Row& r : rows) pred_now.push_back(r.predicted_s);
    pred_cur = pred_now;
    double first_r_compute = 1, first_r_cache = 1, first_r_dram = 1, dram_sustained = 0;
    bool have_cache = false, have_dram = false, dram_above_peak = false;
    constexpr int kIterations = 3;
    for (int it = 0; it < kIterations; ++it) {
        std::vector<double> rc, rk, rd, miss;
        for (size_t i = 0; i < rows.size(); ++i) {
            const Row& r = rows[i];
            if (r.unstable()) continue;  // its measurement never settled: not fitted
            const double ratio = pred_cur[i] / r.measured_s;
            switch (governs(r)) {
                case Governs::Gemm: rc.push_back(ratio); break;
                case Governs::Dram: rd.push_back(ratio); break;
                case Governs::Cache: rk.push_back(ratio); break;
                case Governs::Nothing: break;
            }
            if (r.c.scenario == "l1_fit") miss.push_back((r.measured_s - pred_cur[i]) * 1e6);
        }
        if (it == 0) first_r_compute = median(rc), first_r_cache = median(rk), first_r_dram = median(rd);
        have_cache = !rk.empty(), have_dram = !rd.empty();
        Coeffs next = cur;
        next.clock = clock_new;
        if (!rc.empty()) next.gemm = std::clamp(cur.gemm * median(rc) * cur.clock / clock_new, 0.05, 1.0);
        if (!rk.empty()) next.cache = std::clamp(cur.cache * median(rk), 0.05, 1.0);
        if (!rd.empty()) {
            // the bandwidth the spilling cases sustained; above the config's peak they did not
            // spill on this machine (a larger or shared L3 than the config says): not fitted
            const double sustained = cur.dram * cur.dram_bw * median(rd);
            dram_above_peak = sustained > cfg.dram.bandwidth_gbps;
            if (!dram_above_peak) next.dram = std::clamp(sustained / cfg.dram.bandwidth_gbps, 0.05, 1.0);
            dram_sustained = sustained;
        }
        if (!miss.empty()) next.overhead = std::max(0.0, cur.overhead + median(miss));
        cur = next;
        const std::vector<std::string> sets = {"precision=fp32", fmt::format("clock_mhz={:.0f}", cur.clock),
                                               fmt::format("efficiency.gemm={:.4f}", cur.gemm),
                                               fmt::format("efficiency.cache={:.4f}", cur.cache),
                                               fmt::format("efficiency.dram={:.4f}", cur.dram),
                                               fmt::format("dram.bandwidth_gbps={:.1f}", cur.dram_bw),
                                               fmt::format("core.op_overhead_us={:.3f}", cur.overhead)};
        for (size_t i = 0; i < rows.size(); ++i)
            pred_cur[i] = simulate_case(self, a.out_dir + "/cases/" + rows[i].c.id() + ".onnx", a.arch, sets,
                                        a.out_dir + "/runs_recommended/" + rows[i].c.id());
        note(fmt::format("  fit pass {}: gemm {:.4f} cache {:.4f} dram {:.4f} x {:.1f} GB/s overhead {:.3f} us", it + 1, cur.gemm, cur.cache,
                         cur.dram, cur.dram_bw, cur.overhead));
    }
    const std::vector<double>& pred_rec = pred_cur;
    const double gemm_new = cur.gemm, cache_new = cur.cache, dram_new = cur.dram, overhead_new = cur.overhead;
    // whether the scenario has cases governing `g`, settled or not: a coefficient left unchanged
    // says whether its cases were missing or never settled
    auto cases_of = [&](Governs g) { return std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return governs(r) == g; }); };
    auto subset = [&](const std::vector<const Row*>& sel, const std::vector<double>& pred) {
        std::vector<double> p;
        for (const Row* r : sel) p.push_back(pred[static_cast<size_t>(r - rows.data())]);
        return stats_of(sel, p);
    };

    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    std::string md = fmt::format("# CPU model calibration: {}\n\n", cfg.name);
    md += fmt::format("Machine config `{}`; measured {} with oneDNN fp32 primitives on {} threads{}; scenario `{}`.\n\n", a.arch, date,
                      cfg.cores, a.quick ? " (`--quick`: fewer shapes, 30 ms of repeats)" : " (at least 0.2 s of repeats)", a.scenario);
    md += fmt::format("Ridge point {:.1f} FLOP/byte (peak {:.1f} GFLOP/s over {:.1f} GB/s sustained DRAM); cases at or above it count "
                      "as compute-bound.\n\n",
                      ridge, peak_flops * 1e-9, dram_bps * 1e-9);
    md += "| case | shape | working set | FLOP/B | measured us (spread) | predicted us | error | calibrated us | error |\n"
          "|---|---|---|---|---|---|---|---|---|\n";
    for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        md += fmt::format("| {} | {} | {:.1f} KiB | {:.1f} | {:.2f} ({:.1f}%) | {:.2f} | {:+.1f}% | {:.2f} | {:+.1f}% |\n", r.c.id(),
                          r.c.shape(), r.c.bytes() / 1024, r.c.intensity(), r.measured_s * 1e6, r.spread_pct, r.predicted_s * 1e6,
                          r.error_pct(), pred_rec[i] * 1e6, 100.0 * (pred_rec[i] - r.measured_s) / r.measured_s);
    }
    auto stat_rows = [&](const std::vector<double>& pred) {
        std::string s = "| set | cases | MAPE | R^2 (log10 time) | min error | max error |\n|---|---|---|---|---|---|\n";
        for (auto [name, sel] : {std::pair<const char*, const std::vector<const Row*>*>{"all", &all}, {"compute-bound", &compute},
                                 {"memory-bound", &memory}}) {
            const Stats st = subset(*sel, pred);
            if (st.n == 0) continue;
            s += fmt::format("| {} | {} | {:.1f}% | {:.3f} | {:+.1f}% | {:+.1f}% |\n", name, st.n, st.mape, st.r2_log, st.min_err, st.max_err);
        }
        return s;
    };
    md += fmt::format("\n## Error with the config as given (efficiency.gemm = {:.4f}, efficiency.dram = {:.4f})\n\n", cfg.eff_gemm, cfg.eff_dram);
    md += stat_rows(pred_now);
    md += fmt::format("\n## Recommended coefficients\n\n- `clock_mhz = {:.0f}` ({})\n- `efficiency.gemm = {:.4f}` (fitted on the "
                      "compute-bound cases at the measured clock; first-pass median predicted/measured {:.3f})\n"
                      "- `core.op_overhead_us = {:.3f}` (fitted on the L1-resident cases, where it is most of the time)\n"
                      "- `efficiency.cache = {:.4f}` ({})\n"
                      "- `efficiency.dram = {:.4f}` ({}){}\n\nError with them (every case simulated again; the per-case "
                      "column `calibrated` above; the fit takes three passes of re-simulation):\n\n",
                      clock_new,
                      clock_meas > 0   ? fmt::format("measured: a dependent-add chain on {} threads, the median of the 5 fastest of {} "
                                                     "rounds, {:.1f}% apart", cfg.cores, clock.rounds, clock.spread_pct)
                      : clock.mhz > 0 ? fmt::format("the config's: the measurement did not settle ({:.0f} MHz, the 5 fastest of {} "
                                                     "rounds {:.1f}% apart)", clock.mhz, clock.rounds, clock.spread_pct)
                                       : std::string("not measurable here: the config's"),
                      gemm_new, first_r_compute, overhead_new, cache_new,
                      !have_cache ? std::string(cases_of(Governs::Cache) ? "unchanged: its memory-bound L2/L3-resident cases never settled (not fitted)"
                                                                  : "unchanged: no memory-bound case lives in the L2 or L3 in this scenario")
                                  : fmt::format("fitted on the memory-bound L2/L3-resident cases; first-pass median ratio {:.3f}",
                                                first_r_cache),
                      dram_new,
                      !have_dram ? std::string(cases_of(Governs::Dram) ? "unchanged: its memory-bound L3-spilling cases never settled (not fitted)"
                                                                : "unchanged: no memory-bound case spills the L3 in this scenario")
                      : dram_above_peak
                          ? fmt::format("unchanged: the L3-spilling cases ran at {:.1f} GB/s, above the config's DRAM peak of {:.1f} GB/s, so "
                                        "they did not spill on this machine (its L3 is larger, or shared, than the config says)",
                                        dram_sustained, cfg.dram.bandwidth_gbps)
                          : fmt::format("fitted on the memory-bound L3-spilling cases; first-pass median ratio {:.3f}", first_r_dram),
                      std::string());
    md += stat_rows(pred_rec);
    size_t unstable = 0;
    for (const Row& r : rows) unstable += r.unstable();
    md += fmt::format("\nR^2 is computed on log10 times because the cases span orders of magnitude. The spread is the 10th-90th percentile "
                      "range of the repeats over their median; a case is timed again (up to {} times, the calmest attempt kept) while "
                      "it exceeds {:.0f}%, and one still above {:.0f}% is not fitted ({} of {} here).\n",
                      kTimingAttempts, kStablePct, kUnstablePct, unstable, rows.size());
    // a calibration that does not improve the fit is never applied
    const double mape_before = stats_of(all, pred_now).mape, mape_after = stats_of(all, pred_rec).mape;
    const bool improves = mape_after < mape_before;
    CalibrationResult result;
    if (a.apply && !improves) {
        md += fmt::format("\n`--apply`: nothing written: the recommended coefficients give a MAPE of {:.1f}%, the config as given "
                          "{:.1f}%.\n", mape_after, mape_before);
        result.refused = fmt::format("not applied: the fitted coefficients make the fit worse (MAPE {:.1f}% against {:.1f}% with {} as "
                                     "given); {}/calibration.md has the cases", mape_after, mape_before, a.arch, a.out_dir);
    } else if (a.apply) {
        result.calibrated_config = a.out_dir + "/" + fs::path(a.arch).stem().string() + ".calibrated.toml";
        write_applied(a.arch, result.calibrated_config, {{"", "clock_mhz", fmt::format("{:.0f}", clock_new)},
                                                         {"[core]", "op_overhead_us", fmt::format("{:.3f}", overhead_new)},
                                                         {"[efficiency]", "gemm", fmt::format("{:.4f}", gemm_new)},
                                                         {"[efficiency]", "dram", fmt::format("{:.4f}", dram_new)},
                                                         {"[efficiency]", "cache", fmt::format("{:.4f}", cache_new)}},
                      fmt::format("archsim calibrate, {}", date));
        md += fmt::format("\n`--apply` wrote `{}`.\n", result.calibrated_config);
    }
    write_file_atomically(a.out_dir + "/calibration.md", md);
    result.markdown = md;
    return result;
}

}  // namespace archsim
