#include "tools/archsim/report.h"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <optional>

#include "sim/base/error.h"
#include "sim/api/process_pool.h"
#include "traces/display_units.h"
#include "traces/metric_catalog.h"
#include "traces/metrics_report.h"
#include "sim/api/study.h"
#include "sim/api/sweep_results.h"
#include "workloads/training/training_step.h"

namespace archsim::cli {

namespace fs = std::filesystem;

namespace {

/// A column of a row: text (model, machine, axes, ...) or a number (totals, numeric axes).
std::optional<std::string> text_of(const SweepRow& r, const std::string& key) {
    if (key == "study") return r.study;
    if (key == "model") return r.model;
    if (key == "machine") return r.machine;
    if (key == "kind") return r.kind;
    if (key == "runtime") return r.runtime;
    if (key == "precision") return r.precision;
    if (key == "status") return r.status;
    if (key == "id") return r.id;
    for (const auto& [k, v] : r.axes)
        if (k == key) return v;
    if (key.rfind("tag.", 0) == 0) {
        auto it = r.tags.find(key.substr(4));
        if (it != r.tags.end()) return it->second;
    }
    return std::nullopt;
}

std::optional<double> number_of(const SweepRow& r, const std::string& key) {
    if (auto v = column_value(r, key)) return v;
    if (auto t = text_of(r, key)) {
        char* end = nullptr;
        const double v = std::strtod(t->c_str(), &end);
        if (end && *end == '\0' && !t->empty()) return v;
    }
    return std::nullopt;
}

struct Filter {
    std::string key, op, value;
    double scale = 1;  ///< the shown column's scale: a filter on latency_ms compares latency_s x 1e3
};

/// A column a user may name in --where / --sort: a results column or a text column as is, or a
/// column of the report's table by its shown header (latency_ms -> latency_s x 1e3).
struct ColumnRef {
    std::string key;
    double scale = 1;
};

/// Resolves `name` against the columns the rows have; throws UserError naming `flag` and the
/// known columns when no row has such a column.
ColumnRef resolve_column(const std::string& name, const std::vector<SweepRow>& rows, const std::string& flag) {
    // a table header in any unit the policy may pick for it (column_in_unit): latency_us, energy_uJ, DRAM_GB
    for (const auto& d : metric_catalog()) {
        if (d.report.header.empty() || d.sweep.empty()) continue;
        if (d.report.key == "*") {  // one column per key: "forward_ms" is phase_forward_s x 1e3
            const std::string tail = d.report.header.substr(d.report.header.find("{}") + 2);  // "_ms"
            const std::string stem_tail = tail.substr(0, tail.rfind('_') + 1);               // "_"
            for (const auto& u : unit_ladder(d.unit)) {
                const std::string end = stem_tail + u.suffix;
                if (name.size() <= end.size() || name.compare(name.size() - end.size(), end.size(), end) != 0) continue;
                const std::string col = column_for(d.sweep, name.substr(0, name.size() - end.size()));
                for (const auto& r : rows)
                    if (column_value(r, col)) return {col, u.scale};
            }
            continue;
        }
        const std::string col = d.report.key.empty() ? d.sweep : column_for(d.sweep, d.report.key);
        if (d.report.header == name) return {col, d.report.scale};
        const std::string stem = d.report.header.substr(0, d.report.header.rfind('_') + 1);
        for (const auto& u : unit_ladder(d.unit))
            if (name == stem + u.suffix) return {col, u.scale};
    }
    for (const auto& r : rows)
        if (text_of(r, name) || column_value(r, name)) return {name, 1};
    if (rows.empty()) return {name, 1};
    std::string shown, axes;
    for (const auto& d : metric_catalog())
        if (!d.report.header.empty() && d.report.key.empty() && !d.sweep.empty()) shown += ", " + d.report.header;
    for (const auto& [k, v] : rows[0].axes) axes += ", " + k;
    throw UserError(flag, "unknown column '" + name + "' (model, machine, kind, runtime, id, status" + axes + shown + ", " +
                              sweep_column_names() + ")");
}

/// One column of the report's table: a declared metric, and for a per-key one the key shown.
struct ReportColumn {
    const MetricDecl* decl = nullptr;
    std::string key;
    /// Its results column ("latency_s", "traffic_dram_bytes", "phase_forward_s").
    std::string column() const { return key.empty() ? decl->sweep : column_for(decl->sweep, key); }
    /// Its header before the unit policy picks the unit ("{}_ms" filled with the key).
    TableColumn header() const {
        TableColumn c = decl->report;
        if (const size_t at = c.header.find("{}"); at != std::string::npos) c.header.replace(at, 2, key);
        c.key = key;
        return c;
    }
};

/// The columns of a table of `rows`: for training steps (`training`) the training metrics' first
/// (step time, samples/s, MFU, HFU, memory peak, each phase's time), then the run's totals and the
/// point's derived values, less those that mean something for an inference only (inf/s, mJ/inf,
/// the whole run's latency); for inferences the totals and derived values.
std::vector<ReportColumn> report_columns(const std::vector<SweepRow>& rows, bool training) {
    std::vector<ReportColumn> cols;
    auto add = [&](const MetricDecl& d) {
        if (d.report.key != "*") {
            cols.push_back({&d, d.report.key});
            return;
        }
        std::vector<std::string> keys;  // the keys the rows have; training phases in the order they run
        for (const auto& r : rows)
            if (auto it = r.per_key.find(d.name); it != r.per_key.end())
                for (const auto& [k, v] : it->second)
                    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        std::vector<std::string> phases;
        for (int p = 0; p <= static_cast<int>(TrainingPhase::Optimizer); ++p) phases.push_back(to_string(static_cast<TrainingPhase>(p)));
        auto rank = [&](const std::string& k) { return std::find(phases.begin(), phases.end(), k) - phases.begin(); };
        std::stable_sort(keys.begin(), keys.end(), [&](const std::string& x, const std::string& y) { return rank(x) < rank(y); });
        for (const auto& k : keys) cols.push_back({&d, k});
    };
    if (training)
        for (const auto& d : metric_catalog())
            if (d.scope == MetricScope::Training && !d.report.header.empty()) add(d);
    for (const auto& d : metric_catalog())
        if ((d.scope == MetricScope::Total || d.scope == MetricScope::Point) && !d.report.header.empty() && !(training && d.inference_only))
            add(d);
    return cols;
}

Filter parse_filter(const std::string& s) {
    for (const char* op : {"!=", "=", "<", ">"}) {
        const size_t at = s.find(op);
        if (at != std::string::npos && at > 0) return {s.substr(0, at), op, s.substr(at + std::strlen(op))};
    }
    throw UserError("--where " + s, "expected KEY=VALUE, KEY!=VALUE, KEY<NUMBER or KEY>NUMBER");
}

bool passes(const SweepRow& r, const Filter& f) {
    if (f.op == "=" || f.op == "!=") {
        const auto t = text_of(r, f.key);
        bool eq = t && *t == f.value;
        if (!t) {
            const auto n = number_of(r, f.key);
            char* end = nullptr;
            const double v = std::strtod(f.value.c_str(), &end);
            eq = n && end && *end == '\0' && *n * f.scale == v;
        }
        return f.op == "=" ? eq : !eq;
    }
    const auto n = number_of(r, f.key);
    char* end = nullptr;
    const double v = std::strtod(f.value.c_str(), &end);
    if (!end || *end != '\0') throw UserError("--where " + f.key + f.op + f.value, "not a number");
    return n && (f.op == "<" ? *n * f.scale < v : *n * f.scale > v);
}

}  // namespace

/// The study a sweep folder holds: the `name` of its study.toml copy, else the folder's name.
std::string study_of(const std::string& dir) {
    const fs::path copy = fs::path(dir) / "study.toml";
    try {
        if (fs::exists(copy)) return study_name(copy.string());
    } catch (const UserError&) {
        // an unreadable copy: the folder's name still tells the studies apart
    }
    return fs::path(dir).lexically_normal().filename().string();
}

int cmd_report(const ReportArgs& a) {
    if (a.dirs.empty()) throw UserError("report", "give a sweep's --out folder");
    if (a.dirs.size() == 1 && is_serving_output(a.dirs[0])) return report_serving(a.dirs[0], a.plots);
    if (a.dirs.size() > 1 && a.out_dir.empty() && a.plots)
        throw UserError("report " + a.dirs[0] + " " + a.dirs[1], "several studies: give --out DIR for their plots and report.html");
    std::vector<SweepRow> all, rows;
    std::vector<std::string> studies;
    for (const auto& dir : a.dirs) {
        const std::string journal = (fs::path(dir) / "results.jsonl").string();
        if (!fs::exists(journal)) throw UserError(dir, "no sweep results here (results.jsonl missing)");
        const std::string study = study_of(dir);
        studies.push_back(study);
        for (SweepRow& r : rows_from_journal(journal)) {
            r.study = study;
            all.push_back(std::move(r));
        }
    }
    const bool several = a.dirs.size() > 1;
    std::vector<Filter> filters;
    for (const auto& w : a.where) {
        Filter f = parse_filter(w);
        const ColumnRef c = resolve_column(f.key, all, "--where " + w);
        f.key = c.key;
        f.scale = c.scale;
        filters.push_back(f);
    }
    const std::string sort_key = resolve_column(a.sort, all, "--sort " + a.sort).key;
    std::vector<std::string> axis_keys;
    for (const auto& r : all)
        for (const auto& [k, v] : r.axes)
            if (std::find(axis_keys.begin(), axis_keys.end(), k) == axis_keys.end()) axis_keys.push_back(k);
    size_t failed = 0;
    for (const auto& r : all) {
        if (r.status != "ok") { ++failed; continue; }
        if (std::all_of(filters.begin(), filters.end(), [&](const Filter& f) { return passes(r, f); })) rows.push_back(r);
    }
    std::sort(rows.begin(), rows.end(), [](const SweepRow& x, const SweepRow& y) { return x.index < y.index; });
    std::stable_sort(rows.begin(), rows.end(), [&](const SweepRow& x, const SweepRow& y) {
        const auto nx = number_of(x, sort_key), ny = number_of(y, sort_key);
        if (nx && ny) return *nx < *ny;
        return text_of(x, sort_key).value_or("") < text_of(y, sort_key).value_or("");
    });
    // the unit policy (docs/units.md): a column of times, energies or bytes takes the engineering
    // unit its typical (median) value needs, named in its header (latency_us, energy_mJ, DRAM_MB)
    auto column_unit = [&](const ReportColumn& c, const std::vector<SweepRow>& rs) -> TableColumn {
        std::vector<double> vals;
        for (const auto& r : rs)
            if (auto v = column_value(r, c.column())) vals.push_back(*v);
        return column_in_unit(c.header(), c.decl->unit, std::move(vals));
    };
    // a table of `rs` with `cols`, its first `limit` rows (0: all) and a line saying how many more
    auto table = [&](const std::vector<SweepRow>& rs, const std::vector<ReportColumn>& cols, size_t limit) {
        size_t sw = 5;
        for (const auto& r : rs) sw = std::max(sw, r.study.size());
        std::string head = (several ? fmt::format("{:<{}} ", "study", sw) : "") + fmt::format("{:<18} {:<20}", "machine", "model");
        for (const auto& k : axis_keys) head += fmt::format(" {:>{}}", k, std::max<size_t>(12, k.size()));
        std::vector<TableColumn> shown;
        for (const auto& c : cols) shown.push_back(column_unit(c, rs));
        for (const auto& c : shown) head += " " + table_cell(c.header, c);
        std::string out = head + "\n";
        const size_t n = limit > 0 ? std::min(limit, rs.size()) : rs.size();
        for (size_t i = 0; i < n; ++i) {
            const SweepRow& r = rs[i];
            if (several) out += fmt::format("{:<{}} ", r.study, sw);
            out += fmt::format("{:<18} {:<20}", r.machine, r.model);
            for (const auto& k : axis_keys) out += fmt::format(" {:>{}}", text_of(r, k).value_or("-"), std::max<size_t>(12, k.size()));
            for (size_t c = 0; c < cols.size(); ++c) {
                const auto v = column_value(r, cols[c].column());
                out += " " + (v ? table_cell(*v, shown[c]) : table_cell(std::string("-"), shown[c]));
            }
            out += "\n";
        }
        if (n < rs.size())
            out += fmt::format("... and {} more (the first {} by {} shown; --all prints every row, --limit N the first N)\n",
                               grouped(static_cast<int64_t>(rs.size() - n)), n, a.sort);
        return out;
    };
    // Pareto fronts, one per model (machines compete on the same workload): no other point of the
    // model is at least as good on both latency and energy per sample and better on one (energy
    // per sample, not per run, so that points of different batch sizes compare)
    std::vector<SweepRow> pareto;
    std::vector<std::string> models;
    for (const auto& r : rows)
        if (std::find(models.begin(), models.end(), r.model) == models.end()) models.push_back(r.model);
    for (const auto& model : models) {
        std::vector<SweepRow> front;
        for (const auto& r : rows)
            if (r.model == model) front.push_back(r);
        auto latency = [](const SweepRow& r) { return r.values.at("latency_s"); };
        auto energy = [](const SweepRow& r) { return r.values.at("energy_per_inference_j"); };
        std::sort(front.begin(), front.end(), [&](const SweepRow& x, const SweepRow& y) {
            return latency(x) != latency(y) ? latency(x) < latency(y) : energy(x) < energy(y);
        });
        double best = std::numeric_limits<double>::infinity();
        for (const auto& r : front)
            if (energy(r) < best) { pareto.push_back(r); best = energy(r); }
    }
    std::string out;
    if (several) {
        out += "studies:";
        for (size_t i = 0; i < a.dirs.size(); ++i) out += fmt::format(" {} ({})", studies[i], a.dirs[i]);
        out += "\n";
    }
    out += fmt::format("{} finished points ({} pass the filters, {} failed), sorted by {}\n", all.size() - failed, rows.size(), failed, a.sort);
    // training steps and inferences report their own metrics, each in a table of its own
    std::vector<SweepRow> training_rows, inference_rows;
    for (const auto& r : rows) (r.values.count("step_time_s") ? training_rows : inference_rows).push_back(r);
    const size_t limit = a.all ? 0 : static_cast<size_t>(a.limit);
    if (!inference_rows.empty() || training_rows.empty()) {
        if (!training_rows.empty()) out += fmt::format("\ninferences ({} points)\n", inference_rows.size());
        out += "\n" + table(inference_rows, report_columns(inference_rows, false), limit);
    }
    if (!training_rows.empty()) {
        out += fmt::format("\ntraining steps ({} points: step time, samples/s, MFU and HFU, memory peak, time per phase)\n",
                           training_rows.size());
        out += table(training_rows, report_columns(training_rows, true), limit);
    }
    out += fmt::format("\nPareto front per model, latency vs energy per sample ({} points):\n", pareto.size());
    const bool pareto_training = !pareto.empty() && pareto.front().values.count("step_time_s");
    out += table(pareto, report_columns(pareto, pareto_training), limit);
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    if (rows.empty() && !filters.empty() && all.size() > failed) {
        std::string w;
        for (const auto& x : a.where) w += (w.empty() ? "" : " ") + std::string("--where ") + x;
        std::fprintf(stderr, "archsim: warning: %s: %s matches none of the %zu finished points; nothing to report\n", a.dirs[0].c_str(),
                     w.c_str(), all.size() - failed);
        return 1;
    }
    if (!a.plots) return 0;
    std::vector<std::string> args = {std::string(ARCHSIM_SOURCE_DIR) + "/tools/plot_sweep.py"};
    args.insert(args.end(), a.dirs.begin(), a.dirs.end());
    if (!a.out_dir.empty()) {
        fs::create_directories(a.out_dir);
        args.insert(args.end(), {"--out", a.out_dir});
    }
    for (const auto& f : filters)  // the plots take the equality filters, by results column
        if (f.op == "=" && f.scale == 1) args.insert(args.end(), {"--where", f.key + "=" + f.value});
    if (!exited_ok(run_program("/usr/bin/python3", args))) {
        std::fprintf(stderr, "archsim report: the plots failed (tools/plot_sweep.py; needs python3-matplotlib and python3-h5py)\n");
        return 1;
    }
    std::fprintf(stderr, "archsim report: wrote %s/report.html and its plots/\n", (a.out_dir.empty() ? a.dirs[0] : a.out_dir).c_str());
    return 0;
}

}  // namespace archsim::cli
