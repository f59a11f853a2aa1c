#pragma once
// archsim's version string, recorded in every trace and printed by --version.
namespace archsim {
/// Semantic version of this build, from CMake's project(VERSION).
const char* version();
}  // namespace archsim
