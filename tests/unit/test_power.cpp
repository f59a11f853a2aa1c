// The power model's rules on small hand-made cases (arch/power/): the voltage-frequency line, the
// clock that fits a limit, the controller's feedback, payback and worst-case bound.
#include <catch2/catch.hpp>

#include "arch/common/clock.h"
#include "arch/power/power_controller.h"
#include "arch/power/power_limit.h"
#include "arch/power/power_spec.h"
#include "sim/base/error.h"

using namespace archsim;

namespace {
/// A part with three V/F points (the KPU's modes: 400 MHz 0.6 V, 600 MHz 0.75 V, 800 MHz 0.9 V),
/// energies given at 0.75 V, running at 800 MHz under a 30 W limit with 2 W static.
PowerSpec three_points() {
    PowerSpec s;
    s.static_w = 2, s.limit_w = 30, s.window_us = 1, s.nominal_mhz = 800, s.ref_vdd_v = 0.75;
    s.points = {{400, 0.6}, {600, 0.75}, {800, 0.9}};
    return s;
}
}  // namespace

TEST_CASE("the supply voltage is linear between the points and floored below the lowest", "[unit][power]") {
    const PowerSpec s = three_points();
    CHECK(s.vdd_at(600) == Approx(0.75));
    CHECK(s.vdd_at(500) == Approx(0.675));
    CHECK(s.vdd_at(700) == Approx(0.825));
    CHECK(s.vdd_at(100) == Approx(0.6));   // the floor
    CHECK(s.vdd_at(1000) == Approx(1.05)); // the last segment extended
    CHECK(s.energy_scale(600) == Approx(1.0));
    CHECK(s.energy_scale(800) == Approx((0.9 / 0.75) * (0.9 / 0.75)));
    PowerSpec fixed;
    fixed.nominal_mhz = 1000;
    CHECK(fixed.energy_scale(500) == 1.0);  // no points: the voltage never moves
}

TEST_CASE("the clock that fits a limit follows power ~ f V(f)^2, in whole steps, never above nominal", "[unit][power]") {
    PowerSpec s;
    s.static_w = 10, s.limit_w = 60, s.nominal_mhz = 1000;
    // fixed voltage: 100 W on chip at 1000 MHz must fall to 50 W: 500 MHz
    CHECK(s.fit_clock_mhz(100, 0, 1000) == Approx(500).epsilon(1e-5));
    CHECK(s.fit_clock_mhz(40, 0, 1000) == 1000);  // fits at nominal: untouched
    CHECK(s.fit_clock_mhz(10, 0, 250) == 1000);   // measured low at a low clock: back to nominal, not above
    CHECK(s.fit_clock_mhz(100, 20, 1000) == Approx(300).epsilon(1e-5));  // off-chip power does not scale
    s.step_mhz = 15;
    CHECK(s.fit_clock_mhz(100, 0, 1000) == 495);  // rounded down to a whole step
    s.min_mhz = 600;
    CHECK(s.fit_clock_mhz(100, 0, 1000) == 600);  // never below the lowest clock, even when over
    // with voltage points the same power needs less slowing down: at 700 MHz, 40 W x 700/800 x (0.825/0.9)^2
    const PowerSpec v = three_points();
    const double f = v.fit_clock_mhz(40, 0, 800);
    CHECK(f < 800);
    CHECK(v.static_w + 40 * (f / 800) * v.energy_scale(f) / v.energy_scale(800) == Approx(30).epsilon(1e-5));
    CHECK(f > 800 * 28.0 / 40.0);  // more than a fixed-voltage part would keep
}

TEST_CASE("the controller lowers the clock after a window over the limit and pays the overshoot back", "[unit][power]") {
    PowerSpec s;
    s.static_w = 0, s.limit_w = 50, s.window_us = 1, s.nominal_mhz = 1000;
    PowerController c(s);
    CHECK(c.clock_mhz() == 1000);
    // a window of 2 us drawing 100 W on chip (200 uJ... in pJ: 100 W x 2e6 ps = 2e8 pJ)
    CHECK(c.at_boundary(2e6, 2e8, 0));
    // the next window aims at 49 W (2% guard) less the 102 uJ drawn above it, spread over 2 us: none left
    CHECK(c.clock_mhz() == Approx(10));  // 1% of nominal: no lower clock is given
    CHECK(c.timeline().size() == 1);
    CHECK(c.timeline()[0].power_w == Approx(100));
    CHECK(c.peak_w() == Approx(100));
    // a window shorter than window_us does not decide
    CHECK_FALSE(c.at_boundary(2.5e6, 2e8, 0));
    // a long cool window at the low clock: back up to the clock the measured power allows
    c.at_boundary(12e6, 2e8 + 1e7, 0);  // 10 us at 1 W
    CHECK(c.clock_mhz() > 10);
    CHECK(c.unthrottled_w() > 0);
}

TEST_CASE("a part with a known worst case never averages above its limit, however its load jumps", "[unit][power]") {
    PowerSpec s = three_points();
    s.bound_onchip_w = 200;  // every unit at its peak rate, at 800 MHz
    PowerController c(s);
    CHECK(c.clock_mhz() < 400);  // it starts where the worst case fits
    double now = 0, onchip = 0, energy = 0;
    // windows alternating between a cool load (5% of the worst case) and the worst case itself
    for (int w = 0; w < 40; ++w) {
        const double share = w % 2 == 0 ? 0.05 : 1.0;
        const double f = c.clock_mhz();
        const double on_w = 200 * share * (f / 800) * s.energy_scale(f) / s.energy_scale(800);  // at the actual voltage
        const double dt_ps = 3e6;
        now += dt_ps;
        onchip += on_w * dt_ps / s.energy_scale(f);  // the trace prices events at the reference voltage
        energy += (on_w + s.static_w) * dt_ps;
        c.at_boundary(now, onchip, 0);
        CHECK(energy / now <= s.limit_w);
    }
}

TEST_CASE("a clock retimed at a boundary counts on at its new period", "[unit][power]") {
    CycleClock c(1000.0);  // 1 GHz
    CHECK(c.to_ps(5) == 5000);
    c.retime(2000.0);  // at time 0: every cycle from 0 lasts 2 ns
    CHECK(c.to_ps(5) == 10000);
    CHECK(c.cycle_at_or_after(10000) == 5);
    CHECK(c.cycle_at_or_after(10001) == 6);
    CHECK(c.span(2, 3).dur_ps == 6000);
}

TEST_CASE("a part whose clock the model cannot change only measures against its limit", "[unit][power]") {
    PowerSpec s = checked_limit_spec(/*static_w=*/10, /*limit_w=*/50, /*nominal_mhz=*/1000);
    CHECK(s.fixed_clock);
    s.window_us = 1;
    PowerController c(s);
    // 2 us at 100 W on chip: far over the limit, and the clock stays where it was
    CHECK_FALSE(c.at_boundary(2e6, 2e8, 0));
    CHECK(c.clock_mhz() == 1000);
    CHECK(c.energy_scale() == 1.0);
    CHECK(c.peak_w() == Approx(110));
    CHECK(c.unthrottled_w() == Approx(110));
    // the limit must leave something above the static power
    CHECK_THROWS_AS(check_limit_above_static("power.tdp_w", 10, 10), UserError);
    CHECK_NOTHROW(check_limit_above_static("power.tdp_w", 0, 10));  // 0: no limit
    CHECK_NOTHROW(check_limit_above_static("power.tdp_w", 11, 10));
}
