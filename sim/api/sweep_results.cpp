#include "workloads/load_workload.h"
#include "sim/api/sweep_results.h"

#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/api/run_model.h"
#include "traces/metric_catalog.h"
#include "traces/metrics_report.h"

namespace archsim {

namespace fs = std::filesystem;
using json = nlohmann::json;

SweepRow failed_row(const SweepPoint& p, const std::string& error) {
    SweepRow r;
    r.index = p.index, r.id = p.id, r.model = workload_name(p.model), r.machine = p.machine, r.kind = p.kind;
    r.axes = p.axes;
    for (const auto& [k, v] : p.axes) {
        if (k == "runtime") r.runtime = v;
        if (k == "precision") r.precision = v;
    }
    r.tags = p.tags;
    // a plan that does not fit its device's memory is a finding, not a fault
    r.status = error.find(kDoesNotFit) != std::string::npos ? "infeasible" : "failed";
    r.error = error;
    return r;
}

namespace {

/// The value at `path` ("a.b") of `j`, or nullptr.
const json* at_path(const json& j, std::string path) {
    std::replace(path.begin(), path.end(), '.', '/');
    const json::json_pointer at("/" + path);
    return j.contains(at) ? &j.at(at) : nullptr;
}

/// A training metric of `training` (metrics.json's object) into row `r`: a scalar at its path, or
/// for "A.*.B" the number at B of every key of A (per key). Absent: nothing.
void read_training_metric(const MetricDecl& d, const json& training, SweepRow& r) {
    const size_t star = d.name.find(".*.");
    if (star == std::string::npos) {
        if (const json* v = at_path(training, d.name); v && v->is_number()) r.values[d.name] = v->get<double>();
        return;
    }
    const json* keyed = at_path(training, d.name.substr(0, star));
    if (!keyed || !keyed->is_object()) return;
    for (const auto& [k, x] : keyed->items())
        if (const json* v = at_path(x, d.name.substr(star + 3)); v && v->is_number()) r.per_key[d.name][k] = v->get<double>();
}

/// The declarations that are sweep results: Run, Total, Point and Training scope with a `sweep` column
/// (the catalogue is immutable, so the list is made once).
const std::vector<const MetricDecl*>& sweep_metrics() {
    static const std::vector<const MetricDecl*> decls = [] {
        std::vector<const MetricDecl*> out;
        for (const auto& d : metric_catalog())
            if (!d.sweep.empty() && d.scope != MetricScope::Op && d.scope != MetricScope::Component)
                out.push_back(&d);
        return out;
    }();
    return decls;
}

}  // namespace

SweepRow row_from_metrics(const SweepPoint& p, const std::string& metrics_json, const std::string& trace) {
    SweepRow r = failed_row(p, "");
    json m;
    try {
        m = json::parse(metrics_json);
    } catch (const std::exception& e) {
        throw UserError(p.id + "/metrics.json", std::string("not JSON: ") + e.what());
    }
    for (const MetricDecl* d : sweep_metrics()) {
        if (d->scope == MetricScope::Point) continue;
        if (d->scope == MetricScope::Training) {  // a training step's; an inference has none
            if (m.contains("training")) read_training_metric(*d, m["training"], r);
            continue;
        }
        const json& at = d->scope == MetricScope::Run ? m : m.contains("total") ? m["total"] : json();
        const std::string where = (d->scope == MetricScope::Run ? "" : "total.") + d->name;
        if (!at.is_object() || !at.contains(d->name))
            throw UserError(p.id + "/metrics.json", "not a metrics report: no " + where);
        const json& v = at[d->name];
        if (is_per_key(d->sweep) && v.is_object()) {
            for (const auto& [k, x] : v.items())
                if (x.is_number()) r.per_key[d->name][k] = x.get<double>();
        } else if (!is_per_key(d->sweep) && v.is_number()) {
            r.values[d->name] = v.get<double>();
        } else {
            throw UserError(p.id + "/metrics.json", "not a metrics report: " + where + " is " + v.type_name());
        }
    }
    if (m.contains("runtime") && m["runtime"].is_string()) r.runtime = m["runtime"].get<std::string>();
    if (m.contains("precision") && m["precision"].is_string()) r.precision = m["precision"].get<std::string>();
    const double batch = p.batch > 0 ? double(p.batch) : 1.0;
    for (const MetricDecl* d : sweep_metrics())
        if (d->scope == MetricScope::Point) r.values[d->name] = d->derive(r.values, batch);
    r.status = "ok";
    r.trace = trace;
    return r;
}

std::optional<double> column_value(const SweepRow& r, const std::string& column) {
    if (column == "index") return double(r.index);
    for (const MetricDecl* d : sweep_metrics()) {
        if (!is_per_key(d->sweep)) {
            if (d->sweep != column) continue;
            auto it = r.values.find(d->name);
            if (it != r.values.end()) return it->second;
            continue;
        }
        auto keys = r.per_key.find(d->name);
        if (keys == r.per_key.end()) continue;
        for (const auto& [k, v] : keys->second)
            if (column_for(d->sweep, k) == column) return v;
    }
    return std::nullopt;
}

std::string sweep_column_names() {
    std::string s;
    for (const MetricDecl* d : sweep_metrics()) s += (s.empty() ? "" : ", ") + column_for(d->sweep, "<key>");
    return s;
}

std::string journal_line(const SweepRow& r) {
    json j;
    j["index"] = r.index, j["id"] = r.id, j["model"] = r.model, j["machine"] = r.machine, j["kind"] = r.kind;
    j["runtime"] = r.runtime, j["precision"] = r.precision;
    j["axes"] = json::array();
    for (const auto& [k, v] : r.axes) j["axes"].push_back({k, v});
    j["tags"] = r.tags;
    j["status"] = r.status, j["error"] = r.error, j["trace"] = r.trace;
    j["values"] = r.values;
    j["per_key"] = r.per_key;
    return j.dump();
}

bool parse_journal_line(const std::string& line, SweepRow& r) {
    json j;
    try {
        j = json::parse(line);
        r = SweepRow{};
        r.index = j.at("index").get<size_t>(), r.id = j.at("id"), r.model = j.at("model"), r.machine = j.at("machine");
        r.kind = j.at("kind");
        r.runtime = j.value("runtime", std::string());  // journals written before the column had none
        r.precision = j.value("precision", std::string());
        for (const auto& a : j.at("axes")) r.axes.emplace_back(a.at(0).get<std::string>(), a.at(1).get<std::string>());
        if (j.contains("tags")) r.tags = j.at("tags").get<std::map<std::string, std::string>>();
        r.status = j.at("status"), r.error = j.at("error"), r.trace = j.at("trace");
        r.values = j.at("values").get<std::map<std::string, double>>();
        r.per_key = j.at("per_key").get<std::map<std::string, std::map<std::string, double>>>();
    } catch (const std::exception&) {
        return false;  // torn, or from an archsim before the declared metrics: the point runs again
    }
    return true;
}

std::vector<SweepRow> rows_from_journal(const std::string& path) {
    std::vector<SweepRow> rows;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        SweepRow r;
        if (!line.empty() && parse_journal_line(line, r)) rows.push_back(std::move(r));  // a torn line: that point runs again
    }
    return rows;
}

