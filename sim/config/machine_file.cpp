#include "sim/config/machine_file.h"

#include <toml++/toml.h>

#include <filesystem>

#include "sim/common/error.h"

namespace archsim {

std::string read_machine_kind(const std::string& file) {
    if (!std::filesystem::is_regular_file(file)) throw UserError(file, "no such config file");
    toml::table root;
    try {
        root = toml::parse_file(file);
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        throw UserError(file + ":" + std::to_string(b.line) + ":" + std::to_string(b.column),
                        std::string(e.description()));
    }
    auto kind = root["kind"].value<std::string>();
    if (!kind) throw UserError(file + ": kind", "missing: every machine file names its model, e.g. kind = \"tpu\"");
    return *kind;
}

}  // namespace archsim
