#include "arch/power/power_controller.h"

#include <algorithm>

namespace archsim {

/// The controller aims this fraction below the limit, so that the last window (whose overshoot
/// nothing after it pays back) rarely takes the run's average over it. An assumption: vendors
/// publish no guard band.
constexpr double kGuardBand = 0.02;
/// Headroom the controller may bank, in windows at the aim (an assumption, like RAPL's time
/// window: a burst may use what the last few windows left unused).
constexpr double kBankWindows = 10;

PowerController::PowerController(PowerSpec spec)
    : m_spec(std::move(spec)), m_clock_mhz(m_spec.nominal_mhz), m_scale(m_spec.energy_scale(m_spec.nominal_mhz)),
      m_scale_nominal(m_scale) {
    if (m_spec.bound_onchip_w > 0 && m_spec.limit_w > 0 && !m_spec.fixed_clock) {
        m_clock_mhz = m_spec.fit_clock_mhz(m_spec.bound_onchip_w, 0, m_spec.nominal_mhz, m_spec.limit_w * (1 - kGuardBand));
        m_scale = m_spec.energy_scale(m_clock_mhz);
    }
}

void PowerController::close(double now_ps, double onchip_ref_pj, double offchip_pj) {
    const double dt_ps = now_ps - m_start_ps;
    if (dt_ps <= 0) return;
    const double on_pj = (onchip_ref_pj - m_onchip_pj) * m_scale, off_pj = offchip_pj - m_offchip_pj;
    const double p_w = (on_pj + off_pj) / dt_ps + m_spec.static_w;  // pJ per ps = W
    m_samples.push_back({m_start_ps, dt_ps, p_w, m_clock_mhz});
    // the same work at the nominal clock and voltage: on-chip energy rescaled, time x f / f_nominal
    const double ratio = m_clock_mhz / m_spec.nominal_mhz;
    const double on_nominal_pj = on_pj / m_scale * m_scale_nominal, t_nominal_s = dt_ps * ratio * 1e-12;
    m_unthrottled_j += (on_nominal_pj + off_pj) * 1e-12 + m_spec.static_w * t_nominal_s;
    m_unthrottled_s += t_nominal_s;
    m_energy_j += (on_pj + off_pj) * 1e-12 + m_spec.static_w * dt_ps * 1e-12;
    m_time_s += dt_ps * 1e-12;
    if (m_spec.limit_w > 0 && !m_spec.fixed_clock) {
        const double aim_w = m_spec.limit_w * (1 - kGuardBand), dt_s = dt_ps * 1e-12;
        const double floor_w = m_spec.static_w * (1 + 1e-9);
        m_longest_s = std::max(m_longest_s, dt_s);
        // feedback: the next window aims at the limit less what the run so far drew above it,
        // spread over a window as long as this one (at least window_us: neighbouring operators run
        // alike), so the run's average comes back within the limit
        const double over_j = std::max(0.0, m_energy_j - aim_w * m_time_s);
        const double target_w = aim_w - over_j / std::max(m_spec.window_us * 1e-6, dt_s);
        m_clock_mhz = m_spec.fit_clock_mhz(on_pj / dt_ps, off_pj / dt_ps, m_clock_mhz, std::max(floor_w, target_w));
        if (m_spec.bound_onchip_w > 0) {
            // and never a clock at which the fabric's worst case, over the longest window seen,
            // would draw more than the aim plus the headroom banked below it (at most kBankWindows
            // windows at the aim: the averaging horizon a running-average limiter keeps)
            const double banked_j = std::min(aim_w * m_time_s - m_energy_j, kBankWindows * aim_w * m_longest_s);
            const double bound_target_w = aim_w + banked_j / m_longest_s;
            m_clock_mhz = std::min(m_clock_mhz, m_spec.fit_clock_mhz(m_spec.bound_onchip_w, 0, m_spec.nominal_mhz,
                                                                     std::max(floor_w, bound_target_w)));
        }
        m_scale = m_spec.energy_scale(m_clock_mhz);
    }
    m_start_ps = now_ps, m_onchip_pj = onchip_ref_pj, m_offchip_pj = offchip_pj;
}

bool PowerController::at_boundary(double now_ps, double onchip_ref_pj, double offchip_pj) {
    if (now_ps - m_start_ps < m_spec.window_us * 1e6) return false;
    const double before = m_clock_mhz;
    close(now_ps, onchip_ref_pj, offchip_pj);
    return m_clock_mhz != before;
}

void PowerController::finish(double end_ps, double onchip_ref_pj, double offchip_pj) { close(end_ps, onchip_ref_pj, offchip_pj); }

double PowerController::peak_w() const {
    double p = 0;
    for (const auto& s : m_samples) p = std::max(p, s.power_w);
    return p;
}

}  // namespace archsim
