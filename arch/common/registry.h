#pragma once
// Registry of machine kinds, keyed by the config's `kind`; each arch/<kind>/ folder registers
// itself with one ARCHSIM_REGISTER_MACHINE line (the library is an OBJECT library, so the
// registering static is always linked).
#include <string>
#include <vector>

#include "arch/common/machine.h"

namespace archsim {

/// Adds a kind (called by ARCHSIM_REGISTER_MACHINE before main). Returns true.
bool register_machine(const MachineKind& kind);
/// The kind named `kind`, or nullptr.
const MachineKind* find_machine(const std::string& kind);
/// Every registered kind name, sorted.
std::vector<std::string> machine_kinds();

/// The MachineKind of a model whose parameters `Params()` declares (a ParamBinder) and whose
/// typed config `Make(ParamSet)` builds, running every cross-key check (UserError); `create`
/// builds the machine. Validation is Make itself, so the checks live in one place.
/// `fused_attention`: the model costs fused attention kernels (MachineBase::attention).
/// `training`: the kind's training precision and runtime (MachineKind::training_precision).
struct TrainingDefaults {
    std::string precision, runtime;
};
template <auto Params, auto Make>
MachineKind machine_kind(std::string kind, std::string doc,
                         std::unique_ptr<Machine> (*create)(const ParamSet& params, TraceWriter& trace), bool fused_attention = false,
                         TrainingDefaults training = {}) {
    return MachineKind{std::move(kind), std::move(doc), []() -> const ParamSchema& { return Params().schema(); }, create,
                       [](const ParamSet& p) { (void)Make(p); }, fused_attention, std::move(training.precision),
                       std::move(training.runtime)};
}

}  // namespace archsim

#define ARCHSIM_CONCAT2(a, b) a##b
#define ARCHSIM_CONCAT(a, b) ARCHSIM_CONCAT2(a, b)
/// Registers a MachineKind at static-initialization time.
#define ARCHSIM_REGISTER_MACHINE(...) \
    static const bool ARCHSIM_CONCAT(archsim_registered_, __LINE__) = ::archsim::register_machine(__VA_ARGS__)
