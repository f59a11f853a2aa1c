#include "sim/api/calibrate_parts.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "sim/base/error.h"

namespace archsim {

Stats stats_of(const std::vector<const Row*>& rows, const std::vector<double>& predicted) {
    Stats s;
    s.n = rows.size();
    if (rows.empty()) return s;
    double mean = 0;
    for (const Row* r : rows) mean += std::log10(r->measured_s);
    mean /= double(rows.size());
    double ss_res = 0, ss_tot = 0;
    s.min_err = 1e300, s.max_err = -1e300;
    for (size_t i = 0; i < rows.size(); ++i) {
        const double e = 100.0 * (predicted[i] - rows[i]->measured_s) / rows[i]->measured_s;
        s.mape += std::fabs(e) / double(rows.size());
        s.min_err = std::min(s.min_err, e), s.max_err = std::max(s.max_err, e);
        const double lm = std::log10(rows[i]->measured_s);
        ss_res += std::pow(std::log10(predicted[i]) - lm, 2);
        ss_tot += std::pow(lm - mean, 2);
    }
    s.r2_log = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
    return s;
}

double median(std::vector<double> v) {
    if (v.empty()) return 1;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void write_applied(const std::string& arch, const std::string& out, const std::vector<Setting>& settings,
                   const std::string& note) {
    std::ifstream in(arch);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::vector<bool> placed(settings.size(), false);
    std::map<std::string, size_t> table_end;  // table -> index after its last key line
    std::string table;
    for (size_t n = 0; n < lines.size(); ++n) {
        std::string& l = lines[n];
        const size_t first = l.find_first_not_of(" \t");
        if (first == std::string::npos || l[first] == '#') continue;
        if (l[first] == '[') {
            table = l.substr(first, l.find(']') - first + 1);
            table_end[table] = n + 1;
            continue;
        }
        const size_t eq = l.find('=');
        if (eq == std::string::npos) continue;
        if (!table.empty()) table_end[table] = n + 1;
        std::string key = l.substr(first, eq - first);
        key.erase(key.find_last_not_of(" \t") + 1);
        for (size_t i = 0; i < settings.size(); ++i)
            if (settings[i].table == table && settings[i].key == key) {
                l = settings[i].key + " = " + settings[i].value + "    # " + note;
                placed[i] = true;
            }
    }
    auto line_of = [&](const Setting& s) { return s.key + " = " + s.value + "    # " + note; };
    std::map<size_t, std::vector<std::string>> inserts;  // before line index
    std::vector<std::string> top, tail;
    for (size_t i = 0; i < settings.size(); ++i) {
        if (placed[i]) continue;
        const Setting& s = settings[i];
        if (s.table.empty()) top.push_back(line_of(s));
        else if (table_end.count(s.table)) inserts[table_end[s.table]].push_back(line_of(s));
        else tail.insert(tail.end(), {"", s.table, line_of(s)});
    }
    std::ofstream o(out);
    o << "# " << note << ": a copy of " << arch << "\n";
    for (const auto& l : top) o << l << "\n";
    for (size_t n = 0; n <= lines.size(); ++n) {
        if (inserts.count(n))
            for (const auto& l : inserts[n]) o << l << "\n";
        if (n < lines.size()) o << lines[n] << "\n";
    }
    for (const auto& l : tail) o << l << "\n";
    if (!o) throw UserError(out, "cannot write the calibrated config");
}

}  // namespace archsim
