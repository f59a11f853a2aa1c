#include "tests/support/cli.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace archsim::test {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string temp_dir(const std::string& tag) {
    std::random_device rd;
    fs::path p = fs::temp_directory_path() / ("archsim_test_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(rd()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p.string();
}

CliResult run_command(const std::string& command) {
    const std::string dir = temp_dir("cli");
    const std::string out = dir + "/stdout", err = dir + "/stderr";
    const std::string cmd = command + " > " + out + " 2> " + err + " < /dev/null";
    int status = std::system(cmd.c_str());
    CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    fs::remove_all(dir);
    return r;
}

CliResult run_archsim(const std::string& args) { return run_command(std::string(ARCHSIM_BIN) + " " + args); }

nlohmann::json run_json_ok(const std::string& args) {
    const std::string out = temp_dir("json");
    CliResult r = run_archsim(args + " --format json --out " + out);
    INFO(args << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    fs::remove_all(out);
    return nlohmann::json::parse(r.out);
}

std::string shared_path(const std::string& rel) { return std::string(ARCHSIM_SHARED_DIR) + "/" + rel; }
bool have_shared() { return fs::is_directory(ARCHSIM_SHARED_DIR "/models"); }

}  // namespace archsim::test
