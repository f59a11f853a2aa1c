// Registers the Stillwater KPU domain-flow fabric as machine kind "kpu".
#include "arch/kpu/kpu_config.h"
#include "arch/kpu/kpu_machine.h"
#include "arch/common/registry.h"

namespace archsim {
ARCHSIM_REGISTER_MACHINE(machine_kind<&kpu_params, &make_kpu_config>(
    "kpu", "Stillwater KPU: a mesh of PE-array tiles executing SUREs as wavefronts, with L3/L2/L1, DMA, block movers and streamers",
    &create_kpu_machine, /*fused_attention=*/true, TrainingDefaults{"bf16", "kpu-domain-flow"}));
}  // namespace archsim
