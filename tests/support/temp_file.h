#pragma once
// A small input file written for a test.
#include <filesystem>
#include <fstream>
#include <string>

namespace archsim::test {

/// Writes `text` to `name` under the system temp dir; returns its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
    const std::string path = (std::filesystem::temp_directory_path() / name).string();
    std::ofstream(path) << text;
    return path;
}

}  // namespace archsim::test
