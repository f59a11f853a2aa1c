#pragma once
// Internal: parse a TOML file, turning toml++'s parse error into a UserError with file:line:col.
// Included only by .cpp files that parse TOML (toml++ is a heavy header).
#include <toml++/toml.h>

#include <string>

#include "sim/base/error.h"

namespace archsim::detail {

/// Parses `file`; throws UserError("file:line:col", description) on a syntax error.
inline toml::table parse_toml_file(const std::string& file) {
    try {
        return toml::parse_file(file);
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        throw UserError(file + ":" + std::to_string(b.line) + ":" + std::to_string(b.column), std::string(e.description()));
    }
}

/// Parses `text` (named `name` in errors); throws UserError("name:line:col", description).
inline toml::table parse_toml_string(const std::string& text, const std::string& name) {
    try {
        return toml::parse(text, name);
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        throw UserError(name + ":" + std::to_string(b.line) + ":" + std::to_string(b.column), std::string(e.description()));
    }
}

}  // namespace archsim::detail
