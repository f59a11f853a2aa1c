#include "sim/engine/run_choice.h"

#include "arch/common/machine.h"

namespace archsim {

namespace {
/// The last override that sets `key`, as a choice from its source; value "" when none does.
RunChoice from_overrides(const std::vector<KeyOverride>& overrides, const std::string& key) {
    RunChoice c;
    for (const auto& o : overrides)
        if (o.assignment.rfind(key + "=", 0) == 0) c = {o.assignment.substr(key.size() + 1), o.source};
    return c;
}
}  // namespace

RunChoice choose_precision(const std::string& cli, const std::vector<KeyOverride>& overrides, const std::string& workload,
                           const std::string& workload_name, const MachineSetup& machine, bool training) {
    if (!cli.empty()) return {cli, "--precision"};
    if (RunChoice set = from_overrides(overrides, "precision"); !set.value.empty()) return set;
    if (!workload.empty()) return {workload, "workload " + workload_name};
    if (training && !machine.kind->training_precision.empty())
        return {machine.kind->training_precision, "training default of the " + machine.kind->kind + " kind"};
    return {machine.params.get_string("precision"), "machine config"};
}

RunChoice choose_runtime(const std::string& cli, const std::vector<KeyOverride>& overrides, const MachineSetup& machine, bool training) {
    if (!cli.empty()) return {cli, "--runtime"};
    if (RunChoice set = from_overrides(overrides, "runtime"); !set.value.empty()) return set;
    if (training && !machine.kind->training_runtime.empty())
        return {machine.kind->training_runtime, "training default of the " + machine.kind->kind + " kind"};
    return {machine.params.get_string("runtime"), "machine config"};
}

std::string training_precision_warning(const RunChoice& precision, bool training) {
    if (!training || precision.value != "int8") return "";
    return "a training step in INT8 (asked for by " + precision.from +
           "): no runtime this models trains in INT8; its numbers are what the hardware's INT8 rates would give";
}

}  // namespace archsim
