#pragma once
// Parsing times the user types ("12.5us", "3ms", "400ns", "1000ps", "2s"): always with a unit.
#include <map>
#include <string>

#include "sim/base/error.h"

namespace archsim {

/// `s` in picoseconds; `what` names the option in the UserError thrown for anything else (a
/// number other than 0 without its unit, a negative value, an unknown unit, not a number).
inline double parse_time_ps(const std::string& s, const std::string& what) {
    size_t pos = 0;
    double v = -1;
    try {
        v = std::stod(s, &pos);
    } catch (...) {
        v = -1;
    }
    static const std::map<std::string, double> scale = {{"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}};
    if (v == 0 && pos == s.size()) return 0;  // zero is zero in any unit
    if (v >= 0 && pos == s.size())
        throw UserError(what + " " + s, "a time needs its unit (ps, ns, us, ms or s: e.g. " + s + "us)");
    auto it = v < 0 ? scale.end() : scale.find(s.substr(pos));
    if (it == scale.end()) throw UserError(what + " " + s, "not a time (e.g. 12.5us, 3ms, 400ns, 1000ps)");
    return v * it->second;
}

}  // namespace archsim