namespace {

/// A results column: a name and, per row, a number or a text.
struct Column {
    std::string name;
    bool numeric = true;
    std::vector<double> numbers;
    std::vector<std::string> texts;
};

std::vector<Column> columns_of(std::vector<SweepRow>& rows, const std::vector<std::string>& axis_keys) {
    std::sort(rows.begin(), rows.end(), [](const SweepRow& a, const SweepRow& b) { return a.index < b.index; });
    std::vector<Column> cols;
    auto text = [&](const std::string& name, auto get) {
        Column c{name, false, {}, {}};
        for (const auto& r : rows) c.texts.push_back(get(r));
        cols.push_back(std::move(c));
    };
    auto number = [&](const std::string& name, auto get) {
        Column c{name, true, {}, {}};
        for (const auto& r : rows) c.numbers.push_back(get(r));
        cols.push_back(std::move(c));
    };
    number("index", [](const SweepRow& r) { return double(r.index); });
    text("id", [](const SweepRow& r) { return r.id; });
    text("model", [](const SweepRow& r) { return r.model; });
    text("machine", [](const SweepRow& r) { return r.machine; });
    text("kind", [](const SweepRow& r) { return r.kind; });
    text("runtime", [](const SweepRow& r) { return r.runtime; });
    text("precision", [](const SweepRow& r) { return r.precision; });
    for (const auto& key : axis_keys) {
        if (key == "runtime" || key == "precision") continue;  // the columns above are those axes
        // an axis is numeric if every value it takes is a number
        bool numeric = true;
        std::vector<std::string> vals;
        for (const auto& r : rows) {
            auto it = std::find_if(r.axes.begin(), r.axes.end(), [&](const auto& a) { return a.first == key; });
            vals.push_back(it == r.axes.end() ? "" : it->second);
            if (!vals.back().empty()) {
                char* end = nullptr;
                std::strtod(vals.back().c_str(), &end);
                numeric = numeric && end && *end == '\0';
            }
        }
        Column c{key, numeric, {}, {}};
        for (const auto& v : vals) {
            if (numeric) c.numbers.push_back(v.empty() ? std::nan("") : std::strtod(v.c_str(), nullptr));
            else c.texts.push_back(v);
        }
        cols.push_back(std::move(c));
    }
    std::set<std::string> tag_keys;
    for (const auto& r : rows)
        for (const auto& [k, v] : r.tags) tag_keys.insert(k);
    for (const auto& k : tag_keys)
        text("tag." + k, [&](const SweepRow& r) {
            auto it = r.tags.find(k);
            return it == r.tags.end() ? std::string() : it->second;
        });
    text("status", [](const SweepRow& r) { return r.status; });
    // the declared sweep metrics: scalars first, then one column per key any row has
    const auto& metrics = sweep_metrics();
    for (const MetricDecl* d : metrics)
        if (!is_per_key(d->sweep)) {
            // a training figure is a column when some row has it
            if (d->scope == MetricScope::Training &&
                std::none_of(rows.begin(), rows.end(), [&](const SweepRow& r) { return r.values.count(d->name) > 0; }))
                continue;
            number(d->sweep, [&](const SweepRow& r) {
                auto it = r.values.find(d->name);
                return it == r.values.end() ? std::nan("") : it->second;
            });
        }
    for (const MetricDecl* d : metrics) {
        if (!is_per_key(d->sweep)) continue;
        std::set<std::string> keys;
        for (const auto& r : rows)
            if (auto it = r.per_key.find(d->name); it != r.per_key.end())
                for (const auto& [k, v] : it->second) keys.insert(k);
        for (const auto& k : keys)
            number(column_for(d->sweep, k), [&](const SweepRow& r) {
                auto it = r.per_key.find(d->name);
                if (it == r.per_key.end()) return r.status == "ok" && d->scope != MetricScope::Training ? 0.0 : std::nan("");
                auto at = it->second.find(k);
                return at == it->second.end() ? 0.0 : at->second;
            });
    }
    text("trace", [](const SweepRow& r) { return r.trace; });
    text("error", [](const SweepRow& r) { return r.error; });
    return cols;
}

}  // namespace

