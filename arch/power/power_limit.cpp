#include "arch/power/power_limit.h"

#include "sim/base/error.h"

namespace archsim {

void check_limit_above_static(const std::string& key, double limit_w, double static_w) {
    if (limit_w > 0 && limit_w <= static_w)
        throw UserError(key, "a limit of " + format_value(limit_w) + " W leaves nothing above energy.static_w (" + format_value(static_w) +
                                 " W) for the part to run on");
}

PowerSpec checked_limit_spec(double static_w, double limit_w, double nominal_mhz) {
    PowerSpec s;
    s.static_w = static_w, s.limit_w = limit_w, s.nominal_mhz = nominal_mhz, s.fixed_clock = true;
    return s;
}

}  // namespace archsim
