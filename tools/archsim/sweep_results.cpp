#include "workloads/load_workload.h"
#include "tools/archsim/sweep_results.h"

#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/common/atomic_file.h"
#include "sim/common/error.h"

namespace archsim::cli {

namespace fs = std::filesystem;
using json = nlohmann::json;

SweepRow failed_row(const SweepPoint& p, const std::string& error) {
    SweepRow r;
    r.index = p.index, r.id = p.id, r.model = workload_name(p.model), r.machine = p.machine, r.kind = p.kind;
    r.axes = p.axes;
    r.tags = p.tags;
    r.status = "failed";
    r.error = error;
    return r;
}

SweepRow row_from_metrics(const SweepPoint& p, const std::string& metrics_json, const std::string& trace) {
    SweepRow r = failed_row(p, "");
    json m;
    try {
        m = json::parse(metrics_json);
    } catch (const std::exception& e) {
        throw UserError(p.id + "/metrics.json", std::string("not JSON: ") + e.what());
    }
    const json& t = m.at("total");
    r.status = "ok";
    r.trace = trace;
    r.latency_s = t.at("latency_s").get<double>();
    const double batch = p.batch > 0 ? double(p.batch) : 1.0;
    r.throughput_per_s = r.latency_s > 0 ? batch / r.latency_s : 0;
    r.energy_j = t.at("energy_j").get<double>();
    r.macs = t.at("macs").get<double>();
    r.utilization = t.at("utilization").get<double>();
    const double cycles = t.at("latency_cycles").get<double>();
    r.stall_share = cycles > 0 ? t.at("stall_cycles").get<double>() / cycles : 0;
    r.peak_macs_per_cycle = t.at("peak_macs_per_cycle").get<double>();
    r.clock_hz = m.at("clock_hz").get<double>();
    for (const auto& [k, v] : t.at("traffic_bytes").items()) r.traffic_bytes[k] = v.get<double>();
    if (t.contains("energy_breakdown_j"))
        for (const auto& [k, v] : t.at("energy_breakdown_j").items()) r.energy_j_by_part[k] = v.get<double>();
    return r;
}

std::string journal_line(const SweepRow& r) {
    json j;
    j["index"] = r.index, j["id"] = r.id, j["model"] = r.model, j["machine"] = r.machine, j["kind"] = r.kind;
    j["axes"] = json::array();
    for (const auto& [k, v] : r.axes) j["axes"].push_back({k, v});
    j["tags"] = r.tags;
    j["status"] = r.status, j["error"] = r.error, j["trace"] = r.trace;
    j["latency_s"] = r.latency_s, j["throughput_per_s"] = r.throughput_per_s, j["energy_j"] = r.energy_j;
    j["macs"] = r.macs, j["utilization"] = r.utilization, j["stall_share"] = r.stall_share;
    j["peak_macs_per_cycle"] = r.peak_macs_per_cycle, j["clock_hz"] = r.clock_hz;
    j["traffic_bytes"] = r.traffic_bytes;
    j["energy_j_by_part"] = r.energy_j_by_part;
    return j.dump();
}

bool parse_journal_line(const std::string& line, SweepRow& r) {
    json j;
    try {
        j = json::parse(line);
        r = SweepRow{};
        r.index = j.at("index").get<size_t>(), r.id = j.at("id"), r.model = j.at("model"), r.machine = j.at("machine");
        r.kind = j.at("kind");
        for (const auto& a : j.at("axes")) r.axes.emplace_back(a.at(0).get<std::string>(), a.at(1).get<std::string>());
        if (j.contains("tags")) r.tags = j.at("tags").get<std::map<std::string, std::string>>();
        r.status = j.at("status"), r.error = j.at("error"), r.trace = j.at("trace");
        r.latency_s = j.at("latency_s"), r.throughput_per_s = j.at("throughput_per_s"), r.energy_j = j.at("energy_j");
        r.macs = j.at("macs"), r.utilization = j.at("utilization"), r.stall_share = j.at("stall_share");
        r.peak_macs_per_cycle = j.at("peak_macs_per_cycle"), r.clock_hz = j.at("clock_hz");
        r.traffic_bytes = j.at("traffic_bytes").get<std::map<std::string, double>>();
        r.energy_j_by_part = j.at("energy_j_by_part").get<std::map<std::string, double>>();
    } catch (const std::exception&) {
        return false;
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
    std::set<std::string> levels, parts;
    for (const auto& r : rows) {
        for (const auto& [k, v] : r.traffic_bytes) levels.insert(k);
        for (const auto& [k, v] : r.energy_j_by_part) parts.insert(k);
    }
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
    for (const auto& key : axis_keys) {
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
    number("latency_s", [](const SweepRow& r) { return r.latency_s; });
    number("throughput_per_s", [](const SweepRow& r) { return r.throughput_per_s; });
    number("energy_j", [](const SweepRow& r) { return r.energy_j; });
    number("macs", [](const SweepRow& r) { return r.macs; });
    number("utilization", [](const SweepRow& r) { return r.utilization; });
    number("stall_share", [](const SweepRow& r) { return r.stall_share; });
    number("peak_macs_per_cycle", [](const SweepRow& r) { return r.peak_macs_per_cycle; });
    number("clock_hz", [](const SweepRow& r) { return r.clock_hz; });
    for (const auto& l : levels)
        number("traffic_" + l + "_bytes", [&](const SweepRow& r) {
            auto it = r.traffic_bytes.find(l);
            return it == r.traffic_bytes.end() ? 0.0 : it->second;
        });
    for (const auto& p : parts)
        number("energy_" + p + "_j", [&](const SweepRow& r) {
            auto it = r.energy_j_by_part.find(p);
            return it == r.energy_j_by_part.end() ? 0.0 : it->second;
        });
    text("trace", [](const SweepRow& r) { return r.trace; });
    text("error", [](const SweepRow& r) { return r.error; });
    return cols;
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
    return q + "\"";
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
    H5Tclose(str);
    H5Sclose(space);
    H5Gclose(group);
    ok = H5Fclose(file) >= 0 && ok;
    if (!ok) throw UserError(tmp, "writing the results failed (disk full?)");
    rename_into_place(tmp, path);
}

}  // namespace archsim::cli
