// Registers the GPU model as machine kind "gpu".
#include "arch/gpu/cta_mapper.h"
#include "arch/gpu/gpu_config.h"
#include "arch/gpu/gpu_machine.h"
#include "arch/common/registry.h"

namespace archsim {
namespace {
const ParamSchema& gpu_schema() { return gpu_params().schema(); }
void gpu_validate(const ParamSet& p) { check_cta_menu_fits(make_gpu_config(p)); }
}  // namespace

ARCHSIM_REGISTER_MACHINE(MachineKind{"gpu", "NVIDIA-style GPU: SMs running CTAs in waves on tensor/CUDA cores, shared L2 and HBM/GDDR",
                                     &gpu_schema, &create_gpu_machine, &gpu_validate});
}  // namespace archsim
