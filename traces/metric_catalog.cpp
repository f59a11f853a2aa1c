#include "traces/metric_catalog.h"

#include "traces/reducer.h"

namespace archsim {

namespace {

using Get = std::function<MetricValue(const Metrics&, size_t)>;

/// A declaration under construction: name, unit, scope and doc first, then where it shows.
struct Declare {
    MetricDecl d;
    Declare(MetricScope scope, std::string name, std::string unit, std::string doc, Get get) {
        d.scope = scope, d.name = std::move(name), d.unit = std::move(unit), d.doc = std::move(doc), d.get = std::move(get);
    }
    Declare& table(std::string header, int width, double scale = 1, int decimals = -1) {
        d.table = {std::move(header), width, scale, decimals, ""};
        return *this;
    }
    Declare& csv(std::string column) {
        d.csv = std::move(column);
        return *this;
    }
    Declare& sweep(std::string column) {
        d.sweep = std::move(column);
        return *this;
    }
    Declare& derive(std::function<double(const std::map<std::string, double>&, double)> f) {
        d.derive = std::move(f);
        return *this;
    }
    Declare& report(std::string header, int width, double scale, int decimals, std::string key = "") {
        d.report = {std::move(header), width, scale, decimals, std::move(key)};
        return *this;
    }
    Declare& inference_only() {
        d.inference_only = true;
        return *this;
    }
};

/// Accessors: the run (Run and Total scope), operator i, component i.
template <class F>
Get run(F f) {
    return [f](const Metrics& m, size_t) -> MetricValue { return MetricValue(f(m)); };
}
template <class F>
Get op(F f) {
    return [f](const Metrics& m, size_t i) -> MetricValue { return MetricValue(f(m.ops[i])); };
}
template <class F>
Get component(F f) {
    return [f](const Metrics& m, size_t i) -> MetricValue { return MetricValue(f(m.components[i])); };
}

/// Picoseconds to seconds, picojoules to joules.
constexpr double kSecondsPerPs = 1e-12, kJoulesPerPj = 1e-12;

MetricReals joules_of(const std::map<std::string, double>& pj) {
    MetricReals j;
    for (const auto& [k, v] : pj) j[k] = v * kJoulesPerPj;
    return j;
}

std::vector<MetricDecl> declare_all() {
    using S = MetricScope;
    const std::vector<Declare> all = {
        // ---- the run
        Declare(S::Run, "model", "", "model name (the ONNX graph's name or the workload's)", run([](const Metrics& m) { return m.model; })),
        Declare(S::Run, "machine", "", "machine name (config `name`)", run([](const Metrics& m) { return m.machine; })),
        Declare(S::Run, "precision", "", "operand precision of the run (fp32, tf32, bf16, fp16, int8)",
                run([](const Metrics& m) { return m.precision; })),
        Declare(S::Run, "precision_from", "",
                "where the precision came from: --precision or --set, the workload, the machine config, or for a training "
                "step the machine kind's training default (the command line, else the workload, else the machine)",
                run([](const Metrics& m) { return m.precision_from; })),
        Declare(S::Run, "runtime", "", "runtime profile whose kernels ran (configs/runtimes/; none = the graph as imported)",
                run([](const Metrics& m) { return m.runtime; })),
        Declare(S::Run, "runtime_from", "",
                "where the runtime came from: --runtime or --set, the machine config (its deployed runtime), or for a "
                "training step the machine kind's training default",
                run([](const Metrics& m) { return m.runtime_from; })),
        Declare(S::Run, "mapper", "",
                "how kernels were mapped (run --mapper): auto (each kernel's mapping chosen by the machine's mapping "
                "search where the config leaves it open; the ops' mapping, mapspace and mappings_evaluated report it), "
                "search (also where the config names one: a TPU's dataflow) or fixed (every machine's one fixed schedule)",
                run([](const Metrics& m) { return m.mapper; })),
        Declare(S::Run, "approximations", "",
                "fast paths the run used whose numbers are bounded rather than exact, and where (none = every number as "
                "`run --reference` gives it, or exact to < 1 ps per event)",
                run([](const Metrics& m) { return m.approximations; })),
        Declare(S::Run, "not_modeled", "", "what the machine's model leaves out that moves its numbers (none = nothing it knows of)",
                run([](const Metrics& m) { return m.not_modeled; })),
        Declare(S::Run, "clock_hz", "Hz", "the machine's clock (cycles are counted at it)", run([](const Metrics& m) { return m.clock_hz; }))
            .sweep("clock_hz"),
        // ---- totals
        Declare(S::Total, "latency_s", "s", "end of the last event of the run",
                run([](const Metrics& m) { return m.latency_ps * kSecondsPerPs; }))
            .sweep("latency_s")
            .report("latency_ms", 12, 1e3, -2)
            .inference_only(),
        Declare(S::Total, "latency_cycles", "cycles", "latency_s x clock_hz, rounded", run([](const Metrics& m) { return m.latency_cycles; })),
        Declare(S::Total, "energy_j", "J", "sum of energy_breakdown_j", run([](const Metrics& m) { return m.energy_pj * kJoulesPerPj; }))
            .sweep("energy_j")
            .report("energy_mJ", 12, 1e3, -2),
        Declare(S::Total, "energy_breakdown_j", "J",
                "energy by part: compute and vector (ops x pJ/op), each memory level (bytes x pJ/byte), static (static_power_w x latency)",
                run([](const Metrics& m) { return joules_of(m.energy_pj_by_part); }))
            .sweep("energy_{}_j"),
        Declare(S::Total, "macs", "MAC", "multiply-accumulates executed (fold events)", run([](const Metrics& m) { return m.macs; }))
            .sweep("macs"),
        Declare(S::Total, "flops", "FLOP", "2 x macs", run([](const Metrics& m) { return 2 * m.macs; })),
        Declare(S::Total, "compute_cycles", "cycles", "sum over operators of their fold and vector cycles",
                run([](const Metrics& m) { return m.compute_cycles; })),
        Declare(S::Total, "stall_cycles", "cycles", "sum over operators of their stall cycles", run([](const Metrics& m) { return m.stall_cycles; })),
        Declare(S::Total, "stall_share", "1", "stall_cycles / latency_cycles (0 for a zero-latency run)",
                run([](const Metrics& m) {
                    return m.latency_cycles > 0 ? static_cast<double>(m.stall_cycles) / static_cast<double>(m.latency_cycles) : 0.0;
                }))
            .sweep("stall_share"),
        Declare(S::Total, "stall_cycles_by_cause", "cycles", "stall cycles by the machine's own causes (trace table /stall_causes)",
                run([](const Metrics& m) { return MetricCounts(m.stall_cycles_by_cause.begin(), m.stall_cycles_by_cause.end()); })),
        Declare(S::Total, "traffic_bytes", "bytes", "bytes read + written per memory level",
                run([](const Metrics& m) { return MetricCounts(m.traffic_bytes.begin(), m.traffic_bytes.end()); }))
            .sweep("traffic_{}_bytes")
            .report("DRAM_MB", 10, 1e-6, 1, "dram"),
        Declare(S::Total, "read_bytes", "bytes", "bytes read per memory level (a mover's transfers count as reads)",
                run([](const Metrics& m) { return MetricCounts(m.read_bytes.begin(), m.read_bytes.end()); })),
        Declare(S::Total, "write_bytes", "bytes", "bytes written per memory level",
                run([](const Metrics& m) { return MetricCounts(m.write_bytes.begin(), m.write_bytes.end()); })),
        Declare(S::Total, "utilization", "1", "macs / (latency_cycles x peak_macs_per_cycle)", run([](const Metrics& m) { return m.utilization; }))
            .sweep("utilization")
            .report("util%", 7, 100, 1),
        Declare(S::Total, "peak_macs_per_cycle", "MAC/cycle", "sum of the compute components' peak MACs per cycle at the run's precision",
                run([](const Metrics& m) { return m.peak_macs_per_cycle; }))
            .sweep("peak_macs_per_cycle"),
        Declare(S::Total, "static_power_w", "W", "the machine's static power (energy.static_w)", run([](const Metrics& m) { return m.static_power_w; })),
        Declare(S::Total, "power_avg_w", "W", "energy_j / latency_s: the run's average power, static included",
                run([](const Metrics& m) { return m.power_avg_w; }))
            .sweep("power_avg_w")
            .report("avg_W", 9, 1, -2),
        Declare(S::Total, "power_breakdown_w", "W", "energy_breakdown_j / latency_s: average power by part",
                run([](const Metrics& m) { return MetricReals(m.power_w_by_part.begin(), m.power_w_by_part.end()); }))
            .sweep("power_{}_w"),
        Declare(S::Total, "power_peak_w", "W",
                "the highest average over one power-controller window (power.window_us); power_avg_w where the machine has no controller",
                run([](const Metrics& m) { return m.power_peak_w; }))
            .sweep("power_peak_w"),
        Declare(S::Total, "power_limit_w", "W", "the part's power limit (power.tdp_w; KPU power.<mode>_w): the clock is lowered to fit it where the model can (GPU, KPU), else it is checked (CPU, TPU, roofline); 0 = none",
                run([](const Metrics& m) { return m.power_limit_w; }))
            .sweep("power_limit_w"),
        Declare(S::Total, "power_unthrottled_w", "W",
                "what the run would have drawn at its nominal clock: each controller window's work at the nominal clock and voltage, "
                "its time scaled by clock / nominal (time ~ 1/f); power_avg_w when nothing throttled",
                run([](const Metrics& m) { return m.power_unthrottled_w; }))
            .sweep("power_unthrottled_w"),
        Declare(S::Total, "clock_mean_hz", "Hz", "operators' clocks weighted by their latency (the power controller's choice)",
                run([](const Metrics& m) { return m.clock_mean_mhz * 1e6; }))
            .sweep("clock_mean_hz"),
        Declare(S::Total, "clock_min_hz", "Hz", "the lowest clock an operator ran at", run([](const Metrics& m) { return m.clock_min_mhz * 1e6; })),
        Declare(S::Total, "throttled_share", "1", "share of operator time run below the nominal clock (clock_hz)",
                run([](const Metrics& m) { return m.throttled_fraction; }))
            .sweep("throttled_share"),
        Declare(S::Total, "events", "1", "events in the trace", run([](const Metrics& m) { return m.events; })),
        Declare(S::Total, "unmodeled_ops", "", "operators imported with --allow-unsupported, costed as zero",
                run([](const Metrics& m) { return m.unmodeled_ops; })),
        // ---- per study point
        Declare(S::Point, "throughput_per_s", "1/s", "batch / latency_s (inferences per second; 0 for a zero-latency run)", nullptr)
            .derive([](const std::map<std::string, double>& totals, double batch) {
                const double latency_s = totals.at("latency_s");
                return latency_s > 0 ? batch / latency_s : 0.0;
            })
            .sweep("throughput_per_s")
            .report("inf/s", 12, 1, -2)
            .inference_only(),
        Declare(S::Point, "energy_per_inference_j", "J", "energy_j / batch: energy per sample (a Pareto axis that compares batch sizes)", nullptr)
            .derive([](const std::map<std::string, double>& totals, double batch) { return totals.at("energy_j") / batch; })
            .sweep("energy_per_inference_j")
            .report("mJ/inf", 10, 1e3, -2)
            .inference_only(),
        Declare(S::Point, "inferences_per_j", "1/J", "batch / energy_j: samples per joule (perf/W: samples/s per W)", nullptr)
            .derive([](const std::map<std::string, double>& totals, double batch) {
                const double e = totals.at("energy_j");
                return e > 0 ? batch / e : 0.0;
            })
            .sweep("inferences_per_j"),
        Declare(S::Point, "ops_per_j", "1/J", "2 x macs / energy_j: operations (FLOPs, or integer ops) per joule; / 1e12 = TOPS/W or TFLOP/s/W", nullptr)
            .derive([](const std::map<std::string, double>& totals, double) {
                const double e = totals.at("energy_j");
                return e > 0 ? 2.0 * totals.at("macs") / e : 0.0;
            })
            .sweep("ops_per_j")
            .report("TOPS/W", 9, 1e-12, -2),
        // ---- a training step (run --train: metrics.json's `training`, sim/api/training_report.h)
        Declare(S::Training, "step_time_s", "s", "the training step's time: total.latency_s less the setup's when --setup ran it", nullptr)
            .sweep("train_step_s")
            .report("step_ms", 12, 1e3, -2),
        Declare(S::Training, "samples_per_s", "1/s", "samples per step / step_time_s", nullptr)
            .sweep("train_samples_per_s")
            .report("samples/s", 12, 1, -2),
        Declare(S::Training, "model_flops", "FLOP", "2 x the MACs the step needs: forward and gradient operators, no recomputation", nullptr)
            .sweep("train_model_flops"),
        Declare(S::Training, "mfu", "1", "model FLOPs utilization: model FLOPs (no recomputation) / (step_time_s x the machine's peak FLOP/s) "
                "(Korthikanti et al. 2022)", nullptr)
            .sweep("train_mfu")
            .report("MFU%", 7, 100, 1),
        Declare(S::Training, "hfu", "1", "hardware FLOPs utilization: hardware_flops (recomputation included) / (step_time_s x the machine's "
                "peak FLOP/s) (Korthikanti et al. 2022)", nullptr)
            .sweep("train_hfu")
            .report("HFU%", 7, 100, 1),
        Declare(S::Training, "memory.peak_bytes", "bytes", "the step's memory peak: weights, gradients, optimizer state, saved "
                                                           "activations and workspace live at once", nullptr)
            .sweep("train_memory_peak_bytes")
            .report("mem_MB", 10, 1e-6, -2),
        Declare(S::Training, "phases.*.latency_s", "s", "per phase (setup, forward, loss, backward, recompute, optimizer): the sum of "
                                                         "its kernels' spans", nullptr)
            .sweep("phase_{}_s")
            .report("{}_ms", 12, 1e3, -2, "*"),
        Declare(S::Training, "phases.*.flops", "FLOP", "per phase: 2 per MAC plus the vector operations of its kernels", nullptr)
            .sweep("phase_{}_flops"),
        Declare(S::Training, "phases.*.utilization", "1", "per phase: 2 x its MACs / (its time x the machine's peak FLOP/s)", nullptr)
            .sweep("phase_{}_utilization"),
        // ---- per operator
        Declare(S::Op, "name", "", "the ONNX node's name", op([](const OpMetrics& o) { return o.name; })).table("operator", -40).csv("name"),
        Declare(S::Op, "op_type", "", "the ONNX operator type", op([](const OpMetrics& o) { return o.op_type; })).table("op_type", -14).csv("op_type"),
        Declare(S::Op, "op_class", "", "how machines treat it: contraction, elementwise, ... (the op table's class)",
                op([](const OpMetrics& o) { return o.op_class; })),
        Declare(S::Op, "macs", "MAC", "MACs executed (sum over its fold events)", op([](const OpMetrics& o) { return o.macs; }))
            .table("MACs", 14)
            .csv("macs"),
        Declare(S::Op, "start_s", "s", "start of its op span", op([](const OpMetrics& o) { return o.start_ps * kSecondsPerPs; })).csv("start_s"),
        Declare(S::Op, "latency_s", "s", "length of its op span", op([](const OpMetrics& o) { return o.latency_ps * kSecondsPerPs; }))
            .table("latency_us", 12, 1e6, 3)
            .csv("latency_s"),
        Declare(S::Op, "compute_cycles", "cycles", "its fold and vector cycles", op([](const OpMetrics& o) { return o.compute_cycles; }))
            .table("cycles", 12)
            .csv("compute_cycles"),
        Declare(S::Op, "stall_cycles", "cycles", "its stall cycles", op([](const OpMetrics& o) { return o.stall_cycles; }))
            .table("stall_cyc", 10)
            .csv("stall_cycles"),
        Declare(S::Op, "energy_j", "J", "dynamic energy of its events + static power over its span",
                op([](const OpMetrics& o) { return o.energy_pj * kJoulesPerPj; }))
            .table("energy_uJ", 12, 1e6, 3)
            .csv("energy_j"),
        Declare(S::Op, "power_w", "W", "energy_j / latency_s over its span (0 for a zero-time operator)",
                op([](const OpMetrics& o) { return o.latency_ps > 0 ? o.energy_pj / o.latency_ps : 0.0; })),
        Declare(S::Op, "clock_hz", "Hz", "the clock it ran at: the nominal clock, or the one the power controller set",
                op([](const OpMetrics& o) { return o.clock_mhz * 1e6; })),
        Declare(S::Op, "traffic_bytes", "bytes", "bytes read + written per memory level",
                op([](const OpMetrics& o) { return MetricCounts(o.traffic_bytes.begin(), o.traffic_bytes.end()); }))
            .csv("bytes_{}"),
        Declare(S::Op, "utilization", "1", "macs / (latency cycles x peak MACs per cycle)", op([](const OpMetrics& o) { return o.utilization; }))
            .table("util%", 6, 100, 1)
            .csv("utilization"),
        Declare(S::Op, "bound", "", "what its time went to most: compute (MACs at the arrays' peak rate and vector work), array_underused (the array busy, its PEs mostly idle: fill and drain, weight preload, a fold smaller than the array), or the stall cause with the most cycles; none at zero time",
                op([](const OpMetrics& o) { return o.bound; }))
            .table("bound", -12)
            .csv("bound"),
        Declare(S::Op, "mapping", "", "the mapping its kernel ran with, in the machine's terms (the KPU's block order: rows>cols is "
                "row-major, cols>rows column-major, bands=B cuts the inner dimension into bands of B blocks); left out "
                "where the machine reports none",
                [](const Metrics& m, size_t i) { return m.ops[i].mapping.empty() ? MetricValue() : MetricValue(m.ops[i].mapping); })
            .table("mapping", 0)
            .csv("mapping"),
        Declare(S::Op, "mapspace", "1", "distinct mappings its kernel's search considered (1 under --mapper fixed); left out with mapping",
                [](const Metrics& m, size_t i) { return m.ops[i].mapping.empty() ? MetricValue() : MetricValue(m.ops[i].mapspace); }),
        Declare(S::Op, "mappings_evaluated", "1",
                "mappings its kernel's search priced with the machine's cost model (the rest pruned by a lower bound; 0 "
                "under --mapper fixed); left out with mapping",
                [](const Metrics& m, size_t i) {
                    return m.ops[i].mapping.empty() ? MetricValue() : MetricValue(m.ops[i].mappings_evaluated);
                }),
        Declare(S::Op, "stall_cycles_by_cause", "cycles", "its stall cycles by cause",
                op([](const OpMetrics& o) { return MetricCounts(o.stall_cycles_by_cause.begin(), o.stall_cycles_by_cause.end()); })),
        Declare(S::Op, "modeled", "", "false: imported with --allow-unsupported and costed as zero (left out when true)",
                [](const Metrics& m, size_t i) { return m.ops[i].modeled ? MetricValue() : MetricValue(false); }),
        // ---- per component
        Declare(S::Component, "name", "", "component name (trace table /components)", component([](const ComponentMetrics& c) { return c.name; })),
        Declare(S::Component, "level", "", "compute, vector, or the memory level it belongs to",
                component([](const ComponentMetrics& c) { return c.level; })),
        Declare(S::Component, "ops", "1", "MACs (fold events) or vector operations it executed", component([](const ComponentMetrics& c) { return c.ops; })),
        Declare(S::Component, "busy_s", "s", "sum of its fold, vector and transfer spans (overlapping spans count twice)",
                component([](const ComponentMetrics& c) { return c.busy_ps * kSecondsPerPs; })),
        Declare(S::Component, "bytes", "bytes", "bytes read + written", component([](const ComponentMetrics& c) { return c.bytes; })),
        Declare(S::Component, "utilization", "1", "ops / (latency_cycles x its peak ops per cycle); 0 for memories",
                component([](const ComponentMetrics& c) { return c.utilization; })),
    };
    std::vector<MetricDecl> out;
    for (const auto& d : all) out.push_back(d.d);
    for (auto& d : job_metric_declarations()) out.push_back(std::move(d));
    return out;
}

}  // namespace

const std::vector<MetricDecl>& metric_catalog() {
    static const std::vector<MetricDecl> catalog = declare_all();  // immutable after first use
    return catalog;
}

std::vector<const MetricDecl*> metrics_of(MetricScope scope) {
    std::vector<const MetricDecl*> out;
    for (const auto& d : metric_catalog())
        if (d.scope == scope) out.push_back(&d);
    return out;
}

const MetricDecl* find_metric(MetricScope scope, const std::string& name) {
    for (const auto& d : metric_catalog())
        if (d.scope == scope && d.name == name) return &d;
    return nullptr;
}

const MetricDecl* find_metric_path(MetricScope scope, const std::string& path) {
    // segments split at '.', each "*" in a declaration matching any one segment
    auto segments = [](const std::string& p) {
        std::vector<std::string> out(1);
        for (char c : p) {
            if (c == '.') out.emplace_back();
            else out.back().push_back(c);
        }
        return out;
    };
    const std::vector<std::string> want = segments(path);
    for (const auto& d : metric_catalog()) {
        if (d.scope != scope) continue;
        const std::vector<std::string> have = segments(d.name);
        if (have.size() != want.size()) continue;
        bool same = true;
        for (size_t i = 0; i < have.size() && same; ++i) same = have[i] == "*" || have[i] == want[i];
        if (same) return &d;
    }
    return nullptr;
}

bool is_per_key(const std::string& pattern) { return pattern.find("{}") != std::string::npos; }

std::string column_for(const std::string& pattern, const std::string& key) {
    const size_t at = pattern.find("{}");
    return at == std::string::npos ? pattern : pattern.substr(0, at) + key + pattern.substr(at + 2);
}

}  // namespace archsim
