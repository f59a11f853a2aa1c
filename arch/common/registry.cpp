#include "arch/common/registry.h"

#include <map>
#include <stdexcept>

namespace archsim {

// Filled once during static initialization, read-only afterwards.
static std::map<std::string, MachineKind>& kinds() {
    static std::map<std::string, MachineKind> k;
    return k;
}

bool register_machine(const MachineKind& kind) {
    if (!kinds().emplace(kind.kind, kind).second) throw std::logic_error("machine kind registered twice: " + kind.kind);
    return true;
}

const MachineKind* find_machine(const std::string& kind) {
    auto it = kinds().find(kind);
    return it == kinds().end() ? nullptr : &it->second;
}

std::vector<std::string> machine_kinds() {
    std::vector<std::string> out;
    for (const auto& [k, v] : kinds()) out.push_back(k);
    return out;
}

}  // namespace archsim
