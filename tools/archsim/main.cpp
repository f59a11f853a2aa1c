// archsim: ONNX model + machine TOML -> SystemC simulation -> HDF5 trace -> latency/energy/traffic.
#include <CLI/CLI.hpp>

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "sim/base/precision.h"
#include "sim/base/error.h"
#include "sim/base/version.h"
#include "sim/engine/machine_setup.h"
#include "tools/archsim/commands.h"
#include "workloads/jobs/llm_job.h"
#include "tools/archsim/report.h"
#include "tools/archsim/sweep.h"
#include "tools/archsim/trace_cmds.h"
#include "workloads/training/training_step.h"

#ifndef ARCHSIM_SOURCE_DIR
#define ARCHSIM_SOURCE_DIR "."
#endif

int main(int argc, char** argv) {
    using namespace archsim;
    // Results go to stdout, progress and warnings to stderr (unbuffered): stdout line-buffered, so
    // under `2>&1` a progress line never lands inside a table ("energy_breaarchsim: simulated...")
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    // A simulation started by `archsim sweep` dies with the sweep (a killed sweep leaves no orphans).
    if (std::getenv("ARCHSIM_DIE_WITH_PARENT")) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1) return 3;
        unsetenv("ARCHSIM_DIE_WITH_PARENT");
    }
    CLI::App app{"archsim: discrete-event architecture simulator for neural networks (SystemC/TLM-2.0)"};
    app.set_version_flag("--version", std::string("archsim ") + version());
    app.require_subcommand(1);

    WorkloadArgs wl;
    std::string format = "table";
    auto add_workload_opts = [&](CLI::App* sub, bool required) {
        auto* m = sub->add_option("model", wl.model, "ONNX model (.onnx) or SCALE-Sim topology (.csv)");
        if (required) m->required();
        sub->add_option("--dim", wl.dims, "Bind a symbolic input dim: NAME=VALUE (repeatable)");
        sub->add_option("--inputs", wl.inputs,
                        "Sample inputs: a directory of input_<i>.pb (an ONNX test data set) or one serialized TensorProto; "
                        "they bind the inputs' dims, and small control inputs (trip counts, conditions, sizes) take their values");
        sub->add_option("--batch", wl.batch, "Set the batch (dim 0 of every model input)")->check(CLI::Range(int64_t(1), int64_t(1) << 40));
        sub->add_option("--runtime", wl.runtime,
                        "Runtime whose lowering to apply: a name in configs/runtimes (tensorrt, xla, torch-frozen, ...) or a "
                        ".toml file; run: overrides the machine's `runtime` key");
        sub->add_flag("--allow-unsupported", wl.allow_unsupported,
                      "Import unknown operators as zero-cost nodes (listed in the report) instead of failing; with --train, "
                      "run operators without a gradient rule forward only");
        sub->add_flag("--train", wl.train, "A training step: forward, loss, backward and the optimizer's update of every weight");
        sub->add_option("--optimizer", wl.optimizer, "With --train: the update rule (default: the workload entry's, else sgd)")
            ->check(CLI::IsMember(optimizer_names()));
        sub->add_option("--loss", wl.loss, "With --train: the loss on the model's output (auto: cross-entropy for class scores, "
                                           "else mean squared error; default: the entry's, else auto)")
            ->check(CLI::IsMember(loss_names()));
        sub->add_option("--recompute", wl.recompute,
                        "With --train: activation recomputation (none; selective: the attention scores, softmax and dropout; "
                        "full: every segment between residual sums runs its forward again before its backward; default: the "
                        "entry's, else none)")
            ->check(CLI::IsMember(recompute_names()));
        sub->add_option("--microbatches", wl.microbatches,
                        "With --train: gradient accumulation, forward and backward on this many microbatches (each --batch "
                        "samples) before one optimizer step (default: the entry's, else 1)")
            ->check(CLI::Range(int64_t(1), int64_t(4096)));
        sub->add_flag("--setup", wl.setup,
                      "With --train: simulate the one-time setup first (parameters initialized, optimizer state zeroed, "
                      "synthetic inputs drawn), reported as its own phase; total.latency_s then covers setup and step, "
                      "training.step_time_s the step");
        sub->add_option("--workload-set", wl.workload_sets,
                        "Set a field of a generated workload (FILE.toml#NAME): KEY=VALUE, e.g. width=1024 or mode=train "
                        "(repeatable)");
        sub->add_option("--format", format, "Output format: table, json or csv")
            ->check(CLI::IsMember({"table", "json", "csv"}));
    };

    auto* graph = app.add_subcommand("graph", "Import a model and print its operators: shapes, MACs, params, bytes, "
                                              "arithmetic intensity");
    add_workload_opts(graph, true);

    const std::string default_model = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx";
    const std::string default_arch = std::string(ARCHSIM_SOURCE_DIR) + "/configs/tpu/tpu_128x128_ws.toml";
    std::string arch = default_arch, out_dir = "out/run", precision;
    std::vector<std::string> sets;
    auto* run = app.add_subcommand("run", "Simulate a model on a machine; write trace.h5 and metrics.json");
    add_workload_opts(run, false);
    run->add_option("--arch", arch, "Machine config: a TOML file, or a bundled config by its name (t256, roofline/host; `archsim configs` lists them)")
        ->capture_default_str();
    run->add_option("--out", out_dir, "Output directory for trace.h5 and metrics.json")->capture_default_str();
    run->add_option("--precision", precision, "Override the operand precision")
        ->check(CLI::IsMember(precision_names()));
    run->add_option("--set", sets, "Override any config key: KEY=VALUE (repeatable)");
    uint64_t run_max_events = 0;
    std::string max_sim_time;
    run->add_option("--max-events", run_max_events, "Stop once the trace holds this many events (0: no limit); the trace is kept, marked incomplete");
    run->add_option("--max-sim-time", max_sim_time, "Stop once this much time is simulated (e.g. 5ms); the trace is kept, marked incomplete");
    std::string detail = "full";
    run->add_option("--detail", detail, "What trace.h5 keeps: full (every event) or kernel (per-operator sums per component and "
                                        "kind; `trace` commands show one span each); metrics are the same at either")
        ->check(CLI::IsMember({"full", "kernel"}))
        ->capture_default_str();
    JobRunArgs job;
    run->add_option("--target", job.target, "A parallel job's hardware target: TARGETS.yaml#NAME or a cluster file (configs/clusters/*.toml); "
                                            "MODEL is then WORKLOADS.yaml#NAME or an llm entry with a parallelism table");
    // the workload format document's own command form (../shared/spec/workload_format.md)
    std::string targets_file, workloads_file, workload_name;
    run->add_option("--targets", targets_file, "The workload format's form: the TARGETS.yaml whose entry --target names");
    run->add_option("--workloads", workloads_file, "The workload format's form: the WORKLOADS.yaml whose entry --workload names");
    run->add_option("--workload", workload_name, "The workload format's form: the entry of --workloads to run (instead of MODEL)");
    run->add_option("--cluster-set", job.cluster_sets, "Override a cluster key of the target: KEY=VALUE (repeatable)");
    auto positive = [](const std::string& v) -> std::string {
        try {
            size_t used = 0;
            if (std::stoll(v, &used) >= 1 && used == v.size()) return "";
        } catch (const std::exception&) {
        }
        return "must be a positive integer, not '" + v + "'";
    };
    run->add_option("--microbatch", job.microbatch, "Job: sequences per microbatch (over runtime_tuning.microbatch)")->check(positive);
    run->add_option("--global-batch", job.global_batch, "Job: sequences per iteration (over global_batch)")->check(positive);
    run->add_option("--cuda-graphs", job.cuda_graphs, "Job: on|off (over runtime_tuning.cuda_graphs)")->check(CLI::IsMember({"on", "off"}));
    run->add_option("--gpudirect-rdma", job.gpudirect_rdma, "Job: on|off (over runtime_tuning.gpudirect_rdma)")->check(CLI::IsMember({"on", "off"}));
    run->add_option("--fabric", job.fabric, "Job: IB|RoCE|Vendor (over runtime_tuning.fabric)")->check(CLI::IsMember({"IB", "RoCE", "Vendor"}));
    run->add_option("--devices-dir", job.devices_dir, "Job: where the device runs go (default OUT/devices; a job's phases share their parent's)");
    run->add_option("--phase", job.phase, "Job: run one phase of its schedule.phases (default: every phase, weighted by duration)");
    run->add_option("--parallel", job.parallel_sets, "Job: set a field of its plan, KEY=VALUE (tp, pp, dp, ep, virtual_stages, microbatch, "
                                                     "global_batch, zero_stage, sequence_parallel, dp_overlap, schedule, recompute; repeatable)");
    run->add_option("--serving", job.serving_sets, "Job: set an engine setting of a serving job, KEY=VALUE (max_batch, max_num_tokens, "
                                                   "policy, scheduler, chunked_prefill, prefill_replicas; repeatable)");
    run->add_option("--search", job.search, "Job: on|off, the plan search of a training job (its parallel plan) or a serving job (its "
                                            "replica split and the engine's settings); default: on for track: best")
        ->check(CLI::IsMember({"on", "off"}));
    run->add_option("--search-plans", job.search_min_plans, "Job search: evaluate at least this many plans")->check(positive)->capture_default_str();
    run->add_option("--search-budget", job.search_budget_s, "Job search: seconds after which it starts no more plans once --search-plans are "
                                                            "evaluated (0: none; the gap to the lowest bound left is reported)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    run->add_option("--virt", job.virt, "Job: bare|sriov (over runtime_tuning.virt)")->check(CLI::IsMember({"bare", "sriov"}));
    bool reference = false, quiet = false;
    std::string mapper = "auto";
    run->add_option("--mapper", mapper, "How each kernel is mapped: auto (the machine's mapping search picks each kernel's "
                                        "schedule where the config leaves it open: the KPU's block order, a TPU config of "
                                        "dataflow \"search\", a CPU config of gemm.blocking \"search\"), search (also where "
                                        "the config names it: a TPU's dataflow and walk, a CPU's analytical blocking) or "
                                        "fixed (every machine's one fixed schedule)")
        ->check(CLI::IsMember({"auto", "search", "fixed"}))
        ->capture_default_str();
    run->add_flag("--allow-over-capacity", wl.allow_over_capacity,
                  "Simulate a training step or a job whose memory per device exceeds the device's capacity (flagged in the "
                  "output) instead of refusing it with exit 2");
    run->add_flag("--quiet", quiet, "No progress: a run that takes over 2 s otherwise shows a bar on a terminal, or a line every 5 s");
    run->add_flag("--reference", reference, "Turn the fast paths off: simulate every kernel (no memoization of repeated kernels) "
                                            "and every DRAM burst as its own transaction (dram.per_burst = true)");

    std::string study_file, study_out = "out/compare";
    int jobs = 0;
    bool force = false;
    auto* compare = app.add_subcommand("compare", "Run a study as `sweep` does (resuming a finished or interrupted one) and "
                                                  "print its table as `report` does");
    compare->add_option("study", study_file, "Study file (configs/studies/*.toml)")->required();
    compare->add_option("--out", study_out, "Output directory (results.csv, results.h5, results.jsonl, points/)")->capture_default_str();
    compare->add_option("--jobs", jobs, "Parallel simulations (default: one per core)");
    compare->add_flag("--force", force, "Rerun points that already have results");

    SweepArgs sw;
    auto* sweep = app.add_subcommand("sweep", "Run every point of a study (models x machines x axes) in parallel, "
                                              "resumable; results.csv and results.h5 in OUT");
    sweep->add_option("study", sw.study, "Study file (configs/studies/*.toml)")->required();
    sweep->add_option("--out", sw.out_dir, "Output directory")->capture_default_str();
    sweep->add_option("--jobs", sw.jobs, "Parallel simulations (default: one per core; under MPI, per worker rank: 1)");
    sweep->add_flag("--list", sw.list, "Print the points (index, id, machine, model, axes) and run nothing");
    sweep->add_flag("--resume", sw.resume, "Continue the sweep in OUT: skip the points it has finished");
    sweep->add_flag("--quiet", sw.quiet, "No progress (a bar on a terminal, a line per point otherwise); the final summary stays");
    sweep->add_option("--traces", sw.traces, "Per-point output kept: none, summary (metrics.json; the default, which the rooflines need) or full (trace.h5 too)")
        ->check(CLI::IsMember({"none", "summary", "full"}))
        ->capture_default_str();

    cli::ReportArgs rep;
    auto* report = app.add_subcommand("report", "Tabulate a sweep's results, its Pareto front (latency vs energy), "
                                                "and write plots and a self-contained report.html; or a serving job's figures and plots");
    report->add_option("dirs", rep.dirs, "Sweeps' --out folders: one study, or several side by side (a study column); or a serving job's --out")
        ->required();
    report->add_option("--out", rep.out_dir, "Where plots/ and report.html go (default: the folder; required for several)");
    report->add_option("--where", rep.where, "Filter: KEY=VALUE, KEY!=VALUE, KEY<NUMBER or KEY>NUMBER (repeatable)");
    report->add_option("--sort", rep.sort, "Column to sort by")->capture_default_str();
    report->add_option("--limit", rep.limit, "Rows each table prints, the first by --sort (the rest are counted)")
        ->check(positive)
        ->capture_default_str();
    report->add_flag("--all", rep.all, "Print every row of each table");
    auto* no_plots = report->add_flag("--no-plots", "Print the tables only");

    auto* trace = app.add_subcommand("trace", "Inspect traces: summary, ops, timeline, export (Perfetto), diff");
    trace->require_subcommand(1);
    std::string trace_file, trace_b, sort_key = "latency", t_from, t_to, t_comp, perfetto;
    std::vector<std::string> op_where;
    uint64_t t_limit = 200, max_events = 0, diff_top = 20;
    auto* t_summary = trace->add_subcommand("summary", "Model, machine, totals, top operators by time and energy, stalls, traffic, utilization");
    t_summary->add_option("trace", trace_file, "trace.h5")->required();
    auto* t_ops = trace->add_subcommand("ops", "One row per operator: timing, compute vs stall, MACs, throughput, intensity, bound");
    t_ops->add_option("trace", trace_file, "trace.h5")->required();
    t_ops->add_option("--sort", sort_key, "latency, energy, macs or stall")->capture_default_str();
    t_ops->add_option("--where", op_where, "Filter: name=, op_type=, op_class= or bound= (repeatable)");
    std::string ops_by = "kernel";
    t_ops->add_option("--by", ops_by, "kernel: one row per kernel the machine ran; operator: one row per source-graph operator, "
                                      "with the kernel it ran in (a lowered run's kernels list their operators)")
        ->check(CLI::IsMember({"kernel", "operator"}))
        ->capture_default_str();
    auto* t_timeline = trace->add_subcommand("timeline", "Events in a time window, as a table");
    t_timeline->add_option("trace", trace_file, "trace.h5")->required();
    t_timeline->add_option("--from", t_from, "Window start (12.5us, 3ms, 400ns, 1000ps; default 0)");
    t_timeline->add_option("--to", t_to, "Window end (default: the end of the run)");
    t_timeline->add_option("--component", t_comp, "Only components whose name starts with this");
    t_timeline->add_option("--limit", t_limit, "Most rows printed")->capture_default_str();
    auto* t_export = trace->add_subcommand("export", "Chrome trace-event JSON for Perfetto UI / chrome://tracing, gzipped");
    t_export->add_option("trace", trace_file, "trace.h5")->required();
    t_export->add_option("--perfetto", perfetto, "Output file (.json.gz)")->required();
    t_export->add_option("--max-events", max_events, "Cap the slices written (0: all); says what it dropped")->capture_default_str();
    auto* t_diff = trace->add_subcommand("diff", "Operator by operator, where the time moved between two traces and why");
    t_diff->add_option("a", trace_file, "trace A")->required();
    t_diff->add_option("b", trace_b, "trace B")->required();
    t_diff->add_option("--top", diff_top, "Operators listed")->capture_default_str();

    CalibrateArgs cal;
    auto* calibrate = app.add_subcommand("calibrate", "Time real oneDNN kernels on this machine, run them through the CPU "
                                                      "model, report the error and recommend efficiency coefficients");
    calibrate->add_option("--arch", cal.arch, "CPU machine config (kind = \"cpu\") describing this machine")->required();
    calibrate->add_option("--scenario", cal.scenario, "Working sets to sweep: l1_fit, l2_fit, l3_fit, dram_spill or all")
        ->check(CLI::IsMember({"l1_fit", "l2_fit", "l3_fit", "dram_spill", "all"}))
        ->capture_default_str();
    calibrate->add_flag("--quick", cal.quick, "Fewer shapes and shorter timing (11 cases, about 25 s on a 2-core VM)");
    calibrate->add_flag("--apply", cal.apply, "Write OUT/<config>.calibrated.toml with the recommended coefficients");
    calibrate->add_option("--out", cal.out_dir, "Output directory (calibration.csv, calibration.md)")->capture_default_str();

    std::string kind;
    auto* params = app.add_subcommand("params", "List the config keys of a machine kind, a cluster or a runtime profile");
    params->add_option("kind", kind, "Machine kind (e.g. tpu), cluster, or runtime")->required();
    params->add_option("--format", format, "Output format: table, json, csv or md (the Markdown table the docs quote)")
        ->check(CLI::IsMember({"table", "json", "csv", "md"}));

    auto* metrics = app.add_subcommand("metrics", "List the declared metrics: scope, name, unit, where they appear, doc");
    metrics->add_option("--format", format, "Output format: table, json or csv")
        ->check(CLI::IsMember({"table", "json", "csv"}));

    auto* configs = app.add_subcommand("configs", "List the bundled machine configs: the names --arch takes, and their files");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {  // one line, exit code 2, like every other bad input
        std::fprintf(stderr, "archsim: error: %s (archsim --help lists the options)\n", e.what());
        return 2;
    }

    try {
        if (*graph) return cli::cmd_graph(wl, format);
        if (*run) {
            cli::apply_format_command(targets_file, workloads_file, workload_name, wl.model, job.target);
            if (wl.model.empty()) {
                wl.model = default_model;
                std::fprintf(stderr, "archsim: no model given, running the bundled %s\n", default_model.c_str());
            }
            int rc = 0;
            if (!job.target.empty() || is_llm_job(wl.model)) {
                job.workload = wl.model, job.out_dir = out_dir, job.device_sets = sets, job.runtime = wl.runtime, job.detail = detail;
                job.precision = precision, job.mapper = mapper;
                job.allow_over_capacity = wl.allow_over_capacity;
                job.quiet = quiet;
                rc = cli::cmd_run_job(job, format);
            } else {
                rc = cli::cmd_run(wl, resolve_machine_file(arch, std::string(ARCHSIM_SOURCE_DIR) + "/configs"), out_dir, precision, sets, format,
                                  run_max_events, max_sim_time, detail, reference, quiet, mapper);
            }
            // every output is written, closed and renamed into place: leave without running the
            // static destructors (tearing down ONNX's schema registry alone is about a tenth of
            // a small run; a sweep starts one run per point), as compilers do (clang -disable-free)
            std::cout.flush();
            std::fflush(nullptr);
            std::_Exit(rc);
        }
        if (*params) return cli::cmd_params(kind, format);
        if (*metrics) return cli::cmd_metrics(format);
        if (*configs) {
            const std::string dir = std::string(ARCHSIM_SOURCE_DIR) + "/configs";
            for (const std::string& n : bundled_machine_names(dir)) std::printf("%-28s %s/%s.toml\n", n.c_str(), dir.c_str(), n.c_str());
            return 0;
        }
        if (*calibrate) return cli::cmd_calibrate(cal);
        if (*sweep) return cli::run_sweep(sw);
        if (*trace) {
            trace_file = cli::resolve_trace_path(trace_file);
            if (!trace_b.empty()) trace_b = cli::resolve_trace_path(trace_b);
        }
        if (*t_summary) return cli::cmd_trace_summary(trace_file);
        if (*t_ops) return cli::cmd_trace_ops(trace_file, sort_key, op_where, ops_by == "operator");
        if (*t_timeline) return cli::cmd_trace_timeline(trace_file, t_from, t_to, t_comp, t_limit);
        if (*t_export) return cli::cmd_trace_export(trace_file, perfetto, max_events);
        if (*t_diff) return cli::cmd_trace_diff(trace_file, trace_b, diff_top);
        if (*report) {
            rep.plots = !*no_plots;
            return cli::cmd_report(rep);
        }
        if (*compare) return cli::cmd_compare(study_file, study_out, jobs, force);
    } catch (const UserError& e) {
        std::fprintf(stderr, "archsim: error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "archsim: internal error: %s\n", e.what());
        return 3;
    }
    return 0;
}
