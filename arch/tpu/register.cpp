// Registers the TPU-style systolic array as machine kind "tpu".
#include "arch/tpu/tpu_config.h"
#include "arch/tpu/tpu_machine.h"
#include "arch/common/registry.h"

namespace archsim {
ARCHSIM_REGISTER_MACHINE(machine_kind<&tpu_params, &make_tpu_config>(
    "tpu", "TPU-style systolic array (WS/OS/IS) with SRAM buffers, vector unit and DRAM", &create_tpu_machine,
    /*fused_attention=*/true, TrainingDefaults{"bf16", "xla"}));
}  // namespace archsim
