#include "sim/engine/machine_setup.h"

#include "sim/common/error.h"
#include "sim/config/machine_file.h"
#include "arch/common/registry.h"

namespace archsim {

namespace {
const MachineKind& kind_of(const std::string& file) {
    const std::string name = read_machine_kind(file);
    const MachineKind* kind = find_machine(name);
    if (kind) return *kind;
    std::string known;
    for (const auto& k : machine_kinds()) known += (known.empty() ? "" : ", ") + k;
    throw UserError(file + ": kind = \"" + name + "\"", "unknown machine kind (known: " + known + ")");
}
}  // namespace

std::string MachineSetup::resolved_toml(const std::string& header) const {
    return params.to_toml(header + "kind = \"" + kind->kind + "\"\n");
}

MachineSetup load_machine(const std::string& file, const std::string& precision, const std::vector<KeyOverride>& overrides) {
    const MachineKind& kind = kind_of(file);
    MachineSetup m{file, &kind, ParamSet(kind.schema())};
    m.params.load_toml_file(file, {"kind"});
    if (!precision.empty()) m.params.set("precision", precision, "--precision");
    for (const auto& o : overrides) {
        try {
            m.params.apply_override(o.assignment);
        } catch (const UserError& e) {  // name where the assignment came from: a study's set or axis
            if (o.source == "--set") throw;
            throw UserError(o.source + " " + o.assignment, e.reason());
        }
    }
    try {
        kind.validate(m.params);
    } catch (const UserError& e) {  // a cross-key check: name the file and the key
        throw UserError(file + (e.where().empty() ? "" : ": " + e.where()), e.reason());
    }
    return m;
}

std::vector<KeyOverride> set_overrides(const std::vector<std::string>& sets) {
    std::vector<KeyOverride> out;
    for (const auto& s : sets) out.push_back({s, "--set"});
    return out;
}

}  // namespace archsim
