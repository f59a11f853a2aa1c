#include "sim/api/process_pool.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "sim/base/error.h"

extern char** environ;

namespace archsim {

namespace {

std::vector<char*> argv_of(std::vector<std::string>& all) {
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    return argv;
}

}  // namespace

std::string self_program() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

pid_t spawn_child(const std::string& program, const ChildTask& task) {
    std::vector<std::string> all = {program};
    all.insert(all.end(), task.args.begin(), task.args.end());
    std::vector<char*> argv = argv_of(all);
    setenv("ARCHSIM_DIE_WITH_PARENT", "1", 1);  // a killed parent takes its simulations with it
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, task.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, task.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, program.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw UserError(program, "cannot start a child process: " + std::string(strerror(rc)));
    return pid;
}

void run_children(const std::string& program, size_t count, size_t jobs, const std::function<ChildTask(size_t)>& task,
                  const std::function<void(size_t, int)>& done, const std::function<void(const std::vector<size_t>&)>& waiting) {
    if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
    std::map<pid_t, size_t> running;
    size_t next = 0;
    try {
        while (next < count || !running.empty()) {
            while (next < count && running.size() < jobs) {
                const size_t i = next++;
                running[spawn_child(program, task(i))] = i;
            }
            int status = 0;
            const pid_t pid = waitpid(-1, &status, waiting ? WNOHANG : 0);
            if (pid == 0) {  // all still running: report, then look again shortly
                std::vector<size_t> now;
                for (const auto& [p, i] : running) now.push_back(i);
                waiting(now);
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                continue;
            }
            if (pid < 0) break;  // no children left (they were reaped elsewhere)
            const auto it = running.find(pid);
            if (it == running.end()) continue;
            const size_t i = it->second;
            running.erase(it);
            done(i, status);
        }
    } catch (...) {
        for (const auto& [pid, i] : running) kill(pid, SIGTERM);
        for (const auto& [pid, i] : running) waitpid(pid, nullptr, 0);
        throw;
    }
}

int run_child(const std::string& program, const ChildTask& task) {
    const pid_t pid = spawn_child(program, task);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

bool exited_ok(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string last_line(const std::string& text) {
    std::string t = text;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    const size_t nl = t.rfind('\n');
    return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::string child_failure(int status, const std::string& err_path) {
    const std::string said = last_line(read_file(err_path));
    std::string how;
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        how = "killed by signal " + std::to_string(sig) + " (" + (sig == SIGKILL ? "SIGKILL: the out-of-memory killer, or a user" : strsignal(sig)) + ")";
    } else if (WIFEXITED(status) && said.empty()) {
        how = "exit " + std::to_string(WEXITSTATUS(status)) + " with no message";
    }
    if (how.empty()) return said;
    return said.empty() ? how : how + "; its log ends: " + said;
}

int run_program(const std::string& program, const std::vector<std::string>& args) {
    std::vector<std::string> all = {program};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv = argv_of(all);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), environ);
    if (rc != 0) throw UserError(program, "cannot start: " + std::string(strerror(rc)));
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

}  // namespace archsim
