// Registers the GPU model as machine kind "gpu".
#include "arch/gpu/cta_mapper.h"
#include "arch/gpu/gpu_config.h"
#include "arch/gpu/gpu_machine.h"
#include "arch/common/registry.h"

namespace archsim {
namespace {
/// The config with the check that needs the CTA mapper: some CTA tile fits the shared memory.
GpuConfig make_checked_gpu_config(const ParamSet& p) {
    GpuConfig c = make_gpu_config(p);
    check_cta_menu_fits(c);
    return c;
}
}  // namespace

ARCHSIM_REGISTER_MACHINE(machine_kind<&gpu_params, &make_checked_gpu_config>(
    "gpu", "NVIDIA-style GPU: SMs running CTAs in waves on tensor/CUDA cores, shared L2 and HBM/GDDR", &create_gpu_machine,
    /*fused_attention=*/true, TrainingDefaults{"fp16", "torch-eager"}));
}  // namespace archsim
