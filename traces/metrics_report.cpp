#include "traces/metrics_report.h"

#include <algorithm>
#include <cmath>

#include "traces/display_units.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "sim/base/error.h"
#include "traces/reducer.h"

namespace archsim {

namespace {

using ojson = nlohmann::ordered_json;

ojson to_json(const MetricValue& v) {
    return std::visit(
        [](const auto& x) {
            if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) return ojson();
            else return ojson(x);
        },
        v);
}

bool has_value(const MetricValue& v) { return !std::holds_alternative<std::monostate>(v); }

/// One object holding the metrics `decls` (one scope's, in declaration order) for `index`.
ojson object_of(const Metrics& m, const std::vector<const MetricDecl*>& decls, size_t index) {
    ojson o = ojson::object();
    for (const MetricDecl* d : decls)
        if (const MetricValue v = d->get(m, index); has_value(v)) o[d->name] = to_json(v);
    return o;
}

/// A scalar as a CSV cell (numbers at full precision); per-key values and lists are not cells.
std::string csv_cell(const MetricValue& v) {
    if (auto s = std::get_if<std::string>(&v)) return csv_field(*s);
    if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
    if (auto i = std::get_if<int64_t>(&v)) return fmt::format("{}", *i);
    if (auto u = std::get_if<uint64_t>(&v)) return fmt::format("{}", *u);
    if (auto d = std::get_if<double>(&v)) return fmt::format("{}", *d);
    return "";
}

/// The value of per-key metric `v` at `key` as a cell ("0" where it has none).
std::string csv_key_cell(const MetricValue& v, const std::string& key) {
    if (auto c = std::get_if<MetricCounts>(&v)) {
        auto it = c->find(key);
        return fmt::format("{}", it == c->end() ? 0 : it->second);
    }
    if (auto r = std::get_if<MetricReals>(&v)) {
        auto it = r->find(key);
        return fmt::format("{}", it == r->end() ? 0.0 : it->second);
    }
    return "";
}

std::set<std::string> keys_of(const MetricValue& v) {
    std::set<std::string> k;
    if (auto c = std::get_if<MetricCounts>(&v))
        for (const auto& [key, x] : *c) k.insert(key);
    if (auto r = std::get_if<MetricReals>(&v))
        for (const auto& [key, x] : *r) k.insert(key);
    return k;
}

std::string render_csv(const Metrics& m) {
    // scalar columns first, then one column per key of each per-key metric
    std::vector<const MetricDecl*> scalars, per_key;
    for (const MetricDecl* d : metrics_of(MetricScope::Op))
        if (!d->csv.empty()) (is_per_key(d->csv) ? per_key : scalars).push_back(d);
    std::vector<std::set<std::string>> keys(per_key.size());
    for (size_t k = 0; k < per_key.size(); ++k)
        for (size_t i = 0; i < m.ops.size(); ++i)
            keys[k].merge(keys_of(per_key[k]->get(m, i)));
    std::string out;
    for (const MetricDecl* d : scalars) out += (out.empty() ? "" : ",") + d->csv;
    for (size_t k = 0; k < per_key.size(); ++k)
        for (const auto& key : keys[k]) out += "," + column_for(per_key[k]->csv, key);
    out += "\n";
    auto row = [&](auto value_of, const std::string& first) {
        std::string line;
        for (size_t c = 0; c < scalars.size(); ++c) {
            line += (c ? "," : "") + (c == 0 && !first.empty() ? first : csv_cell(value_of(scalars[c])));
        }
        for (size_t k = 0; k < per_key.size(); ++k) {
            const MetricValue v = value_of(per_key[k]);
            for (const auto& key : keys[k]) line += "," + csv_key_cell(v, key);
        }
        return line + "\n";
    };
    for (size_t i = 0; i < m.ops.size(); ++i) out += row([&](const MetricDecl* d) { return d->get(m, i); }, "");
    out += row(
        [&](const MetricDecl* d) {
            const MetricDecl* t = find_metric(MetricScope::Total, d->name);
            return t ? t->get(m, 0) : MetricValue();
        },
        "TOTAL");
    return out;
}

/// One number of the human summary by the unit policy (docs/units.md): times and energies in an
/// engineering unit with six significant digits, clocks in MHz or GHz, fractions as %, counts
/// (MACs, FLOPs, cycles, bytes, events) as grouped integers; `name` tells a fraction from a count
/// among the unit-"1" metrics.
std::string summary_number(double x, const std::string& unit, const std::string& name) {
    if (unit == "s" || unit == "J") return with_unit(x, unit, 6);
    if (unit == "Hz") return x >= 1e9 ? in_unit(x, {"GHz", 1e-9}, 4) + " GHz" : in_unit(x, {"MHz", 1e-6}, 4) + " MHz";
    if (unit == "1" && name != "events") return percent(x, 2);
    if (unit == "W") return in_unit(x, {"W", 1}, 4) + " W";
    if (x == std::floor(x) && std::fabs(x) < 9.2e18) return grouped(static_cast<int64_t>(x)) + (unit.empty() || unit == "1" ? "" : " " + unit);
    return fmt::format("{:.7g}{}", x, unit.empty() || unit == "1" ? "" : " " + unit);
}

/// A Run or Total value as one line of the human summary.
std::string summary_value(const MetricValue& v, const std::string& unit, const std::string& name) {
    const std::string u = unit.empty() || unit == "1" ? "" : " " + unit;
    if (auto n = metric_number(v)) return summary_number(*n, unit, name);
    if (auto s = std::get_if<std::string>(&v)) return *s;
    if (auto l = std::get_if<std::vector<std::string>>(&v)) {
        std::string s = l->empty() ? "none" : "";
        for (const auto& x : *l) s += (s.empty() ? "" : " ") + x;
        return s;
    }
    std::string s;
    if (auto c = std::get_if<MetricCounts>(&v))
        for (const auto& [k, x] : *c) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, grouped(static_cast<int64_t>(x)));
    if (auto r = std::get_if<MetricReals>(&v)) {  // one unit for the whole list: the largest part's
        double top = 0;
        for (const auto& [k, x] : *r) top = std::max(top, std::fabs(x));
        const DisplayUnit du = unit == "J" || unit == "s" ? unit_for(top, unit) : DisplayUnit{unit, 1};
        for (const auto& [k, x] : *r) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, in_unit(x, du, 4));
        return (s.empty() ? "none" : s) + (du.suffix.empty() ? "" : " " + du.suffix);
    }
    return (s.empty() ? "none" : s) + u;
}

