// Registers the TPU-style systolic array as machine kind "tpu".
#include "arch/tpu/tpu_config.h"
#include "arch/tpu/tpu_machine.h"
#include "arch/common/registry.h"

namespace archsim {
namespace {
const ParamSchema& tpu_schema() { return tpu_params().schema(); }
void tpu_validate(const ParamSet& p) { (void)make_tpu_config(p); }
}  // namespace

ARCHSIM_REGISTER_MACHINE(MachineKind{"tpu", "TPU-style systolic array (WS/OS/IS) with SRAM buffers, vector unit and DRAM",
                                     &tpu_schema, &create_tpu_machine, &tpu_validate});
}  // namespace archsim