void write_results_csv(const std::string& path, std::vector<SweepRow> rows, const std::vector<std::string>& axis_keys) {
    const std::vector<Column> cols = columns_of(rows, axis_keys);
    std::string out;
    for (size_t c = 0; c < cols.size(); ++c) out += (c ? "," : "") + csv_field(cols[c].name);
    out += "\n";
    for (size_t r = 0; r < rows.size(); ++r) {
        for (size_t c = 0; c < cols.size(); ++c) {
            if (c) out += ",";
            if (!cols[c].numeric) out += csv_field(cols[c].texts[r]);
            else if (!std::isnan(cols[c].numbers[r])) out += fmt::format("{:.9g}", cols[c].numbers[r]);
        }
        out += "\n";
    }
    write_file_atomically(path, out);
}

void write_results_h5(const std::string& path, std::vector<SweepRow> rows, const std::vector<std::string>& axis_keys,
                      const std::string& study) {
    const std::vector<Column> cols = columns_of(rows, axis_keys);
    const std::string tmp = temp_path_for(path);
    const hid_t file = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) throw UserError(tmp, "cannot create HDF5 file");
    const hid_t group = H5Gcreate2(file, "results", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t n = rows.size();
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, H5T_VARIABLE);
    H5Tset_cset(str, H5T_CSET_UTF8);
    std::string names;
    bool ok = true;
    for (const auto& c : cols) {
        names += (names.empty() ? "" : "\n") + c.name;  // keys may hold commas
        const hid_t type = c.numeric ? H5T_NATIVE_DOUBLE : str;
        const hid_t ds = H5Dcreate2(group, c.name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (ds < 0) { ok = false; continue; }
        if (n > 0) {
            if (c.numeric) ok = ok && H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, c.numbers.data()) >= 0;
            else {
                std::vector<const char*> ptrs;
                for (const auto& s : c.texts) ptrs.push_back(s.c_str());
                ok = ok && H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) >= 0;
            }
        }
        H5Dclose(ds);
    }
    auto attr = [&](const char* name, const std::string& value) {
        const hid_t s = H5Screate(H5S_SCALAR);
        const hid_t a = H5Acreate2(group, name, str, s, H5P_DEFAULT, H5P_DEFAULT);
        const char* p = value.c_str();
        ok = ok && a >= 0 && H5Awrite(a, str, &p) >= 0;
        if (a >= 0) H5Aclose(a);
        H5Sclose(s);
    };
    attr("study", study);
    attr("columns", names);
    std::string axes;
    for (const auto& k : axis_keys) axes += (axes.empty() ? "" : "\n") + k;
    attr("axes", axes);
    H5Tclose(str);
    H5Sclose(space);
    H5Gclose(group);
    ok = H5Fclose(file) >= 0 && ok;
    if (!ok) throw UserError(tmp, "writing the results failed (disk full?)");
    rename_into_place(tmp, path);
}

}  // namespace archsim
