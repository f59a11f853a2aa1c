#pragma once
// Typed configuration of the analytical roofline machine (kind = "roofline").
#include <string>

#include "arch/energy/process_node.h"
#include "arch/memory/memory_level.h"
#include "arch/common/machine_keys.h"
#include "sim/base/precision.h"
#include "sim/base/params.h"
#include "sim/base/per_precision.h"

namespace archsim {

/// Peak rates, bandwidths and energies of a device, as a roofline sees it.
struct RooflineConfig : MachineBasics {
    double clock_mhz = 0;
    PerPrecision macs_per_cycle;  ///< device-wide peak MACs per cycle (compute.macs_per_cycle.<p>)
    ProcessNode node;             ///< what the Horowitz-derived energy defaults are scaled to
    PerPrecision pj_per_mac;      ///< energy per MAC (energy.pj_per_mac.<p>)
    double vector_ops_per_cycle = 0;
    double vector_pj_per_op = 0;
    MemoryLevel dram;             ///< off-chip memory
    MemoryLevel sram;             ///< the on-chip level every operand passes (bandwidth 0: not modeled)
};

/// The declared parameters of kind "roofline".
const ParamBinder<RooflineConfig>& roofline_params();

/// Builds a RooflineConfig from resolved values; throws UserError("compute.macs_per_cycle.<p>",
/// ...) when the run's precision has no MAC rate.
RooflineConfig make_roofline_config(const ParamSet& p);

}  // namespace archsim
