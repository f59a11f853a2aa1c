// Registers the Stillwater KPU domain-flow fabric as machine kind "kpu".
#include "arch/kpu/kpu_config.h"
#include "arch/kpu/kpu_machine.h"
#include "arch/common/registry.h"

namespace archsim {
namespace {
const ParamSchema& kpu_schema() { return kpu_params().schema(); }
void kpu_validate(const ParamSet& p) { (void)make_kpu_config(p); }
}  // namespace

ARCHSIM_REGISTER_MACHINE(MachineKind{"kpu", "Stillwater KPU: a mesh of PE-array tiles executing SUREs as wavefronts, "
                                            "with L3/L2/L1, DMA, block movers and streamers",
                                     &kpu_schema, &create_kpu_machine, &kpu_validate});
}  // namespace archsim
