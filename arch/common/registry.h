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

}  // namespace archsim

#define ARCHSIM_CONCAT2(a, b) a##b
#define ARCHSIM_CONCAT(a, b) ARCHSIM_CONCAT2(a, b)
/// Registers a MachineKind at static-initialization time.
#define ARCHSIM_REGISTER_MACHINE(...) \
    static const bool ARCHSIM_CONCAT(archsim_registered_, __LINE__) = ::archsim::register_machine(__VA_ARGS__)
