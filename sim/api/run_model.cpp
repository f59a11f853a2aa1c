#include "sim/api/run_model.h"

#include <fmt/format.h>

#include <filesystem>

#include "arch/common/registry.h"
#include "sim/api/host_cpu.h"
#include "sim/api/training_report.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/machine_file.h"
#include "sim/base/precision.h"
#include "sim/base/units.h"
#include "sim/engine/machine_setup.h"
#include "sim/engine/run_choice.h"
#include "traces/display_units.h"
#include "traces/metrics_report.h"
#include "workloads/generators/workload_file.h"
#include "workloads/load_workload.h"
#include "workloads/lowering/lower.h"
#include "workloads/training/memory_footprint.h"
#include "workloads/training/training_step.h"

#ifndef ARCHSIM_SOURCE_DIR
#define ARCHSIM_SOURCE_DIR "."
#endif

namespace archsim {

namespace fs = std::filesystem;

std::string runtimes_dir() { return std::string(ARCHSIM_SOURCE_DIR) + "/configs/runtimes"; }

std::string over_capacity_reason(double needed_bytes, const std::vector<std::pair<std::string, double>>& categories,
                                 double capacity_bytes, const std::string& capacity_key) {
    std::string parts;
    for (const auto& [name, bytes] : categories)
        if (bytes > 0) parts += (parts.empty() ? "" : ", ") + name + " " + with_unit(bytes, "B");
    return std::string(kDoesNotFit) + ": needs " + with_unit(needed_bytes, "B") + " per device (" + parts + ") against the device's " +
           with_unit(capacity_bytes, "B") + " (" + capacity_key + "); --allow-over-capacity simulates it anyway";
}

ImportOptions import_options(const WorkloadArgs& w) {
    std::map<std::string, int64_t> dims;
    for (const auto& d : w.dims) parse_dim_binding(d, dims);
    return make_import_options(dims, w.batch, w.allow_unsupported, w.workload_sets, w.inputs);
}

ImportResult load_run_workload(const WorkloadArgs& w, std::optional<TrainingStep>* step, bool mixed_precision) {
    const WorkloadRef ref = parse_workload_ref(w.model);
    // a generated workload may ask for training itself (mode = "train"); a flag given wins
    const WorkloadRunFields entry = ref.generated() ? read_workload_run_fields(ref.file, ref.entry, w.workload_sets) : WorkloadRunFields{};
    ImportResult r = load_workload(w.model, import_options(w));
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
    return r;
}

RunOutcome run_model(const RunRequest& r) {
    RunOutcome out;
    auto warn = [&](const std::string& w) {
        out.warnings.push_back(w);
        if (r.warn) r.warn(w);
    };
    const WorkloadArgs& w = r.workload;
    const TraceDetail trace_detail = parse_trace_detail(r.detail, "--detail");
    Mapper mapper = Mapper::Auto;
    try {
        mapper = parse_mapper(r.mapper);
    } catch (const std::invalid_argument& e) {
        throw UserError("--mapper", e.what());
    }
    {  // an earlier run's result in the folder must not look like this one's, whatever happens next
        std::error_code ec;
        fs::remove(fs::path(r.out_dir) / "metrics.json", ec);
    }
    // Config first: it is cheap, and a typo there should not wait for a big import.
    std::vector<KeyOverride> overrides = set_overrides(r.sets);
    const MachineSetup base = load_machine(r.arch, "", overrides);
    if (base.kind->schema().find("host.cpu"))
        if (const std::string mismatch = host_cpu_mismatch(r.arch, base.params.get_string("host.cpu")); !mismatch.empty()) warn(mismatch);
    // precision and runtime by the one rule (run_choice.h): command line, workload, machine
    const WorkloadRef ref = parse_workload_ref(w.model);
    const WorkloadRunFields entry = ref.generated() ? read_workload_run_fields(ref.file, ref.entry, w.workload_sets) : WorkloadRunFields{};
    const bool training_step = w.train || entry.train;
    const RunChoice precision_choice = choose_precision(r.precision, overrides, entry.precision, ref.name(), base, training_step);
    const RunChoice runtime_choice = choose_runtime(w.runtime, overrides, base, training_step);
    if (const std::string tw = training_precision_warning(precision_choice, training_step); !tw.empty()) warn(tw);
    overrides.push_back({"runtime=" + runtime_choice.value, runtime_choice.from});
    if (r.reference && base.kind->schema().find("dram.per_burst")) overrides.push_back({"dram.per_burst=true", "--reference"});
    const MachineSetup as_given = load_machine(r.arch, precision_choice.value, overrides);
    const RuntimeProfile runtime = [&] {
        try {
            return load_runtime(as_given.params.get_string("runtime"), runtimes_dir());
        } catch (const UserError& e) {
            if (runtime_choice.from != "machine config") throw;
            throw UserError(r.arch, e.what());  // the machine file's own `runtime` key
        }
    }();
    std::optional<MachineSetup> stacked;
    if (!runtime.device_sets.empty() && runtime.device_kind == as_given.kind->kind) {
        // the software stack's device keys first, the user's --set over them
        std::vector<KeyOverride> sets;
        for (const auto& a : runtime.device_sets) sets.push_back({a, runtime.source + ": device.sets"});
        sets.insert(sets.end(), overrides.begin(), overrides.end());
        stacked.emplace(load_machine(r.arch, precision_choice.value, sets));
    }
    const MachineSetup& machine = stacked ? *stacked : as_given;

    std::optional<TrainingStep> step;
    const std::string run_precision = machine.params.get_string("precision");
    ImportResult imported = load_run_workload(w, &step, run_precision != "fp32");
    for (const auto& x : imported.warnings) warn(x);
    std::optional<OpGraph> plan;
    if (!runtime.literal()) plan = lower(imported.graph, runtime, run_precision);
    const OpGraph& graph = plan ? *plan : imported.graph;
    if (!machine.kind->fused_attention)
        for (const auto& k : graph.ops())
            if (!k.cost.attention.empty())
                throw UserError(runtime.source, "passes.attention: the " + machine.kind->kind + " model has no fused-attention cost "
                                                "model yet (kernel '" + k.name + "'); use a runtime without it");

    // a training step must fit the machine's memory (unless asked to simulate it anyway)
    std::optional<MemoryFootprint> footprint;
    const double capacity = machine.dram_capacity_bytes();
    if (step) {
        footprint = memory_footprint(graph, *step, operand_bytes(parse_precision(run_precision, r.arch)));
        const MemoryBytes& p = footprint->at_peak;
        if (capacity > 0 && static_cast<double>(footprint->peak_bytes) > capacity) {
            if (!w.allow_over_capacity)
                throw UserError(w.model + " on " + r.arch,
                                "the training step " + over_capacity_reason(double(footprint->peak_bytes),
                                                                            {{"weights", double(p.weights)}, {"gradients", double(p.gradients)},
                                                                             {"optimizer state", double(p.optimizer_state)},
                                                                             {"saved activations", double(p.saved_activations)},
                                                                             {"workspace", double(p.workspace)}},
                                                                            capacity, "dram.capacity_gib"));
            warn(fmt::format("{}: the training step's memory peak, {:.4g} GiB, exceeds the machine's {:.4g} GiB (dram.capacity_gib); "
                             "simulated as asked (--allow-over-capacity), the result is flagged (training.memory.fits = false)",
                             r.arch, double(footprint->peak_bytes) / kBytesPerGiB, capacity / kBytesPerGiB));
        }
    }
    std::error_code ec;
    fs::create_directories(r.out_dir, ec);
    if (ec || !fs::is_directory(r.out_dir)) throw UserError(r.out_dir, "cannot create the output directory: " + ec.message());
    out.trace_path = (fs::path(r.out_dir) / "trace.h5").string();
    out.metrics_path = (fs::path(r.out_dir) / "metrics.json").string();
    const std::string resolved = machine.resolved_toml("# resolved by archsim from " + r.arch + "\n");
    write_file_atomically((fs::path(r.out_dir) / "config.toml").string(), resolved);

    std::string warnings;
    for (const auto& x : imported.warnings) warnings += x + "\n";
    SimulationLimits limits;
    limits.max_events = r.max_events;
    limits.max_sim_time_ps = r.max_sim_time.empty() ? 0 : parse_time_ps(r.max_sim_time, "--max-sim-time");
    out.sim = simulate(graph, *machine.kind, machine.params, out.trace_path,
                       {{"config", resolved}, {"config_path", r.arch}, {"import_warnings", warnings},
                        {"precision_from", precision_choice.from}, {"runtime_from", runtime_choice.from}},
                       limits, SimulationOptions{trace_detail, !r.reference, !r.quiet, mapper});
    if (!out.sim.stopped_by.empty()) return out;

    out.metrics_json = metrics_to_json(out.sim.metrics);
    if (step) {  // a training step: its figures under `training`
        nlohmann::ordered_json j = nlohmann::ordered_json::parse(out.metrics_json);
        j["training"] = out.training = training_json(*step, graph, out.sim.metrics, *footprint, capacity);
        out.metrics_json = j.dump(2) + "\n";
    }
    write_file_atomically(out.metrics_path, out.metrics_json);
    return out;
}

}  // namespace archsim
