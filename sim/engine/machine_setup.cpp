#include "sim/engine/machine_setup.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "sim/base/error.h"
#include "sim/base/machine_file.h"
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

double MachineSetup::dram_capacity_bytes() const {
    return kind->schema().find("dram.capacity_gib") ? params.get_real("dram.capacity_gib") * 1073741824.0 : 0.0;
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

std::vector<std::string> bundled_machine_names(const std::string& configs_dir) {
    namespace fs = std::filesystem;
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& dir : fs::directory_iterator(configs_dir, ec)) {
        const std::string folder = dir.path().filename().string();
        if (!dir.is_directory() || folder == "clusters" || folder == "runtimes" || folder == "studies") continue;
        for (const auto& f : fs::directory_iterator(dir.path(), ec))
            if (f.path().extension() == ".toml") names.push_back(folder + "/" + f.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string resolve_machine_file(const std::string& name, const std::string& configs_dir) {
    namespace fs = std::filesystem;
    if (fs::is_regular_file(name)) return name;
    std::string want = name;
    if (want.size() > 5 && want.compare(want.size() - 5, 5, ".toml") == 0) want.resize(want.size() - 5);
    std::vector<std::string> hits;
    const std::vector<std::string> all = bundled_machine_names(configs_dir);
    for (const std::string& n : all)
        if (n == want || n.substr(n.find('/') + 1) == want) hits.push_back(n);
    if (hits.size() == 1) return configs_dir + "/" + hits[0] + ".toml";
    // a path that names no bundled config: the file error load_machine() gives says more
    if (hits.empty() && (want != name || name.find('/') != std::string::npos)) return name;
    std::string list;
    for (const std::string& n : hits.empty() ? all : hits) list += (list.empty() ? "" : ", ") + n;
    if (hits.empty()) throw UserError("--arch " + name, "no such file, and no bundled config of that name (archsim configs lists them: " + list + ")");
    throw UserError("--arch " + name, "names several bundled configs: " + list + " (give one as <folder>/<stem>)");
}

std::vector<KeyOverride> set_overrides(const std::vector<std::string>& sets) {
    std::vector<KeyOverride> out;
    for (const auto& s : sets) out.push_back({s, "--set"});
    return out;
}

}  // namespace archsim
