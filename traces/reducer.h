#pragma once
// Reduces a trace to latency, energy and traffic per operator, per component and per memory level.
// What each number means, and how it is reported, is declared in traces/metric_catalog.h.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/event_sums.h"

namespace archsim {

class TraceReader;

/// What one operator cost, derived from its events alone.
struct OpMetrics {
    std::string name;
    std::string op_type;
    std::string op_class;         ///< "contraction", "elementwise", ... (from the op table)
    bool modeled = true;          ///< false: imported with --allow-unsupported, costed as zero
    int64_t macs = 0;             ///< MACs executed (sum over its fold events)
    double start_ps = 0;
    double latency_ps = 0;        ///< its op span
    uint64_t compute_cycles = 0;  ///< fold + vector cycles
    uint64_t stall_cycles = 0;
    std::map<std::string, uint64_t> stall_cycles_by_cause;
    /// What its time went to most (bound_of): "compute", "array_underused", or the stall cause
    /// with the most cycles ("operand_load", "launch", "block_mover", ...); "none" for a
    /// zero-time operator.
    std::string bound;
    double energy_pj = 0;         ///< dynamic energy of its events + static power over its span
    std::map<std::string, uint64_t> traffic_bytes;  ///< bytes by memory level (reads + writes)
    double utilization = 0;       ///< macs / (latency cycles * peak MACs per cycle)
    double clock_mhz = 0;         ///< the clock it ran at (the power controller's), MHz
    /// Its kernel's mapping (OpMapping; "" and 0 when the machine reported none).
    std::string mapping;
    int64_t mapspace = 0, mappings_evaluated = 0;
};

/// What operator `o`'s time went to most. Its compute cycles split in two: the cycles its MACs
/// would take at the arrays' peak rate plus its vector cycles ("compute"), and the rest of its
/// fold cycles, when the array was busy but its PEs idle ("array_underused": pipeline fill and
/// drain, weight preload, PEs a fold's shape leaves idle; SCALE-Sim counts these cycles as
/// compute, and so do compute_cycles). Each stall cause's cycles compete as a third kind; the
/// largest names the bound ("compute" on a tie, "none" with no cycles). `fold_cycles`: the
/// operator's fold cycles; `full_use_cycles`: sum over its folds of MACs / the component's peak
/// MACs per cycle.
std::string bound_of(const OpMetrics& o, double fold_cycles, double full_use_cycles);

/// What one component did over the run (compute units: ops and busy time; memories: bytes).
struct ComponentMetrics {
    std::string name;
    std::string level;
    uint64_t ops = 0;           ///< MACs (fold events) or vector operations
    double busy_ps = 0;         ///< sum of its fold/vector/transfer spans (overlapping spans count twice)
    uint64_t bytes = 0;         ///< bytes read + written
    double utilization = 0;     ///< compute: ops / (latency cycles x peak ops per cycle); 0 otherwise
};

/// Totals of one run.
struct Metrics {
    std::string model;
    std::string machine;
    std::string precision;
    std::string runtime;  ///< the runtime profile whose kernels ran ("none": the graph as imported)
    /// Where the precision and the runtime came from (sim/engine/run_choice.h: "--precision",
    /// "workload NAME", "machine config", "training default of the KIND kind"; "" in traces
    /// written before they were recorded).
    std::string precision_from, runtime_from;
    std::string mapper;          ///< how kernels were mapped: "auto", "search" or "fixed" (run --mapper; "fixed" in traces before it)
    std::string approximations;  ///< bounded (not exact) fast paths the run used ("none": every number as full detail)
    std::string not_modeled;     ///< what the machine's model leaves out that moves its numbers ("none": nothing it knows of)
    double clock_hz = 0;
    double latency_ps = 0;
    uint64_t latency_cycles = 0;
    int64_t macs = 0;
    uint64_t compute_cycles = 0;
    uint64_t stall_cycles = 0;
    std::map<std::string, uint64_t> stall_cycles_by_cause;
    double energy_pj = 0;                           ///< sum of energy_pj_by_part
    std::map<std::string, double> energy_pj_by_part;///< "compute", "vector", each memory level, "static"
    std::map<std::string, uint64_t> traffic_bytes;  ///< by memory level (reads + writes)
    std::map<std::string, uint64_t> read_bytes;
    std::map<std::string, uint64_t> write_bytes;
    double peak_macs_per_cycle = 0;
    double utilization = 0;                         ///< macs / (latency_cycles * peak)
    double static_power_w = 0;
    // Power (arch/power): averages are energy over latency, so energy = power x latency exactly.
    double power_avg_w = 0;                         ///< energy_pj / latency_ps
    std::map<std::string, double> power_w_by_part;  ///< energy_pj_by_part / latency_ps
    double power_peak_w = 0;        ///< highest power-controller window (power_avg_w when none was recorded)
    double power_limit_w = 0;       ///< the limit the clock was lowered to fit; 0 = none
    bool power_clock_fixed = false; ///< the model cannot lower this part's clock: the limit is checked, not enforced
    double power_unthrottled_w = 0; ///< the run's draw at the nominal clock, as the controller estimates it (power_avg_w unthrottled)
    double clock_mean_mhz = 0;      ///< operators' clocks weighted by their latency
    double clock_min_mhz = 0;       ///< lowest clock an operator ran at
    double throttled_fraction = 0;  ///< share of operator time below the nominal clock
    std::vector<PowerWindow> power_timeline;
    uint64_t events = 0;
    std::vector<OpMetrics> ops;
    std::vector<ComponentMetrics> components;       ///< in the trace's component order
    std::vector<std::string> unmodeled_ops;        ///< names of zero-cost unsupported operators
};

/// What a run's metrics are reduced from: the trace's root attributes and tables and its
/// per-operator event sums (traces/event_sums.h), whether they come from a trace file or from the
/// writer of a run still in memory.
struct TraceTables {
    std::string model, machine, precision, runtime, approximations, not_modeled, precision_from, runtime_from;
    double clock_hz = 0;
    double static_power_w = 0;
    double power_limit_w = 0;        ///< attribute power.limit_w: the limit the clock was lowered to fit (0: none)
    bool power_clock_fixed = false;  ///< attribute power.fixed_clock: the limit is only checked (PowerSpec::fixed_clock)
    double power_peak_w = 0;         ///< attribute power.peak_w: the highest controller window's average
    double power_unthrottled_w = 0;  ///< attribute power.unthrottled_w: the controller's estimate at the nominal clock
    std::vector<double> op_clock_mhz;     ///< per operator (empty: every one at clock_hz)
    std::vector<double> op_energy_scale;  ///< per operator, factor on its on-chip event energies (empty: 1)
    std::vector<PowerWindow> power_timeline;
    std::vector<OpMapping> op_mappings;  ///< /op_mappings: the kernels whose mapping a search chose
    std::string mapper;                  ///< attribute mapper: "auto", "search" or "fixed" ("" before it was recorded)
    CounterSeries counters;  ///< /counters: named samples over time (none for most runs)
    uint64_t events = 0;  ///< events the run emitted (whatever the trace's detail kept)
    std::vector<ComponentInfo> components;
    std::vector<OpInfo> ops;
    std::vector<StallCauseInfo> stall_causes;
    std::vector<EventSum> sums;
};

/// Prices the event sums with the component table: compute energy = ops x pJ/op, memory energy
/// = bytes x pJ/byte (read or write), each times its operator's voltage factor (op_energy_scale)
/// except at level "dram" (off chip), static energy = static_power_w x latency. Latency is the
/// end of the last event; an operator's span is its op event. Throws UserError(`where`, ...) for
/// a row naming a component, operator or kind outside the tables (a corrupt trace).
Metrics reduce_sums(const TraceTables& t, const std::string& where = "");
/// reduce_sums() of a trace file's tables and event sums (read from /event_sums, or summed from
/// /events for a trace written before the sums were stored).
Metrics reduce_trace(const TraceReader& trace);

}  // namespace archsim
