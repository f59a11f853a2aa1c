#pragma once
// The CPU machine: cores with private L1d/L2, a shared L3 and DRAM as SystemC modules joined by
// TLM-2.0 sockets.
#include <memory>

#include "arch/common/machine.h"

namespace archsim {

/// Creates the CPU from validated `kind = "cpu"` parameters; registers its components on `trace`.
std::unique_ptr<Machine> create_cpu_machine(const ParamSet& params, TraceWriter& trace);

}  // namespace archsim
