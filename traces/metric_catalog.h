#pragma once
// The declared metrics: every number archsim reports about a run is declared here once, with its
// name, unit, one-line doc and scope. metrics.json, the run's table and CSV, `trace summary`,
// the sweep results (journal, results.csv, results.h5) and `report --where/--sort` iterate these
// declarations; adding a metric is one declaration in metric_catalog.cpp plus its computation in
// the reducer (traces/reducer.cpp).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace archsim {

struct Metrics;

/// What a metric describes: the run itself (identity, top level of metrics.json), the run's
/// totals ("total"), one operator ("ops[]"), one trace component ("components[]"), or one study
/// point (derived by the sweep from the totals and the point's batch; not in metrics.json), or a
/// training step (metrics.json's `training` object, written by `run --train`; absent for an
/// inference: its name is a path in that object, "*" standing for each key of a per-key one), a
/// parallel job (its last_run.json, sim/api/job_run.h) or an llm workload's serving phases (its
/// llm.json, sim/api/llm_serving.h); for these two the name is a path in the file: "a.b" a key
/// of an object, "a[].b" a key of every element of an array, "*" any one key.
enum class MetricScope { Run, Total, Op, Component, Point, Training, Job, Serving };

/// Values keyed by memory level, energy part or stall cause.
using MetricCounts = std::map<std::string, uint64_t>;
using MetricReals = std::map<std::string, double>;
/// A metric's value: a count, a real number, a flag, a text, a list of names, or one value per key;
/// std::monostate = no value (left out of metrics.json).
using MetricValue =
    std::variant<std::monostate, int64_t, uint64_t, double, bool, std::string, std::vector<std::string>, MetricCounts, MetricReals>;

/// How a metric shows in a fixed-width text table (the run's operator table, `archsim report`).
struct TableColumn {
    std::string header;   ///< column heading; "" = not shown
    int width = 12;       ///< characters; negative = left-aligned (text columns); 0 = a text column as wide as its widest cell, left out when every cell is empty
    double scale = 1;     ///< shown value = value x scale (1e6 turns seconds into microseconds)
    int decimals = -1;    ///< digits after the point; -1 = as is (integers, text); -2 = 5 significant digits, never an exponent (grouped integers from 100,000)
    std::string key;      ///< for a per-key value: the key shown (e.g. "dram")
};

/// One declared metric.
struct MetricDecl {
    std::string name;  ///< key in metrics.json ("latency_s"); for Point scope, its results column
    std::string unit;  ///< "s", "J", "cycles", "MAC", "FLOP", "bytes", "W", "Hz", "MAC/cycle", "1" (ratio), "" (text)
    std::string doc;   ///< one line: what it measures and how it is computed
    MetricScope scope = MetricScope::Total;
    /// Its value for the run (Run/Total scope), operator `index` (Op) or component `index`
    /// (Component); std::monostate = left out of metrics.json (e.g. `modeled` when true).
    std::function<MetricValue(const Metrics&, size_t index)> get;
    /// Point scope: its value from the point's total columns (`totals`, by sweep column name) and
    /// batch (>= 1).
    std::function<double(const std::map<std::string, double>& totals, double batch)> derive;
    TableColumn table;   ///< Op scope: a column of the run's operator table
    std::string csv;     ///< Op scope: its column in `run --format csv` ("" = none; "bytes_{}" per key)
    std::string sweep;   ///< Total/Point/Training scope: its results column ("" = none; "traffic_{}_bytes" per key)
    /// Total/Point/Training scope: a column of `archsim report`'s table (a training step's table
    /// shows the Training ones first; key "*": one column per key the rows have, "{}" in the
    /// header standing for it)
    TableColumn report;
    /// The report column means something for an inference only (inf/s, latency of the whole
    /// run): a table of training steps leaves it out.
    bool inference_only = false;
};

/// Every declared metric, in report order.
const std::vector<MetricDecl>& metric_catalog();
/// The declarations of one scope, in order.
std::vector<const MetricDecl*> metrics_of(MetricScope scope);
/// The declaration named `name` in `scope`, or nullptr.
const MetricDecl* find_metric(MetricScope scope, const std::string& name);
/// The declaration in `scope` whose path matches `path` ("breakdown_s.exposed_by.tensor/intra"
/// matches "breakdown_s.exposed_by.*"), or nullptr.
const MetricDecl* find_metric_path(MetricScope scope, const std::string& path);
/// The Job and Serving declarations (traces/metric_catalog_jobs.cpp), part of metric_catalog().
std::vector<MetricDecl> job_metric_declarations();
/// A sweep column pattern filled with `key` ("traffic_{}_bytes", "dram" -> "traffic_dram_bytes").
std::string column_for(const std::string& pattern, const std::string& key);
/// Whether `pattern` names one column per key (contains "{}").
bool is_per_key(const std::string& pattern);

}  // namespace archsim
