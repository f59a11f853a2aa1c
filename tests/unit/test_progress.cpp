// Progress on long work: nothing before its quiet time or with --quiet, then plain lines naming
// the count, the total and the item at work when stderr is not a terminal.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/base/progress.h"

using namespace archsim;

namespace {

/// What `body` wrote to stderr (redirected to a file for the call).
template <class F>
std::string stderr_of(F body) {
    const std::string path = (std::filesystem::temp_directory_path() / ("archsim_progress_" + std::to_string(::getpid()))).string();
    std::fflush(stderr);
    const int saved = dup(2);
    FILE* f = std::fopen(path.c_str(), "w");
    dup2(fileno(f), 2);
    body();
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::fclose(f);
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::filesystem::remove(path);
    return ss.str();
}

}  // namespace

TEST_CASE("progress is silent before its quiet time and under --quiet, then prints plain lines to a log", "[unit][progress]") {
    const std::string early = stderr_of([] {
        Progress p("operators", 10, true, 3600.0, 0.0);  // an hour of quiet: a short run prints nothing
        p.update(5, "conv1");
    });
    CHECK(early.empty());
    const std::string quiet = stderr_of([] {
        Progress p("operators", 10, false, 0.0, 0.0);
        p.update(5, "conv1");
    });
    CHECK(quiet.empty());
    const std::string log = stderr_of([] {
        Progress p("operators", 10, true, 0.0, 0.0);
        p.update(5, "layer1.0/conv1");
    });
    CHECK(log.find("5/10 operators done (50%)") != std::string::npos);
    CHECK(log.find("now layer1.0/conv1") != std::string::npos);
    CHECK(log.find('\r') == std::string::npos);  // not a terminal: lines, no bar
}
