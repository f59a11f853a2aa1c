#include "tools/archsim/commands.h"

#include "arch/cluster/cluster_config.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "traces/display_units.h"
#include "sim/base/precision.h"
#include "sim/base/units.h"
#include "sim/base/machine_file.h"
#include "sim/base/params.h"
#include "sim/engine/machine_setup.h"
#include "sim/engine/run_choice.h"
#include "arch/common/registry.h"
#include "sim/engine/simulate.h"
#include "traces/metrics_report.h"
#include "traces/reducer.h"
#include "traces/trace_reader.h"
#include "tools/archsim/host_cpu.h"
#include "tools/archsim/llm_run.h"
#include "tools/archsim/training_report.h"
#include "workloads/generators/workload_file.h"
#include "workloads/graph_report.h"
#include "workloads/load_workload.h"
#include "workloads/lowering/lower.h"
#include "workloads/training/memory_footprint.h"
#include "workloads/onnx/input_data.h"
#include "workloads/training/training_step.h"

namespace archsim::cli {

namespace fs = std::filesystem;

/// The workload of `w`: its graph as imported, or with --train its training step (whose
/// composition goes to `step`, its graph moved into the result).
static ImportResult load(const WorkloadArgs& w, std::optional<TrainingStep>* step = nullptr, bool mixed_precision = false) {
    ImportOptions opt;
    for (const auto& d : w.dims) parse_dim_binding(d, opt.dims);
    if (w.batch > 0) opt.batch = w.batch;
    opt.allow_unsupported = w.allow_unsupported;
    opt.workload_sets = w.workload_sets;
    if (!w.inputs.empty()) opt.input_files = input_data_files(w.inputs);
    const WorkloadRef ref = parse_workload_ref(w.model);
    // a generated workload may ask for training itself (mode = "train"); a flag given wins
    const WorkloadRunFields entry = ref.generated() ? read_workload_run_fields(ref.file, ref.entry, w.workload_sets) : WorkloadRunFields{};
    ImportResult r = load_workload(w.model, opt);
    if (w.train || entry.train) {
        auto pick = [](const std::string& flag, const std::string& field, const char* def) {
            return !flag.empty() ? flag : !field.empty() ? field : std::string(def);
        };
        TrainingOptions t;
        t.loss = pick(w.loss, entry.loss, "auto");
        t.optimizer = pick(w.optimizer, entry.optimizer, "sgd");
        t.allow_unsupported = w.allow_unsupported;
        t.recompute = pick(w.recompute, entry.recompute, "none");
        t.microbatches = w.microbatches > 0 ? w.microbatches : entry.microbatches > 0 ? entry.microbatches : 1;
        t.mixed_precision = mixed_precision;
        t.setup = w.setup || entry.setup.value_or(false);
        TrainingStep s = make_training_step(r.graph, t);
        for (const auto& name : s.no_gradient)
            r.warnings.push_back("operator '" + name + "' has no gradient rule: it runs forward only, no gradient flows through it");
        r.graph = std::move(s.graph);
        if (step) *step = std::move(s);
    }
    for (const auto& warn : r.warnings) std::fprintf(stderr, "archsim: warning: %s\n", warn.c_str());
    return r;
}

static std::string shapes(const OpGraph& g, const std::vector<int32_t>& ids) {
    std::string s;
    for (auto t : ids)
        if (t >= 0) s += (s.empty() ? "" : ",") + shape_string(g.tensors()[t].shape);
    return s;
}

std::string runtimes_dir() { return std::string(ARCHSIM_SOURCE_DIR) + "/configs/runtimes"; }

std::string over_capacity_reason(double needed_bytes, const std::vector<std::pair<std::string, double>>& categories,
                                 double capacity_bytes, const std::string& capacity_key) {
    std::string parts;
    for (const auto& [name, bytes] : categories)
        if (bytes > 0) parts += (parts.empty() ? "" : ", ") + name + " " + with_unit(bytes, "B");
    return std::string(kDoesNotFit) + ": needs " + with_unit(needed_bytes, "B") + " per device (" + parts + ") against the device's " +
           with_unit(capacity_bytes, "B") + " (" + capacity_key + "); --allow-over-capacity simulates it anyway";
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
    ImportResult r = load(w);
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
            const std::string& detail, bool reference, bool quiet) {
    const ReportFormat f = parse_report_format(format);
    const TraceDetail trace_detail = parse_trace_detail(detail, "--detail");
    if (is_llm_workload(w.model)) {
        WorkloadArgs t = w;
        t.model = llm_training_workload(w.model, w.workload_sets, t.train);
        if (t.train)  // --train, or an entry with generate = 0: one training step of NAME@train
            return cmd_run(t, arch, out_dir, precision, sets, format, max_events, max_sim_time, detail, reference, quiet);
        // serving: each phase is a run of its own, the runtime goes with it
        std::vector<std::string> phase_sets = sets;
        if (!w.runtime.empty()) phase_sets.push_back("runtime=" + w.runtime);
        return cmd_run_llm(w, arch, out_dir, precision, phase_sets, format, detail, reference);
    }
    {  // an earlier run's result in the folder must not look like this one's, whatever happens next
        std::error_code ec;
        fs::remove(fs::path(out_dir) / "metrics.json", ec);
    }
    // Config first: it is cheap, and a typo there should not wait for a big import.
    std::vector<KeyOverride> overrides = set_overrides(sets);
    const MachineSetup base = load_machine(arch, "", overrides);
    if (base.kind->schema().find("host.cpu"))
        if (const std::string warn = host_cpu_mismatch(arch, base.params.get_string("host.cpu")); !warn.empty())
            std::fprintf(stderr, "archsim: warning: %s\n", warn.c_str());
    // precision and runtime by the one rule (run_choice.h): command line, workload, machine
    const WorkloadRef ref = parse_workload_ref(w.model);
    const WorkloadRunFields entry = ref.generated() ? read_workload_run_fields(ref.file, ref.entry, w.workload_sets) : WorkloadRunFields{};
    const bool training_step = w.train || entry.train;
    const RunChoice precision_choice = choose_precision(precision, overrides, entry.precision, ref.name(), base, training_step);
    const RunChoice runtime_choice = choose_runtime(w.runtime, overrides, base, training_step);
    if (const std::string warn = training_precision_warning(precision_choice, training_step); !warn.empty())
        std::fprintf(stderr, "archsim: warning: %s\n", warn.c_str());
    overrides.push_back({"runtime=" + runtime_choice.value, runtime_choice.from});
    if (reference && base.kind->schema().find("dram.per_burst")) overrides.push_back({"dram.per_burst=true", "--reference"});
    const MachineSetup as_given = load_machine(arch, precision_choice.value, overrides);
    const RuntimeProfile runtime = [&] {
        try {
            return load_runtime(as_given.params.get_string("runtime"), runtimes_dir());
        } catch (const UserError& e) {
            if (runtime_choice.from != "machine config") throw;
            throw UserError(arch, e.what());  // the machine file's own `runtime` key
        }
    }();
    std::optional<MachineSetup> stacked;
    if (!runtime.device_sets.empty() && runtime.device_kind == as_given.kind->kind) {
        // the software stack's device keys first, the user's --set over them
        std::vector<KeyOverride> sets;
        for (const auto& a : runtime.device_sets) sets.push_back({a, runtime.source + ": device.sets"});
        sets.insert(sets.end(), overrides.begin(), overrides.end());
        stacked.emplace(load_machine(arch, precision_choice.value, sets));
    }
    const MachineSetup& machine = stacked ? *stacked : as_given;

    std::optional<TrainingStep> step;
    const std::string run_precision = machine.params.get_string("precision");
    ImportResult r = load(w, &step, run_precision != "fp32");
    std::optional<OpGraph> plan;
    if (!runtime.literal()) plan = lower(r.graph, runtime, run_precision);
    const OpGraph& graph = plan ? *plan : r.graph;
    if (!machine.kind->fused_attention)
        for (const auto& k : graph.ops())
            if (!k.cost.attention.empty())
                throw UserError(runtime.source, "passes.attention: the " + machine.kind->kind + " model has no fused-attention cost "
                                                "model yet (kernel '" + k.name + "'); use a runtime without it");

    // a training step must fit the machine's memory (unless asked to simulate it anyway)
    std::optional<MemoryFootprint> footprint;
    const double capacity = machine.dram_capacity_bytes();
    if (step) {
        footprint = memory_footprint(graph, *step, operand_bytes(parse_precision(run_precision, arch)));
        const MemoryBytes& p = footprint->at_peak;
        if (capacity > 0 && static_cast<double>(footprint->peak_bytes) > capacity && !w.allow_over_capacity)
            throw UserError(w.model + " on " + arch,
                            "the training step " + over_capacity_reason(double(footprint->peak_bytes),
                                                                        {{"weights", double(p.weights)}, {"gradients", double(p.gradients)},
                                                                         {"optimizer state", double(p.optimizer_state)},
                                                                         {"saved activations", double(p.saved_activations)},
                                                                         {"workspace", double(p.workspace)}},
                                                                        capacity, "dram.capacity_gib"));
    }
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec || !fs::is_directory(out_dir)) throw UserError(out_dir, "cannot create the output directory: " + ec.message());
    const std::string trace_path = (fs::path(out_dir) / "trace.h5").string();
    const std::string resolved = machine.resolved_toml("# resolved by archsim from " + arch + "\n");
    write_file_atomically((fs::path(out_dir) / "config.toml").string(), resolved);