std::string render_table(const Metrics& m) {
    std::vector<const MetricDecl*> cols;
    std::vector<TableColumn> shown;
    for (const MetricDecl* d : metrics_of(MetricScope::Op)) {
        if (d->table.header.empty()) continue;
        if (d->table.width == 0) {  // as wide as its widest cell; left out when all are empty
            size_t w = 0;
            for (size_t i = 0; i < m.ops.size(); ++i)
                if (const MetricValue v = d->get(m, i); const auto s = std::get_if<std::string>(&v)) w = std::max(w, s->size());
            if (w == 0) continue;
            TableColumn c = d->table;
            c.width = -static_cast<int>(std::max(w, c.header.size()));
            cols.push_back(d), shown.push_back(c);
            continue;
        }
        // each time or energy column in the unit its typical operator needs (docs/units.md)
        std::vector<double> vals;
        for (size_t i = 0; i < m.ops.size(); ++i)
            if (const auto n = metric_number(d->get(m, i))) vals.push_back(*n);
        cols.push_back(d), shown.push_back(column_in_unit(d->table, d->unit, std::move(vals)));
    }
    auto trim = [](std::string s) { return s.erase(s.find_last_not_of(' ') + 1) + "\n"; };
    std::string head;
    for (const auto& c : shown) head += (head.empty() ? "" : " ") + table_cell(c.header, c);
    std::string out = trim(head);
    for (size_t i = 0; i < m.ops.size(); ++i) {
        std::string line;
        for (size_t c = 0; c < cols.size(); ++c) {
            const MetricValue v = cols[c]->get(m, i);
            const auto n = metric_number(v);
            const auto s = std::get_if<std::string>(&v);
            line += (line.empty() ? "" : " ") + (n ? table_cell(*n, shown[c]) : table_cell(s ? *s : std::string(), shown[c]));
        }
        out += trim(line);
    }
    out += "\n";
    for (MetricScope scope : {MetricScope::Run, MetricScope::Total})
        for (const MetricDecl* d : metrics_of(scope))
            if (const MetricValue v = d->get(m, 0); has_value(v)) out += fmt::format("{:<22} {}\n", d->name, summary_value(v, d->unit, d->name));
    if (m.static_power_w == 0) out += "NOT MODELED  static energy (energy.static_w = 0)\n";
    if (m.power_limit_w > 0 && m.power_avg_w > m.power_limit_w) out += over_limit_line(m) + "\n";
    if (m.not_modeled != "none") out += fmt::format("NOT MODELED  {}\n", m.not_modeled);
    if (m.approximations != "none")
        out += fmt::format("APPROXIMATE  {} (bounded, not exact; `run --reference` for full detail)\n", m.approximations);
    if (!m.unmodeled_ops.empty())
        out += fmt::format("NOT MODELED  {} operator(s) imported with --allow-unsupported cost zero (unmodeled_ops)\n",
                           m.unmodeled_ops.size());
    return out;
}

}  // namespace

