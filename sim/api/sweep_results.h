#pragma once
// One row per sweep point: built from a point's metrics.json, journaled as JSON lines, and
// written out as results.csv and results.h5.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/api/sweep_plan.h"

namespace archsim {

/// The result of one point (status "ok", "failed", or "infeasible": it does not fit its device's
/// memory, over_capacity_reason()).
struct SweepRow {
    size_t index = 0;
    std::string id, model, machine, kind;
    /// The runtime profile whose kernels ran (metrics.json `runtime`); a failed point: its
    /// `runtime` axis value, "" without one.
    std::string runtime;
    /// The precision it ran at (metrics.json `precision`: the one rule, sim/engine/run_choice.h);
    /// a failed point: its `precision` axis value, "" without one.
    std::string precision;
    std::string study;  ///< set by `report` from the folder's study file; not in the journal
    std::vector<std::pair<std::string, std::string>> axes;
    std::map<std::string, std::string> tags;  ///< the generated workload's user tags
    std::string status, error, trace;
    /// Every declared sweep metric (traces/metric_catalog.h: Run, Total and Point scope with a
    /// `sweep` column), by declared name: scalars here, per-key ones (traffic by level, energy by
    /// part) in `per_key`.
    std::map<std::string, double> values;
    std::map<std::string, std::map<std::string, double>> per_key;
};

/// The value of results column `column` (a declared sweep column, a per-key one such as
/// "traffic_dram_bytes", or "index"); nullopt if the row has no such number.
std::optional<double> column_value(const SweepRow& r, const std::string& column);
/// The names of the declared scalar results columns, for error messages.
std::string sweep_column_names();

/// The row of a finished point from its metrics.json text; `trace` is the kept trace's path ("" if
/// none). Throws UserError if the JSON is not a metrics report.
SweepRow row_from_metrics(const SweepPoint& p, const std::string& metrics_json, const std::string& trace);
/// The row of a point that failed with `error`.
SweepRow failed_row(const SweepPoint& p, const std::string& error);

/// One JSON line (no newline) holding the whole row; rows_from_journal reads them back, skipping
/// a torn last line.
std::string journal_line(const SweepRow& r);
std::vector<SweepRow> rows_from_journal(const std::string& path);
/// One journal line back into a row; false if it is not one (torn, or not JSON).
bool parse_journal_line(const std::string& line, SweepRow& r);

/// results.csv: one row per point sorted by index: index, id, model, machine, kind, runtime,
/// precision, the axes (`axis_keys`; a `runtime` or `precision` axis is that column itself), tag.<key> for every workload tag any row has, status, the declared sweep metrics
/// in declaration order (scalars, then per-key ones such as traffic_<level>_bytes and
/// energy_<part>_j for every key any row has), trace, error. Written to a temporary name and
/// renamed into place.
void write_results_csv(const std::string& path, std::vector<SweepRow> rows, const std::vector<std::string>& axis_keys);
/// results.h5: the same columns as results.csv, one 1-D dataset per column under /results
/// (float64 for numbers, variable-length UTF-8 strings for text), attributes study, columns
/// (the column names in order, one per line) and axes (the axis columns, one per line).
/// Written to a temporary name and renamed into place.
void write_results_h5(const std::string& path, std::vector<SweepRow> rows, const std::vector<std::string>& axis_keys,
                      const std::string& study);

}  // namespace archsim
