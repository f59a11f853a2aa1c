#include "arch/power/power_controller.h"

#include <algorithm>

namespace archsim {

/// The controller aims this fraction below the limit, so that the last window (whose overshoot
/// nothing after it pays back) rarely takes the run's average over it. An assumption: vendors
/// publish no guard band.
constexpr double kGuardBand = 0.02;

PowerController::PowerController(PowerSpec spec)
    : m_spec(std::move(spec)), m_clock_mhz(m_spec.nominal_mhz), m_scale(m_spec.energy_scale(m_spec.nominal_mhz)),
      m_scale_nominal(m_scale) {
    if (m_spec.initial_onchip_w > 0 && m_spec.limit_w > 0) {
        m_clock_mhz = m_spec.fit_clock_mhz(m_spec.initial_onchip_w, 0, m_spec.nominal_mhz);
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
    if (m_spec.limit_w > 0) {
        // the next window's target: the limit, less what the run so far drew above it, spread over
        // the next window (taken to last as long as this one, at least window_us: neighbouring
        // operators run alike), so the run's average comes back within the limit
        const double window_s = std::max(m_spec.window_us * 1e-6, dt_ps * 1e-12);
        const double aim_w = m_spec.limit_w * (1 - kGuardBand);
        const double target_w = aim_w + (aim_w * m_time_s - m_energy_j) / window_s;
        m_clock_mhz = target_w <= m_spec.static_w ? m_spec.fit_clock_mhz(on_pj / dt_ps, off_pj / dt_ps, m_clock_mhz, m_spec.static_w * (1 + 1e-9))
                                                 : m_spec.fit_clock_mhz(on_pj / dt_ps, off_pj / dt_ps, m_clock_mhz, target_w);
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
