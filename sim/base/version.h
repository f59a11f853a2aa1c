#pragma once
// archsim's version string, recorded in every trace and printed by --version.
#include <string>

namespace archsim {
/// Semantic version of this build, from CMake's project(VERSION).
const char* version();
/// What tells this build from any other, for keys of results kept between runs (a job's device
/// runs, job_devices.cpp): "archsim <version>, build <hash>", the hash a 64-bit mix of the bytes
/// of the file this code runs from (the executable, or the Python module's shared object), so a
/// rebuild with any change gives another key; the version alone where that file cannot be read.
/// Computed once per process.
const std::string& build_identity();
}  // namespace archsim
