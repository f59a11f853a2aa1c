#pragma once
// Starting this program again as a child process (one SystemC simulation per process).
#include <sys/types.h>

#include <string>
#include <vector>

namespace archsim::cli {

/// Starts `self` with `args` (argv[1..]) with stdout and stderr redirected to the given files
/// (created or truncated); returns its pid. The child dies with its parent (main.cpp honours
/// ARCHSIM_DIE_WITH_PARENT). Throws UserError if the process cannot start.
pid_t spawn_self(const std::string& self, const std::vector<std::string>& args, const std::string& out_path,
                 const std::string& err_path);

/// The whole file at `path` ("" if it cannot be read): a child's report or log.
std::string read_file(const std::string& path);

/// The last non-empty line of `text` ("" if none): what a failed child said last.
std::string last_line(const std::string& text);

/// Why a child that ended with wait status `status` failed, never empty: the last line of its
/// log `err_path`, and how it ended when that is not an exit code of its own ("killed by signal
/// 9 (SIGKILL: the out-of-memory killer, or a user)"; "exit 3" with no log line).
std::string child_failure(int status, const std::string& err_path);

/// Starts `program` with `args` (argv[1..]), inheriting stdout and stderr; returns its pid.
/// Throws UserError if it cannot start.
pid_t spawn_program(const std::string& program, const std::vector<std::string>& args);

}  // namespace archsim::cli
