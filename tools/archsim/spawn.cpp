#include "tools/archsim/spawn.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sim/base/error.h"

extern char** environ;

namespace archsim::cli {

pid_t spawn_self(const std::string& self, const std::vector<std::string>& args, const std::string& out_path,
                 const std::string& err_path) {
    std::vector<std::string> all = {self};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    setenv("ARCHSIM_DIE_WITH_PARENT", "1", 1);  // a killed parent takes its simulations with it
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw UserError(self, "cannot start a child process: " + std::string(strerror(rc)));
    return pid;
}

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

pid_t spawn_program(const std::string& program, const std::vector<std::string>& args) {
    std::vector<std::string> all = {program};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), environ);
    if (rc != 0) throw UserError(program, "cannot start: " + std::string(strerror(rc)));
    return pid;
}

}  // namespace archsim::cli
