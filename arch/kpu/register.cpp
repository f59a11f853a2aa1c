// Registers the Stillwater KPU domain-flow fabric as machine kind "kpu".
#include "arch/kpu/kpu_config.h"
#include "arch/kpu/kpu_machine.h"
#include "sim/engine/registry.h"

namespace archsim {
namespace {
const ParamSchema& kpu_schema() { return kpu_params().schema(); }
}  // namespace

ARCHSIM_REGISTER_MACHINE(MachineKind{"kpu", "Stillwater KPU: a mesh of PE-array tiles executing SUREs as wavefronts, "
                                            "with L3/L2/L1, DMA, block movers and streamers",
                                     &kpu_schema, &create_kpu_machine});
}  // namespace archsim
