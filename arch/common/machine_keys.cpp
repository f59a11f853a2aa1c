#include "arch/common/machine_keys.h"

#include "arch/power/power_limit.h"
#include "sim/base/error.h"

namespace archsim {

void check_machine_basics(MachineBasics& c, const std::function<double(Precision)>& macs_per_cycle, const std::string& rate_key,
                          const std::string& what, const std::string& no_rate) {
    c.precision = parse_precision(c.precision_name, "precision");
    if (!rate_key.empty() && macs_per_cycle && !(macs_per_cycle(c.precision) > 0))
        throw UserError(rate_key + "." + c.precision_name,
                        !no_rate.empty() ? no_rate : "is 0: this " + what + " has no " + c.precision_name + " MAC rate (choose another precision)");
    check_limit_above_static("power.tdp_w", c.tdp_w, c.static_w);
}

}  // namespace archsim
