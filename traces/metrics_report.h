#pragma once
// Writes a run's metrics by walking the declared metrics (traces/metric_catalog.h): metrics.json,
// the human table and the per-operator CSV. Nothing here names a metric.
#include <optional>
#include <string>

#include "traces/metric_catalog.h"

namespace archsim {

struct Metrics;

/// Output formats of reports.
enum class ReportFormat { Table, Json, Csv };
/// Parses "table" | "json" | "csv"; throws UserError otherwise.
ReportFormat parse_report_format(const std::string& s);

/// metrics.json: the Run-scope metrics at the top level, then "total" (Total scope), "ops" (one
/// object per operator, Op scope) and "components" (one per trace component, Component scope),
/// each object's keys in declaration order.
std::string metrics_to_json(const Metrics& m);
/// The human report (the operator table from the Op-scope table columns, then every Run and Total
/// metric with its unit), or the CSV: one row per operator with the Op-scope CSV columns (per-key
/// values one column per key any operator has) and a TOTAL row holding the Total metric of the
/// same name where one is declared.
std::string render_metrics(const Metrics& m, ReportFormat f);

/// The catalogue itself (`archsim metrics`): per declared metric its scope, name, unit, where it
/// appears (metrics.json path, CSV and results columns) and doc; as a table, JSON or CSV.
std::string describe_metrics(ReportFormat f);

/// The warning for a run whose average power exceeds its part's limit (m.power_limit_w > 0 and
/// m.power_avg_w above it), one line without a newline: by how much, and why the limit did not
/// hold (a controller that reacts a window late, or a model that cannot lower the clock, whose
/// latency is then what the part would reach only without its limit).
std::string over_limit_line(const Metrics& m);

/// `s` as one CSV field (RFC 4180): quoted when it holds a comma, quote or newline, quotes
/// doubled, newlines turned into spaces.
std::string csv_field(const std::string& s);

/// A value as a number (counts, reals, flags); nullopt for text, lists and per-key values.
std::optional<double> metric_number(const MetricValue& v);
/// A number formatted for a table column: scaled, `decimals` after the point (-1: as is, -2: 5
/// significant digits), padded to the column's width.
std::string table_cell(double value, const TableColumn& c);
/// A text padded (or cut in its middle with "...") to the column's width.
std::string table_cell(const std::string& text, const TableColumn& c);
/// Column `c` of a metric in `unit` ("s", "J", "bytes") re-expressed in the engineering unit its
/// typical (median) value of `values` needs (docs/units.md): header "latency_us" becomes
/// "latency_ms" with the matching scale and five significant digits. Other units: `c` unchanged.
TableColumn column_in_unit(const TableColumn& c, const std::string& unit, std::vector<double> values);

}  // namespace archsim
