// Registers the CPU model as machine kind "cpu".
#include "arch/cpu/cpu_config.h"
#include "arch/cpu/cpu_machine.h"
#include "arch/common/registry.h"

namespace archsim {
ARCHSIM_REGISTER_MACHINE(machine_kind<&cpu_params, &make_cpu_config>(
    "cpu", "Multicore CPU: SIMD/AMX cores running BLIS-blocked GEMMs through simulated L1d/L2/L3 caches and DRAM",
    &create_cpu_machine, /*fused_attention=*/false, TrainingDefaults{"fp32", "torch-eager"}));
}  // namespace archsim
