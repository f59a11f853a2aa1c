#pragma once
// Typed configuration of the TPU-style systolic-array machine (kind = "tpu").
#include <cstdint>
#include <string>

#include "arch/energy/process_node.h"
#include "arch/memory/dram_config.h"
#include "arch/common/machine_keys.h"
#include "sim/base/precision.h"
#include "sim/base/params.h"
#include "sim/base/per_precision.h"

namespace archsim {

/// Systolic-array dataflows (SCALE-Sim naming): output, weight or input stationary.
enum class Dataflow : uint8_t { OS, WS, IS };

/// Everything a TPU machine is built from; filled only by tpu_params().build(), already valid.
struct TpuConfig : MachineBasics {
    double clock_mhz = 0;
    int64_t rows = 0, cols = 0;
    std::string dataflow_name;
    Dataflow dataflow = Dataflow::WS;  ///< the config's (WS when it asks for the search)
    bool dataflow_search = false;      ///< `dataflow = "search"`: the mapping search chooses per contraction
    int64_t ifmap_kib = 0, filter_kib = 0, ofmap_kib = 0;
    DramConfig dram;
    int64_t vector_lanes = 0;
    double vector_ops_per_lane = 0;
    ProcessNode node;              ///< what the Horowitz-derived energy defaults are scaled to
    PerPrecision mac_pj;           ///< energy per MAC by precision (energy.pj_per_mac.<p>), pJ
    double sram_pj_per_byte[3] = {0, 0, 0};  ///< access energy of the ifmap, filter and ofmap buffers, pJ/byte
    double vector_op_pj = 0;       ///< energy of one vector-unit operation, pJ

    /// ps per clock cycle.
    double cycle_ps() const { return 1e6 / clock_mhz; }
    /// MAC energy for this config's precision, pJ.
    double mac_pj_now() const;
};

/// The declared parameters of kind "tpu" (every key with type, unit, default, doc, bounds).
const ParamBinder<TpuConfig>& tpu_params();

/// Builds a TpuConfig from resolved values (derives the enums from their names).
TpuConfig make_tpu_config(const ParamSet& p);

}  // namespace archsim
