#pragma once
// archsim's one unit policy for what a person reads: tables, summaries, plots and report.html
// (docs/units.md). Precise values stay in JSON, CSV and HDF5, always in base SI units (s, J, B,
// MAC, Hz) with the unit in the name; everything printed for reading goes through these.
#include <cstdint>
#include <string>
#include <vector>

namespace archsim {

/// An engineering unit picked for a whole column: values are multiplied by `scale` and the
/// header carries `suffix` ("ms", "mJ", "GMAC").
struct DisplayUnit {
    std::string suffix;
    double scale = 1;
};

/// The unit of a column of times whose largest magnitude is `max_s` seconds: the largest of
/// s, ms, us, ns, ps in which that value is at least 1 (ps below), so every value in the column
/// reads with at most three digits before the point.
DisplayUnit time_unit(double max_s);
/// The same for energies in joules: J, mJ, uJ, nJ, pJ.
DisplayUnit energy_unit(double max_j);
/// The same for a count of `base` things ("MAC", "B", "FLOP"): K, M, G, T, P prefixes by 1000
/// ("GMAC"); B uses the same decimal prefixes (kB, MB, GB: 1 GB = 1e9 B).
DisplayUnit count_unit(double max_count, const std::string& base);

/// Every unit a quantity in metric unit `unit` may be shown in, largest first: "s" (s ... ps),
/// "J" (J ... pJ), "bytes" or "B" (PB ... B), "W" (MW ... uW); empty for any other unit (shown as it is).
std::vector<DisplayUnit> unit_ladder(const std::string& unit);
/// The unit of `unit_ladder(unit)` for a typical value `v`: time_unit, energy_unit or
/// count_unit(v, "B"); an empty suffix (scale 0) when the unit has no ladder.
DisplayUnit unit_for(double v, const std::string& unit);

/// `v` in `unit` with `digits` significant digits, no exponent ("12.3", "0.0450").
std::string in_unit(double v, const DisplayUnit& unit, int digits = 3);
/// `v` with its own engineering unit: "2.88 GMAC", "450 us", "1.2 mJ" (`digits` significant digits).
std::string with_unit(double v, const std::string& kind, int digits = 3);
/// A count as an integer with thousands grouped by commas: 1234567 -> "1,234,567".
std::string grouped(int64_t n);
/// A fraction (0..1) as a percentage with `decimals` places: 0.1234 -> "12.3%".
std::string percent(double fraction, int decimals = 1);
/// The unit of an arithmetic rate at `precision`: "TFLOP/s" for floating point, "TOPS" for
/// integer (int8) operations, as vendors write them.
std::string rate_unit(const std::string& precision);
/// `s` cut to `width` characters by an ellipsis in the middle, so that both ends stay
/// ("/features/fea...conv.0.2/Clip"): operator names differ mostly at their ends.
std::string cut_middle(const std::string& s, size_t width);

}  // namespace archsim