ReportFormat parse_report_format(const std::string& s) {
    if (s == "table") return ReportFormat::Table;
    if (s == "json") return ReportFormat::Json;
    if (s == "csv") return ReportFormat::Csv;
    throw UserError("--format " + s, "must be table, json or csv");
}

std::string metrics_to_json(const Metrics& m) {
    ojson j = object_of(m, metrics_of(MetricScope::Run), 0);
    j["total"] = object_of(m, metrics_of(MetricScope::Total), 0);
    j["ops"] = ojson::array();
    const auto op_decls = metrics_of(MetricScope::Op), component_decls = metrics_of(MetricScope::Component);
    for (size_t i = 0; i < m.ops.size(); ++i) j["ops"].push_back(object_of(m, op_decls, i));
    j["components"] = ojson::array();
    for (size_t i = 0; i < m.components.size(); ++i) j["components"].push_back(object_of(m, component_decls, i));
    return j.dump(2) + "\n";
}

std::string over_limit_line(const Metrics& m) {
    const std::string why = m.power_clock_fixed
                                ? "this model cannot lower the part's clock, so the latency is what the part would reach without its limit "
                                  "(it would throttle)"
                                : "the controller reacts one window late and acts only between operators";
    return fmt::format("OVER LIMIT   average power {:.1f} W exceeds power_limit_w {:.1f} W by {:.1f}%: {}", m.power_avg_w, m.power_limit_w,
                       100 * (m.power_avg_w / m.power_limit_w - 1), why);
}

std::string render_metrics(const Metrics& m, ReportFormat f) {
    if (f == ReportFormat::Json) return metrics_to_json(m);
    if (f == ReportFormat::Csv) return render_csv(m);
    return render_table(m);
}

