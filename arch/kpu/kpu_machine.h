#pragma once
// The KPU machine: the tile mesh and its memory hierarchy as SystemC modules.
#include <memory>

#include "arch/common/machine.h"

namespace archsim {

/// Creates the KPU from validated `kind = "kpu"` parameters; registers its components on `trace`.
std::unique_ptr<Machine> create_kpu_machine(const ParamSet& params, TraceWriter& trace);

}  // namespace archsim
