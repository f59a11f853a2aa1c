#pragma once
// The keys every machine kind has, declared and checked in one place: `name`, `runtime` and
// `precision` (in that order, first in every kind's schema), `clock_mhz` where one key sets the
// clock, `energy.static_w`, and the checks they share (the run's precision parsed and a MAC rate
// for it, a power limit above the static power).
#include <functional>
#include <string>

#include "arch/common/runtime_key.h"
#include "sim/base/params.h"
#include "sim/base/precision.h"

namespace archsim {

/// The fields behind the common keys; every kind's config derives from it.
struct MachineBasics {
    std::string name;                       ///< `name`: shown in reports
    std::string precision_name;             ///< `precision` as written
    Precision precision = Precision::Fp32;  ///< the same, parsed by check_machine_basics
    double static_w = 0;                    ///< `energy.static_w`: static (leakage + idle) power, W; 0 = not modeled
    double tdp_w = 0;                       ///< `power.tdp_w` where the kind has it: the part's power limit, W; 0 = none
};

/// A kind's defaults and docs for `name`, `runtime` and `precision`.
struct BasicKeys {
    std::string kind;           ///< `name`'s default: the kind
    std::string runtime;        ///< `runtime`'s default: a profile in configs/runtimes/
    std::string runtime_why;    ///< why that runtime is the kind's default
    std::string precision;      ///< `precision`'s default
    std::string precision_doc;  ///< what the precision sets on this kind
};

/// Declares `name`, `runtime` and `precision` on `b`, bound to C's MachineBasics.
template <class C>
void declare_machine_basics(ParamBinder<C>& b, const BasicKeys& k) {
    b.string("name", [](C& c) -> std::string& { return c.name; }, k.kind, {}, "Free-text name shown in reports");
    declare_runtime_key(b, k.runtime, k.runtime_why);
    b.string("precision", [](C& c) -> std::string& { return c.precision_name; }, k.precision, precision_names(), k.precision_doc);
}

/// Declares `clock_mhz` (MHz, > 0, default `def`) bound to `field`; `doc` says which clock it is.
template <class C>
ParamDecl& declare_clock_mhz(ParamBinder<C>& b, double C::*field, double def, const std::string& doc) {
    return above(b.real("clock_mhz", [field](C& c) -> double& { return c.*field; }, def, "MHz", doc), 0);
}

/// Declares `energy.static_w` (W, >= 0, default `def`) bound to MachineBasics::static_w; `doc`
/// says what it covers and where the default comes from.
template <class C>
ParamDecl& declare_static_power(ParamBinder<C>& b, double def, const std::string& doc) {
    return at_least(b.real("energy.static_w", [](C& c) -> double& { return c.static_w; }, def, "W", doc), 0);
}

/// Parses `c.precision_name` into `c.precision`, then checks what every kind checks. With a
/// `rate_key`, throws UserError("<rate_key>.<precision>", ...) when `macs_per_cycle(precision)`
/// is not above 0: `no_rate` is the reason given ("" = "is 0: this <what> has no <precision> MAC
/// rate (choose another precision)"). Throws UserError("power.tdp_w", ...) when a limit is set
/// and not above the static power.
void check_machine_basics(MachineBasics& c, const std::function<double(Precision)>& macs_per_cycle = {}, const std::string& rate_key = "",
                          const std::string& what = "", const std::string& no_rate = "");

}  // namespace archsim
