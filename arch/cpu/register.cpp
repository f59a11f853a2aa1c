// Registers the CPU model as machine kind "cpu".
#include "arch/cpu/cpu_config.h"
#include "arch/cpu/cpu_machine.h"
#include "arch/common/registry.h"

namespace archsim {
namespace {
const ParamSchema& cpu_schema() { return cpu_params().schema(); }
void cpu_validate(const ParamSet& p) { (void)make_cpu_config(p); }
}  // namespace

ARCHSIM_REGISTER_MACHINE(MachineKind{"cpu", "Multicore CPU: SIMD/AMX cores running BLIS-blocked GEMMs through simulated L1d/L2/L3 caches and DRAM",
                                     &cpu_schema, &create_cpu_machine, &cpu_validate});
}  // namespace archsim
