#pragma once
// The TPU-style machine: a systolic array, a vector unit, three double-buffered SRAMs, a DMA
// engine and DRAM, as SystemC modules joined by TLM-2.0 sockets.
#include <memory>

#include "arch/tpu/tpu_config.h"
#include "arch/common/machine.h"

namespace archsim {

/// Creates the machine from validated parameters and registers its components on `trace`.
std::unique_ptr<Machine> create_tpu_machine(const ParamSet& params, TraceWriter& trace);

}  // namespace archsim
