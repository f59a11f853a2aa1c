#pragma once
// What a machine's power model needs beyond its per-event energies: the power it draws whatever
// runs (static), its power limit, and the voltage-frequency points its clock may move between.
#include <vector>

namespace archsim {

/// One published (or derived) operating point: a clock and the supply voltage it runs at.
struct VfPoint {
    double mhz = 0;    ///< clock, MHz
    double vdd_v = 0;  ///< supply voltage, V (only ratios between points matter)
};

/// A machine's power envelope and DVFS rule. Dynamic power at clock f scales from what the
/// events cost at the reference voltage as P(f) = P(f_ref-energies, f) x (V(f) / V_ref)^2: an
/// event's switching energy is C V^2 (Weste & Harris, CMOS VLSI Design, 4th ed., sec. 5.1), its
/// rate is proportional to f. V(f) is linear between the points, held at the lowest point's
/// voltage below it (the voltage floor: power then falls only with f) and extended along the
/// last segment above the highest. With fewer than two points the voltage is fixed and power is
/// proportional to the clock.
struct PowerSpec {
    double static_w = 0;          ///< drawn whatever runs (leakage, always-on logic, refresh, the board's fixed draw), W
    double limit_w = 0;           ///< power limit the clock is lowered to fit, W; 0 = none
    double window_us = 1000;      ///< the controller's averaging window, us
    double nominal_mhz = 0;       ///< the clock the run asks for, MHz
    double min_mhz = 0;           ///< the lowest clock the controller may set, MHz (0: 1% of nominal)
    double step_mhz = 0;          ///< clocks below nominal are whole steps of this, MHz (0: any clock)
    double ref_vdd_v = 0;         ///< voltage at which the per-event energies are given, V (0: V(nominal))
    std::vector<VfPoint> points;  ///< ascending clock
    /// An upper bound on the on-chip dynamic power the clock drives, at the nominal clock and its
    /// voltage (every compute and on-chip data-movement unit at its peak rate per cycle at once),
    /// W; 0 = none. With one, the first window runs at the clock at which the bound fits the
    /// limit, and no later window at a clock where the bound would exceed the limit plus the
    /// headroom the run has banked so far (a part whose controller knows its fabric's worst
    /// case). Power that DRAM traffic drives (the DRAM itself, the DMA and buffer writes per DRAM
    /// byte) does not scale with the core clock, so it is left to the measured feedback, not
    /// bounded: a bound at peak DRAM bandwidth would lower the clock for bandwidth the run never
    /// uses, and make a part with more bandwidth slower (the KPU T256 at 4 TB/s ran at 1% of its
    /// clock).
    double bound_onchip_w = 0;
    /// The model cannot change this part's clock (a CPU, TPU or roofline model today): the limit
    /// is checked, not enforced; the run stays at nominal_mhz and reports where it draws more.
    bool fixed_clock = false;

    /// Supply voltage at `mhz`, V (0 when no points are given).
    double vdd_at(double mhz) const;
    /// Factor on the per-event energies at `mhz`: (V(mhz) / V_ref)^2; 1 without points.
    double energy_scale(double mhz) const;
    /// The highest clock <= nominal_mhz at which the power, extrapolated from what was measured
    /// at `at_mhz`, stays within limit_w: static_w + `offchip_w` + `onchip_w` x (f / at_mhz) x
    /// energy_scale(f) / energy_scale(at_mhz) (within `target_w` instead when it is >= 0), found by
    /// bisection to 1e-6 of the nominal clock.
    /// `onchip_w`: on-chip dynamic power measured at `at_mhz` (its voltage included); `offchip_w`:
    /// power that does not scale with the core clock or voltage (DRAM). nominal_mhz when there is
    /// no limit or it is met there; min_mhz (or 1% of nominal) when even that does not fit;
    /// rounded down to a whole step_mhz below nominal (a clock's discrete steps).
    double fit_clock_mhz(double onchip_w, double offchip_w, double at_mhz, double target_w = -1) const;
};

}  // namespace archsim
