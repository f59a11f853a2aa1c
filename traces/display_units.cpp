#include "traces/display_units.h"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace archsim {

namespace {

/// The first unit of `ladder` (largest first) in which `max_v` is at least 1; the last otherwise.
DisplayUnit pick(double max_v, const std::vector<DisplayUnit>& ladder) {
    const double m = std::fabs(max_v);
    for (const auto& u : ladder)
        if (m * u.scale >= 1.0) return u;
    return ladder.back();
}

/// Decimal prefixes P ... (none) on `base`, largest first (k for bytes, K for other counts).
std::vector<DisplayUnit> prefixed(const std::string& base) {
    const std::string k = base == "B" ? "k" : "K";
    return {{"P" + base, 1e-15}, {"T" + base, 1e-12}, {"G" + base, 1e-9}, {"M" + base, 1e-6}, {k + base, 1e-3}, {base, 1}};
}

}  // namespace

std::vector<DisplayUnit> unit_ladder(const std::string& unit) {
    if (unit == "s") return {{"s", 1}, {"ms", 1e3}, {"us", 1e6}, {"ns", 1e9}, {"ps", 1e12}};
    if (unit == "J") return {{"J", 1}, {"mJ", 1e3}, {"uJ", 1e6}, {"nJ", 1e9}, {"pJ", 1e12}};
    if (unit == "bytes" || unit == "B") return prefixed("B");
    if (unit == "W") return {{"MW", 1e-6}, {"kW", 1e-3}, {"W", 1}, {"mW", 1e3}, {"uW", 1e6}};
    return {};
}

DisplayUnit unit_for(double v, const std::string& unit) {
    const std::vector<DisplayUnit> ladder = unit_ladder(unit);
    return ladder.empty() ? DisplayUnit{"", 0} : pick(v, ladder);
}

DisplayUnit time_unit(double max_s) { return pick(max_s, unit_ladder("s")); }

DisplayUnit energy_unit(double max_j) { return pick(max_j, unit_ladder("J")); }

DisplayUnit count_unit(double max_count, const std::string& base) { return pick(max_count, prefixed(base)); }

std::string in_unit(double v, const DisplayUnit& unit, int digits) {
    const double x = v * unit.scale;
    if (x == 0) return "0";
    const int before = std::fabs(x) >= 1 ? static_cast<int>(std::floor(std::log10(std::fabs(x)))) + 1 : 1;
    const int decimals = std::max(0, digits - before);
    if (std::fabs(x) < 1) {  // keep `digits` significant digits of a small value: 0.0450
        const int lead = -static_cast<int>(std::floor(std::log10(std::fabs(x))));
        return fmt::format("{:.{}f}", x, std::min(12, lead + digits - 1));
    }
    return fmt::format("{:.{}f}", x, decimals);
}

std::string with_unit(double v, const std::string& kind, int digits) {
    const DisplayUnit u = unit_ladder(kind).empty() ? count_unit(v, kind) : unit_for(v, kind);
    return in_unit(v, u, digits) + " " + u.suffix;
}

std::string grouped(int64_t n) {
    const std::string digits = std::to_string(n < 0 ? -n : n);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return n < 0 ? "-" + out : out;
}

std::string percent(double fraction, int decimals) { return fmt::format("{:.{}f}%", 100.0 * fraction, decimals); }

std::string rate_unit(const std::string& precision) { return precision.rfind("int", 0) == 0 ? "TOPS" : "TFLOP/s"; }

std::string cut_middle(const std::string& s, size_t width) {
    if (s.size() <= width) return s;
    if (width < 5) return s.substr(0, width);
    const size_t keep = width - 3, head = keep / 2, tail = keep - head;
    return s.substr(0, head) + "..." + s.substr(s.size() - tail);
}

}  // namespace archsim