    std::string warnings;
    for (const auto& x : r.warnings) warnings += x + "\n";
    SimulationLimits limits;
    limits.max_events = max_events;
    limits.max_sim_time_ps = max_sim_time.empty() ? 0 : parse_time_ps(max_sim_time, "--max-sim-time");
    SimulationResult sim = simulate(graph, *machine.kind, machine.params, trace_path,
                                    {{"config", resolved}, {"config_path", arch}, {"import_warnings", warnings},
                                     {"precision_from", precision_choice.from}, {"runtime_from", runtime_choice.from}},
                                    limits,
                                    SimulationOptions{trace_detail, !reference, !quiet});
    if (!sim.stopped_by.empty()) {
        std::fprintf(stderr, "archsim: error: %s: the run stopped: %s; the trace is kept, marked incomplete, and no metrics.json was written\n",
                     trace_path.c_str(), sim.stopped_by.c_str());
        return 4;
    }

    const Metrics& m = sim.metrics;
    std::string json = metrics_to_json(m);
    nlohmann::ordered_json training;
    if (step) {  // a training step: its figures under `training`
        nlohmann::ordered_json j = nlohmann::ordered_json::parse(json);
        const MemoryFootprint& mem = *footprint;
        j["training"] = training = training_json(*step, graph, m, mem, capacity);
        if (capacity > 0 && static_cast<double>(mem.peak_bytes) > capacity)  // --allow-over-capacity
            std::fprintf(stderr, "archsim: warning: %s: the training step's memory peak, %.4g GiB, exceeds the machine's %.4g GiB "
                                 "(dram.capacity_gib); simulated as asked (--allow-over-capacity), the result is flagged "
                                 "(training.memory.fits = false)\n",
                         arch.c_str(), mem.peak_bytes / kBytesPerGiB, capacity / kBytesPerGiB);
        json = j.dump(2) + "\n";
    }
    write_file_atomically((fs::path(out_dir) / "metrics.json").string(), json);
    std::fputs(f == ReportFormat::Json ? json.c_str() : render_metrics(m, f).c_str(), stdout);
    if (step && f == ReportFormat::Table) std::fputs(training_text(training).c_str(), stdout);
    const std::string units = sim.units_replayed ? ", " + std::to_string(sim.units_replayed) + " loop units replayed" : "";
    std::fprintf(stderr, "archsim: simulated %.6f ms in %.3f s wall, %llu events (%.2f M events/s), %llu kernels replayed of %llu%s; wrote %s and %s\n",
                 sim.simulated_ps * 1e-9, sim.wall_s, static_cast<unsigned long long>(sim.events),
                 sim.wall_s > 0 ? sim.events / sim.wall_s * 1e-6 : 0.0, static_cast<unsigned long long>(sim.kernels_replayed),
                 static_cast<unsigned long long>(sim.kernels_replayed + sim.kernels_recorded), units.c_str(), trace_path.c_str(),
                 (fs::path(out_dir) / "metrics.json").string().c_str());
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