std::string describe_metrics(ReportFormat f) {
    auto scope_name = [](MetricScope s) {
        switch (s) {
            case MetricScope::Run: return "run";
            case MetricScope::Total: return "total";
            case MetricScope::Op: return "op";
            case MetricScope::Component: return "component";
            case MetricScope::Point: return "point";
            case MetricScope::Training: return "training";
            case MetricScope::Job: return "job";
            case MetricScope::Serving: return "serving";
        }
        return "";
    };
    auto json_path = [](const MetricDecl& d) -> std::string {
        switch (d.scope) {
            case MetricScope::Run: return d.name;
            case MetricScope::Total: return "total." + d.name;
            case MetricScope::Op: return "ops[]." + d.name;
            case MetricScope::Component: return "components[]." + d.name;
            case MetricScope::Point: return "";
            case MetricScope::Training: return "training." + d.name;
            case MetricScope::Job: return "last_run.json:" + d.name;
            case MetricScope::Serving: return "llm.json:" + d.name;
        }
        return "";
    };
    if (f == ReportFormat::Json) {
        ojson j = ojson::array();
        for (const auto& d : metric_catalog())
            j.push_back({{"scope", scope_name(d.scope)}, {"name", d.name}, {"unit", d.unit}, {"metrics_json", json_path(d)},
                         {"csv_column", d.csv}, {"sweep_column", d.sweep}, {"doc", d.doc}});
        return j.dump(2) + "\n";
    }
    std::string out = f == ReportFormat::Csv ? "scope,name,unit,metrics_json,csv_column,sweep_column,doc\n" : "";
    for (const auto& d : metric_catalog()) {
        if (f == ReportFormat::Csv) {
            out += fmt::format("{},{},{},{},{},{},{}\n", scope_name(d.scope), d.name, csv_field(d.unit), json_path(d), d.csv, d.sweep,
                               csv_field(d.doc));
            continue;
        }
        std::string where = json_path(d);
        if (!d.csv.empty()) where += (where.empty() ? "" : ", ") + std::string("csv ") + d.csv;
        if (!d.sweep.empty()) where += (where.empty() ? "" : ", ") + std::string("results ") + d.sweep;
        out += fmt::format("{:<10} {:<22} {:<10} {}\n{:<45}{}\n", scope_name(d.scope), d.name, d.unit.empty() ? "-" : d.unit, d.doc, "",
                           where);
    }
    return out;
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
    return q + "\"";
}

std::optional<double> metric_number(const MetricValue& v) {
    if (auto i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    if (auto u = std::get_if<uint64_t>(&v)) return static_cast<double>(*u);
    if (auto d = std::get_if<double>(&v)) return *d;
    if (auto b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
    return std::nullopt;
}

std::string table_cell(double value, const TableColumn& c) {
    const double x = value * c.scale;
    const bool integral = x == static_cast<double>(static_cast<int64_t>(x));
    const std::string s = c.decimals >= 0   ? fmt::format("{:.{}f}", x, c.decimals)
                          : c.decimals == -2 ? (std::fabs(x) >= 1e5 ? grouped(static_cast<int64_t>(std::llround(x)))  // no exponent
                                                                   : in_unit(x, DisplayUnit{"", 1}, 5))
                          : integral         ? grouped(static_cast<int64_t>(x))  // a count: thousands grouped
                                             : fmt::format("{}", x);
    return c.width < 0 ? fmt::format("{:<{}}", s, -c.width) : fmt::format("{:>{}}", s, c.width);
}

TableColumn column_in_unit(const TableColumn& c, const std::string& unit, std::vector<double> values) {
    for (double& v : values) v = std::fabs(v);
    std::sort(values.begin(), values.end());
    const DisplayUnit u = unit_for(values.empty() ? 0.0 : values[values.size() / 2], unit);
    if (u.suffix.empty()) return c;
    TableColumn out = c;
    out.header = c.header.substr(0, c.header.rfind('_') + 1) + u.suffix;
    out.scale = u.scale;
    out.decimals = -2;
    return out;
}

std::string table_cell(const std::string& text, const TableColumn& c) {
    const size_t w = static_cast<size_t>(c.width < 0 ? -c.width : c.width);
    const std::string s = cut_middle(text, w);  // both ends stay: operator names differ at their ends
    return c.width < 0 ? fmt::format("{:<{}}", s, w) : fmt::format("{:>{}}", s, w);
}

}  // namespace archsim
