#include "sim/base/machine_file.h"

#include <filesystem>

#include "sim/base/error.h"
#include "sim/base/toml_load.h"

namespace archsim {

std::string read_machine_kind(const std::string& file) {
    if (!std::filesystem::is_regular_file(file)) throw UserError(file, "no such config file");
    const toml::table root = detail::parse_toml_file(file);
    auto kind = root["kind"].value<std::string>();
    if (!kind) throw UserError(file + ": kind", "missing: every machine file names its model, e.g. kind = \"tpu\"");
    return *kind;
}

}  // namespace archsim
