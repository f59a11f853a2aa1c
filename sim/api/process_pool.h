#pragma once
// Child processes: one SystemC simulation per process, so every part of archsim that runs several
// simulations (a sweep's points, a job's device runs and phases, an llm workload's serving phases,
// calibration cases) runs each as a child `archsim run` through this one pool.
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace archsim {

/// The program running now (/proc/self/exe): the archsim binary when the CLI calls the library,
/// which is what child simulations run.
std::string self_program();

/// One child process: its arguments (argv[1..]) and the files its stdout and stderr go to
/// (created or truncated).
struct ChildTask {
    std::vector<std::string> args;
    std::string out_path, err_path;
};

/// Starts `program` with `task` and returns its pid. The child dies with its parent: the
/// environment carries ARCHSIM_DIE_WITH_PARENT, which archsim's main honours. Throws UserError
/// if the process cannot start.
pid_t spawn_child(const std::string& program, const ChildTask& task);

/// Runs `count` children of `program`, at most `jobs` at once (0: one per online CPU), started in
/// index order: `task(i)` says what child i runs (called just before it starts), `done(i, status)`
/// hears its wait status when it ends, in the order they end. While every child runs and none has
/// ended, `waiting(running)` (when given) is called about every 100 ms with the indices running,
/// for a progress display. An exception thrown by `task` or `done` stops the pool: the children
/// still running are killed (SIGTERM) and reaped, and the exception goes on.
void run_children(const std::string& program, size_t count, size_t jobs, const std::function<ChildTask(size_t)>& task,
                  const std::function<void(size_t, int)>& done, const std::function<void(const std::vector<size_t>&)>& waiting = {});

/// Runs one child of `program` and waits for it; returns its wait status.
int run_child(const std::string& program, const ChildTask& task);

/// Whether wait status `status` is a normal exit with code 0.
bool exited_ok(int status);

/// The whole file at `path` ("" if it cannot be read): a child's report or log.
std::string read_file(const std::string& path);

/// The last non-empty line of `text` ("" if none): what a failed child said last.
std::string last_line(const std::string& text);

/// Why a child that ended with wait status `status` failed, never empty: the last line of its
/// log `err_path`, and how it ended when that is not an exit code of its own ("killed by signal
/// 9 (SIGKILL: the out-of-memory killer, or a user)"; "exit 3" with no log line).
std::string child_failure(int status, const std::string& err_path);

/// Starts `program` with `args` (argv[1..]), inheriting stdout and stderr, and waits for it;
/// returns its wait status. Throws UserError if it cannot start.
int run_program(const std::string& program, const std::vector<std::string>& args);

}  // namespace archsim
