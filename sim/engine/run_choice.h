#pragma once
// The one rule for a run's precision and runtime, applied on every path that simulates (run,
// an llm entry's phases, sweeps, jobs): what the command line names, else what the workload
// names, else the machine's (for a training step, the machine kind's training default).
#include <string>
#include <vector>

#include "sim/engine/machine_setup.h"

namespace archsim {

/// A decided run setting and where it came from, as every output names it.
struct RunChoice {
    std::string value;
    /// "--precision", "--set" (or the study line that set it), "workload NAME", "machine config"
    /// or "training default of the KIND kind".
    std::string from;
};

/// The precision of a run on `machine` (loaded without --precision, `overrides` applied):
/// `cli` (--precision, "" = not given) or a `precision=` among `overrides`; else `workload` (the
/// workload's own precision, "" = it names none; `workload_name` for the output); else, for
/// inference, the config's `precision` key, and for a training step the kind's training
/// default (MachineKind::training_precision; the config's key where the kind has none).
RunChoice choose_precision(const std::string& cli, const std::vector<KeyOverride>& overrides, const std::string& workload,
                           const std::string& workload_name, const MachineSetup& machine, bool training);

/// The runtime profile of a run on `machine`: `cli` (--runtime, "" = not given) or a `runtime=`
/// among `overrides`; else, for a training step, the kind's training runtime
/// (MachineKind::training_runtime), and otherwise the config's `runtime` key (the runtime the
/// part is deployed with).
RunChoice choose_runtime(const std::string& cli, const std::vector<KeyOverride>& overrides, const MachineSetup& machine, bool training);

/// The warning a training step at `precision` deserves ("" = none): INT8 training runs only
/// because the command line or the workload asked for it.
std::string training_precision_warning(const RunChoice& precision, bool training);

}  // namespace archsim
