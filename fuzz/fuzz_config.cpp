// libFuzzer harness: bytes -> TOML -> every machine kind's declared parameters -> its cross-key
// checks. Any outcome but a valid config or a UserError is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/base/error.h"
#include "sim/base/params.h"
#include "arch/common/machine.h"
#include "arch/common/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    for (const auto& name : archsim::machine_kinds()) {
        const archsim::MachineKind* kind = archsim::find_machine(name);
        try {
            archsim::ParamSet p(kind->schema());
            p.load_toml_string(text, "fuzz.toml", {"kind"});
            kind->validate(p);
        } catch (const archsim::UserError&) {
        }
    }
    return 0;
}
