#pragma once
// The one error type for bad user input (files, configs, models, command-line values).
#include <stdexcept>
#include <string>

namespace archsim {

/// A problem with something the user gave us: a file, a config key, an ONNX node, a flag.
/// `where` names the file and the place (key path, node name); `what()` is the whole one-line
/// message `where: reason` that `main` prints before exiting non-zero. Library code throws it
/// and never calls exit(); only `main` catches it.
class UserError : public std::runtime_error {
public:
    /// @param where file and place, e.g. "configs/tpu.toml: array.rows = 0"; may be empty.
    /// @param reason why it is wrong, e.g. "must be >= 1".
    UserError(const std::string& where, const std::string& reason)
        : std::runtime_error(where.empty() ? reason : where + ": " + reason),
          m_where(where), m_reason(reason) {}

    const std::string& where() const noexcept { return m_where; }
    const std::string& reason() const noexcept { return m_reason; }

private:
    std::string m_where;
    std::string m_reason;
};

}  // namespace archsim
