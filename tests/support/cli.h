#pragma once
// Runs the archsim binary in a child process and captures what it printed.
#include <nlohmann/json.hpp>

#include <string>

namespace archsim::test {

/// Exit code, stdout and stderr of one archsim invocation.
struct CliResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

/// Runs `command` through /bin/sh (stdin from /dev/null) and captures its exit code, stdout and
/// stderr.
CliResult run_command(const std::string& command);

/// Runs `ARCHSIM_BIN args` through /bin/sh (args are passed as written).
CliResult run_archsim(const std::string& args);

/// Runs `archsim ARGS --format json --out <temp dir>`, REQUIREs exit code 0 (Catch2), removes the
/// output directory and returns the printed JSON report.
nlohmann::json run_json_ok(const std::string& args);

/// A fresh empty directory under the system temp dir.
std::string temp_dir(const std::string& tag);

/// Path under ../shared, and whether shared/ is present at all.
std::string shared_path(const std::string& rel);
bool have_shared();

/// Whole file as a string ("" if missing).
std::string slurp(const std::string& path);

}  // namespace archsim::test
