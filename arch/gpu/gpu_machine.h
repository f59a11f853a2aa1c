#pragma once
// The GPU machine: SMs, shared L2 and DRAM as SystemC modules joined by TLM-2.0 sockets.
#include <memory>

#include "arch/common/machine.h"

namespace archsim {

/// Creates the GPU from validated `kind = "gpu"` parameters; registers its components on `trace`.
std::unique_ptr<Machine> create_gpu_machine(const ParamSet& params, TraceWriter& trace);

}  // namespace archsim
