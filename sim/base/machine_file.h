#pragma once
// Reading the one key every machine file must have before its schema is known.
#include <string>

namespace archsim {

/// Reads the top-level string `kind` of a machine TOML file.
/// Throws UserError naming the file if it cannot be read or parsed, or has no string `kind`.
std::string read_machine_kind(const std::string& file);

}  // namespace archsim
