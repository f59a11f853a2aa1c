#pragma once
// A small input file written for a test.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace archsim::test {

/// Writes `text` to `name` in this process's own folder under the system temp dir
/// (archsim_test_<pid>/), so that tests run in parallel (one process per ctest entry) never
/// overwrite each other's inputs; returns its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("archsim_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
}

}  // namespace archsim::test
