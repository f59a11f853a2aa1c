#pragma once
// The power controller every machine kind shares: it watches the energy a run's events cost,
// window by window, and sets the clock (and with it the supply voltage) for what follows so that
// the window's average power stays within the part's limit (power_spec.h).
#include <vector>

#include "arch/power/power_spec.h"
#include "traces/trace_event.h"

namespace archsim {

/// Run at operator boundaries (a clock never changes inside an operator). Once spec.window_us has
/// passed since the last decision, the window's power is measured from the events' energies: the
/// on-chip part (priced at the spec's reference voltage) times energy_scale(clock), the off-chip
/// part (DRAM) as it is, plus static_w. PowerSpec::fit_clock_mhz() then extrapolates from that
/// operating point (on-chip power ~ f V(f)^2, off-chip held) to the clock for the next window: a
/// feedback loop that settles where a steady load meets the limit, lowering the clock when a
/// window was over and raising it back towards nominal when one was under. It aims 2% below the
/// limit (a guard band for the last window, which nothing after it pays back), less what the run
/// has drawn above that so far, spread over the next window, so an overshoot (it reacts one
/// window late) is paid back. A part that knows its fabric's worst case (spec.bound_onchip_w)
/// also never runs at a clock where that worst case, over the longest window seen, would draw
/// more than the aim plus the headroom banked below it: its average cannot exceed the limit
/// however its compute load changes (memory power, which the clock does not drive, is left to
/// the feedback). Without a limit, or on a part whose clock the model cannot change
/// (PowerSpec::fixed_clock), the controller only measures (the power timeline and peak).
class PowerController {
public:
    explicit PowerController(PowerSpec spec);

    /// At an operator boundary at `now_ps`, with the run's dynamic energy so far: `onchip_ref_pj`
    /// (on-chip events priced at the reference voltage, before energy_scale) and `offchip_pj`.
    /// Closes the window if it is long enough; returns true when the clock changed.
    bool at_boundary(double now_ps, double onchip_ref_pj, double offchip_pj);
    /// Closes the last (possibly short) window at the run's end.
    void finish(double end_ps, double onchip_ref_pj, double offchip_pj);

    double clock_mhz() const { return m_clock_mhz; }
    /// Factor on the on-chip event energies at the current clock (PowerSpec::energy_scale).
    double energy_scale() const { return m_scale; }
    const PowerSpec& spec() const { return m_spec; }
    /// Closed windows, in time order.
    const std::vector<PowerWindow>& timeline() const { return m_samples; }
    /// The highest window average, W (0 before any window closed).
    double peak_w() const;
    /// What the run would have drawn on average at the nominal clock, W: each window's energy at
    /// the nominal clock and voltage over its time at that clock (its time x clock / nominal,
    /// the P ~ f assumption), static included.
    double unthrottled_w() const { return m_unthrottled_s > 0 ? m_unthrottled_j / m_unthrottled_s : 0; }

private:
    void close(double now_ps, double onchip_ref_pj, double offchip_pj);
    PowerSpec m_spec;
    double m_clock_mhz, m_scale, m_scale_nominal;
    double m_start_ps = 0, m_onchip_pj = 0, m_offchip_pj = 0;
    std::vector<PowerWindow> m_samples;
    double m_unthrottled_j = 0, m_unthrottled_s = 0;
    double m_energy_j = 0, m_time_s = 0;  ///< the run so far: energy (static included) and time of the closed windows
    double m_longest_s = 0;               ///< the longest window so far
};

}  // namespace archsim
