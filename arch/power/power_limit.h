#pragma once
// The power limit of a kind whose model cannot change its clock (the CPU, TPU and roofline models
// today): declared, validated and turned into a PowerSpec the same way on each.
#include <string>

#include "arch/power/power_spec.h"
#include "sim/base/params.h"

namespace archsim {

/// Declares `power.tdp_w` (W, >= 0, default 0 = no limit) on `b`, bound to `field` (of C or a base of it). `source`
/// names where a config's value comes from (appended to the doc). The limit is checked, not
/// enforced: a run drawing more on average is reported OVER LIMIT with the reason.
template <class C, class Base>
ParamDecl& declare_checked_limit(ParamBinder<C>& b, double Base::*field, const std::string& source) {
    return at_least(b.real("power.tdp_w", [field](C& c) -> double& { return c.*field; }, 0.0, "W",
                           "Power limit of the part (its TDP). This model cannot lower its clock, so the limit is checked, not "
                           "enforced: a run whose average power exceeds it is reported OVER LIMIT. 0 = none. " + source),
                    0);
}

/// Throws UserError(`key`, ...) when a limit `limit_w` > 0 is not above the static power
/// `static_w` (W): nothing would be left for the part to run on.
void check_limit_above_static(const std::string& key, double limit_w, double static_w);

/// The PowerSpec of a part whose clock the model cannot change: static_w, the limit (W, > 0),
/// nominal_mhz, fixed_clock set (the controller measures windows and the limit is reported).
PowerSpec checked_limit_spec(double static_w, double limit_w, double nominal_mhz);

}  // namespace archsim
