#include "tools/archsim/commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "arch/cluster/cluster_config.h"
#include "arch/common/registry.h"
#include "sim/api/llm_serving.h"
#include "sim/api/training_report.h"
#include "sim/base/error.h"
#include "sim/base/params.h"
#include "tools/archsim/run_print.h"
#include "traces/display_units.h"
#include "traces/metrics_report.h"
#include "workloads/graph_report.h"
#include "workloads/lowering/lower.h"

namespace archsim::cli {

namespace fs = std::filesystem;

/// Prints the warnings of an import or a run to stderr, one line each.
static void print_warnings(const std::vector<std::string>& warnings) {
    for (const auto& w : warnings) std::fprintf(stderr, "archsim: warning: %s\n", w.c_str());
}

static std::string shapes(const OpGraph& g, const std::vector<int32_t>& ids) {
    std::string s;
    for (auto t : ids)
        if (t >= 0) s += (s.empty() ? "" : ",") + shape_string(g.tensors()[t].shape);
    return s;
}

/// Where a kernel runs, for `graph --runtime`: "" (the machine's own path), "blas" with its
/// thread count when set, or "reference" (the framework's scalar kernel).
static std::string path_text(const Operator& k) {
    switch (k.path) {
        case KernelPath::Blas: return k.threads > 0 ? fmt::format("blas x{}", k.threads) : "blas";
        case KernelPath::Reference: return "reference";
        default: return "";
    }
}

/// The kernels of `g` lowered with runtime `name` (at fp32, the precision of an imported graph):
/// per kernel its pattern, where it runs (path_text), MACs, bytes at its boundary and the
/// operators it runs.
static int print_plan(const OpGraph& g, const std::string& name, ReportFormat f) {
    const RuntimeProfile rt = load_runtime(name, runtimes_dir());
    if (rt.literal()) throw UserError("--runtime " + name, "runs the graph as imported: list it without --runtime");
    const OpGraph plan = lower(g, rt);
    if (f == ReportFormat::Json) {
        nlohmann::ordered_json j;
        j["runtime"] = rt.name;
        j["kernels"] = nlohmann::json::array();
        for (int32_t i : plan.topo_order()) {
            const auto& k = plan.ops()[static_cast<size_t>(i)];
            j["kernels"].push_back({{"name", k.name}, {"pattern", k.op_type}, {"class", to_string(k.cost.cls)}, {"macs", k.cost.macs},
                                    {"flops", k.cost.flops}, {"bytes", k.cost.bytes_read + k.cost.bytes_written}, {"path", path_text(k)}, {"members", k.members}});
        }
        std::fputs((j.dump(2) + "\n").c_str(), stdout);
        return 0;
    }
    int64_t max_bytes = 0;
    for (const auto& k : plan.ops()) max_bytes = std::max(max_bytes, k.cost.bytes_read + k.cost.bytes_written);
    const DisplayUnit bu = count_unit(static_cast<double>(max_bytes), "B");
    std::string out = fmt::format("{:<40} {:<28} {:<9} {:>15} {:>10}  {}\n", "kernel", "pattern", "path", "MACs", "bytes_" + bu.suffix,
                                  "operators");
    size_t launched = 0, off_machine = 0;
    for (int32_t i : plan.topo_order()) {
        const auto& k = plan.ops()[static_cast<size_t>(i)];
        if (k.cost.cls == OpClass::ShapeOnly) continue;  // views: no kernel
        ++launched;
        std::string members;
        for (const auto& m : k.members) members += (members.empty() ? "" : " ") + m;
        off_machine += k.path != KernelPath::Machine;
        out += fmt::format("{:<40} {:<28} {:<9} {:>15} {:>10}  {}\n", cut_middle(k.name, 40), cut_middle(k.op_type, 28), path_text(k),
                           grouped(k.cost.macs), in_unit(double(k.cost.bytes_read + k.cost.bytes_written), bu), members);
    }
    out += fmt::format("\n{} under {}: {} kernels for {} operators ({} on the BLAS or a reference kernel), {} MACs (as the graph's {})\n",
                       g.model_name(), rt.name, grouped(static_cast<int64_t>(launched)), grouped(static_cast<int64_t>(g.ops().size())),
                       off_machine, grouped(plan.total_macs()), grouped(g.total_macs()));
    std::fputs(out.c_str(), stdout);
    return 0;
}

int cmd_graph(const WorkloadArgs& w, const std::string& format) {
    ImportResult r = load_run_workload(w);
    print_warnings(r.warnings);
    const OpGraph& g = r.graph;
    if (!w.runtime.empty()) return print_plan(g, w.runtime, parse_report_format(format));
    int64_t bytes = 0;
    for (const auto& o : g.ops()) bytes += o.cost.bytes_read + o.cost.bytes_written;
    const ReportFormat f = parse_report_format(format);
    if (f == ReportFormat::Json) {
        std::fputs(graph_report_json(r).c_str(), stdout);
        return 0;
    }
    if (f == ReportFormat::Csv) {
        std::fputs("name,op_type,class,inputs,outputs,macs,flops,params,bytes,arithmetic_intensity\n", stdout);
        for (int32_t i : g.topo_order()) {
            const auto& o = g.ops()[i];
            std::fputs(fmt::format("{},{},{},{},{},{},{},{},{},{:.4f}\n", o.name, o.op_type, to_string(o.cost.cls),
                                   shapes(g, o.inputs), shapes(g, o.outputs), o.cost.macs, o.cost.flops, o.cost.params,
                                   o.cost.bytes_read + o.cost.bytes_written, o.cost.arithmetic_intensity())
                           .c_str(),
                       stdout);
        }
        std::fputs(fmt::format("TOTAL,,,,,{},{},{},{},\n", g.total_macs(), g.total_flops(), g.total_params(), bytes).c_str(),
                   stdout);
        return 0;
    }
    // the units policy (docs/units.md): counts as grouped integers, one engineering unit for the
    // bytes column, names cut in the middle so that both ends stay
    int64_t max_bytes = 0;
    for (const auto& o : g.ops()) max_bytes = std::max(max_bytes, o.cost.bytes_read + o.cost.bytes_written);
    const DisplayUnit bu = count_unit(static_cast<double>(max_bytes), "B");
    std::string out = fmt::format("{:<44} {:<16} {:<30} {:<18} {:>15} {:>11} {:>10} {:>8}\n", "operator", "op_type", "inputs", "outputs",
                                  "MACs", "params", "bytes_" + bu.suffix, "FLOP/B");
    for (int32_t i : g.topo_order()) {
        const auto& o = g.ops()[i];
        out += fmt::format("{:<44} {:<16} {:<30} {:<18} {:>15} {:>11} {:>10} {:>8.2f}\n", cut_middle(o.name, 44), cut_middle(o.op_type, 16),
                           cut_middle(shapes(g, o.inputs), 30), cut_middle(shapes(g, o.outputs), 18), grouped(o.cost.macs),
                           grouped(o.cost.params), in_unit(double(o.cost.bytes_read + o.cost.bytes_written), bu),
                           o.cost.arithmetic_intensity());
    }
    out += fmt::format("\n{}: {} operators ({} folded away), {} MACs ({}), {} FLOPs, {} params, {} moved\n", g.model_name(),
                       grouped(static_cast<int64_t>(g.ops().size())), r.folded_nodes, grouped(g.total_macs()),
                       with_unit(double(g.total_macs()), "MAC"), grouped(g.total_flops()), grouped(g.total_params()),
                       with_unit(double(bytes), "B"));
    std::fputs(out.c_str(), stdout);
    return 0;
}

int cmd_run(const WorkloadArgs& w, const std::string& arch, const std::string& out_dir, const std::string& precision,
            const std::vector<std::string>& sets, const std::string& format, uint64_t max_events, const std::string& max_sim_time,
            const std::string& detail, bool reference, bool quiet, const std::string& mapper) {
    const ReportFormat f = parse_report_format(format);
    parse_trace_detail(detail, "--detail");  // a bad --detail fails before anything runs
    if (is_llm_workload(w.model)) {
        WorkloadArgs t = w;
        t.model = llm_training_workload(w.model, w.workload_sets, t.train);
        if (t.train)  // --train, or an entry with generate = 0: one training step of NAME@train
            return cmd_run(t, arch, out_dir, precision, sets, format, max_events, max_sim_time, detail, reference, quiet, mapper);
        // serving: each phase is a run of its own, the runtime goes with it
        std::vector<std::string> phase_sets = sets;
        if (!w.runtime.empty()) phase_sets.push_back("runtime=" + w.runtime);
        auto note = [](const std::string& x) { std::fprintf(stderr, "archsim: %s\n", x.c_str()); };
        print_llm_serving(run_llm_serving(w, arch, out_dir, precision, phase_sets, detail, reference, mapper, note), format, out_dir);
        return 0;
    }
    RunRequest req{w, arch, out_dir, precision, sets, max_events, max_sim_time, detail, reference, quiet, {}, mapper};
    req.warn = [](const std::string& x) { std::fprintf(stderr, "archsim: warning: %s\n", x.c_str()); };
    const RunOutcome run = run_model(req);
    const SimulationResult& sim = run.sim;
    if (!sim.stopped_by.empty()) {
        std::fprintf(stderr, "archsim: error: %s: the run stopped: %s; the trace is kept, marked incomplete, and no metrics.json was written\n",
                     run.trace_path.c_str(), sim.stopped_by.c_str());
        return 4;
    }
    std::fputs(f == ReportFormat::Json ? run.metrics_json.c_str() : render_metrics(sim.metrics, f).c_str(), stdout);
    if (!run.training.is_null() && f == ReportFormat::Table) std::fputs(training_text(run.training).c_str(), stdout);
    const std::string units = sim.units_replayed ? ", " + std::to_string(sim.units_replayed) + " loop units replayed" : "";
    std::fprintf(stderr, "archsim: simulated %.6f ms in %.3f s wall, %llu events (%.2f M events/s), %llu kernels replayed of %llu%s; wrote %s and %s\n",
                 sim.simulated_ps * 1e-9, sim.wall_s, static_cast<unsigned long long>(sim.events),
                 sim.wall_s > 0 ? sim.events / sim.wall_s * 1e-6 : 0.0, static_cast<unsigned long long>(sim.kernels_replayed),
                 static_cast<unsigned long long>(sim.kernels_replayed + sim.kernels_recorded), units.c_str(), run.trace_path.c_str(),
                 run.metrics_path.c_str());
    return 0;
}

int cmd_run_job(JobRunArgs args, const std::string& format) {
    if (format != "table" && format != "json")
        throw UserError("--format " + format, "a job reports as table or json (each device run's metrics.json is under OUT/devices/)");
    args.warn = [](const std::string& x) { std::fprintf(stderr, "archsim: warning: %s\n", x.c_str()); };
    args.note = [](const std::string& x) { std::fprintf(stderr, "archsim: %s\n", x.c_str()); };
    print_job(run_job(args), format, args.out_dir);
    return 0;
}

void apply_format_command(const std::string& targets_file, const std::string& workloads_file, const std::string& workload_name,
                          std::string& model, std::string& target) {
    if (workloads_file.empty() != workload_name.empty())
        throw UserError(workloads_file.empty() ? "--workload " + workload_name : "--workloads " + workloads_file,
                        "--workloads FILE and --workload NAME go together");
    if (!workloads_file.empty()) {
        if (!model.empty()) throw UserError("--workload " + workload_name, "give either MODEL or --workloads FILE --workload NAME, not both");
        model = workloads_file + "#" + workload_name;
    }
    if (!targets_file.empty()) {
        if (target.empty()) throw UserError("--targets " + targets_file, "needs --target NAME (an entry of that file)");
        if (target.find('#') != std::string::npos) throw UserError("--target " + target, "with --targets FILE, --target is an entry's name");
        target = targets_file + "#" + target;
    }
}

int cmd_calibrate(CalibrateArgs a) {
    a.note = [](const std::string& x) { std::fprintf(stderr, "%s%s\n", x.rfind("warning: ", 0) == 0 ? "archsim: " : "", x.c_str()); };
    const CalibrationResult r = run_calibration(a);
    std::fputs(r.markdown.c_str(), stdout);
    std::fflush(stdout);
    if (!r.refused.empty()) throw UserError("--apply", r.refused);
    std::fprintf(stderr, "archsim calibrate: wrote %s/calibration.md and %s/calibration.csv%s\n", a.out_dir.c_str(), a.out_dir.c_str(),
                 r.calibrated_config.empty() ? "" : (" and " + r.calibrated_config).c_str());
    return 0;
}

static const char* type_label(ParamType t) {
    switch (t) {
        case ParamType::Int: return "int";
        case ParamType::Real: return "real";
        case ParamType::Bool: return "bool";
        case ParamType::String: return "string";
    }
    return "?";
}

int cmd_params(const std::string& kind_name, const std::string& format) {
    const MachineKind* kind = find_machine(kind_name);
    if (!kind && kind_name != "cluster" && kind_name != "runtime") {
        std::string known;
        for (const auto& k : machine_kinds()) known += (known.empty() ? "" : ", ") + k;
        throw UserError("params " + kind_name, "unknown machine kind (known: " + known + ", cluster and runtime)");
    }
    // a cluster description (configs/clusters/*.toml) and a runtime profile (configs/runtimes/*.toml)
    // are not machines, but their keys are declared the same way
    const ParamSchema& schema = kind ? kind->schema() : kind_name == "cluster" ? cluster_params().schema() : runtime_params().schema();
    const auto& decls = schema.decls();
    const ParamSet defaults(schema);
    // a derived default shows its value at the kind's other defaults
    auto default_of = [&](const ParamDecl& d) {
        return d.derive ? format_value(ParamValue(defaults.get_real(d.key))) + " (derived)" : format_value(d.default_value);
    };
    auto range = [](const ParamDecl& d) {
        auto num = [&d](double v) {
            return d.type == ParamType::Int ? std::to_string(static_cast<int64_t>(v)) : format_value(ParamValue(v));
        };
        std::string s;
        if (d.min) s += (d.min_exclusive ? "> " : ">= ") + num(*d.min);
        if (d.max) s += (s.empty() ? "" : ", ") + std::string("<= ") + num(*d.max);
        if (!d.choices.empty()) {
            for (const auto& c : d.choices) s += (s.empty() ? "" : "|") + c;
        }
        return s;
    };
    if (format == "md") {  // the table configs/runtimes/README.md quotes (a test checks it is current)
        std::string md = "| key | type | default | meaning |\n|---|---|---|---|\n";
        for (const auto& d : decls)
            md += fmt::format("| `{}` | {}{} | {} | {} |\n", d.key, type_label(d.type), d.unit.empty() ? "" : " (" + d.unit + ")",
                              default_of(d), d.doc);
        std::fputs(md.c_str(), stdout);
        return 0;
    }
    const ReportFormat f = parse_report_format(format);
    if (f == ReportFormat::Json) {
        nlohmann::ordered_json j = nlohmann::json::array();
        for (const auto& d : decls)
            j.push_back({{"key", d.key}, {"type", type_label(d.type)}, {"unit", d.unit},
                         {"default", default_of(d)}, {"range", range(d)}, {"doc", d.doc}});
        std::fputs((j.dump(2) + "\n").c_str(), stdout);
        return 0;
    }
    if (f == ReportFormat::Csv) {
        std::fputs("key,type,unit,default,range,doc\n", stdout);
        for (const auto& d : decls)
            std::fputs(fmt::format("{},{},{},{},\"{}\",\"{}\"\n", d.key, type_label(d.type), d.unit,
                                   default_of(d), range(d), d.doc)
                           .c_str(),
                       stdout);
        return 0;
    }
    std::fputs((kind                      ? fmt::format("kind = \"{}\": {}\n\n", kind->kind, kind->doc)
                : kind_name == "cluster" ? std::string("kind = \"cluster\": a cluster of devices (configs/clusters/*.toml)\n\n")
                                         : std::string("a runtime profile (configs/runtimes/*.toml)\n\n"))
                   .c_str(),
               stdout);
    for (const auto& d : decls)
        std::fputs(fmt::format("{:<30} {:<6} {:<16} default {:<22} {}\n{:<30} {}\n", d.key, type_label(d.type),
                               d.unit.empty() ? "-" : d.unit, default_of(d), range(d), "", d.doc)
                       .c_str(),
                   stdout);
    return 0;
}

int cmd_metrics(const std::string& format) {
    std::fputs(describe_metrics(parse_report_format(format)).c_str(), stdout);
    return 0;
}

}  // namespace archsim::cli
