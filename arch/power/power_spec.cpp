#include "arch/power/power_spec.h"

#include <algorithm>
#include <cmath>

namespace archsim {

double PowerSpec::vdd_at(double mhz) const {
    if (points.empty()) return 0;
    if (points.size() == 1 || mhz <= points.front().mhz) return points.front().vdd_v;
    size_t i = 1;
    while (i + 1 < points.size() && mhz > points[i].mhz) ++i;
    const VfPoint& a = points[i - 1];
    const VfPoint& b = points[i];
    return a.vdd_v + (b.vdd_v - a.vdd_v) * (mhz - a.mhz) / (b.mhz - a.mhz);
}

double PowerSpec::energy_scale(double mhz) const {
    if (points.size() < 2) return 1.0;
    const double ref = ref_vdd_v > 0 ? ref_vdd_v : vdd_at(nominal_mhz);
    const double v = vdd_at(mhz) / ref;
    return v * v;
}

double PowerSpec::fit_clock_mhz(double onchip_w, double offchip_w, double at_mhz, double target_w) const {
    if (limit_w <= 0 || nominal_mhz <= 0 || at_mhz <= 0) return nominal_mhz;
    const double limit = target_w >= 0 ? target_w : limit_w;
    const double e_at = energy_scale(at_mhz);
    auto power_at = [&](double f) { return static_w + offchip_w + onchip_w * (f / at_mhz) * energy_scale(f) / e_at; };
    if (power_at(nominal_mhz) <= limit) return nominal_mhz;
    double lo = min_mhz > 0 ? std::min(min_mhz, nominal_mhz) : 0.01 * nominal_mhz, hi = nominal_mhz;
    if (power_at(lo) > limit) return lo;
    const double floor_mhz = lo;
    while (hi - lo > 1e-6 * nominal_mhz) {
        const double mid = 0.5 * (lo + hi);
        (power_at(mid) <= limit ? lo : hi) = mid;
    }
    return step_mhz > 0 ? std::max(floor_mhz, std::floor(lo / step_mhz) * step_mhz) : lo;
}

}  // namespace archsim
