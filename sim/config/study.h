#pragma once
// A comparison study: models x machines (each machine a config file plus overrides).
#include <string>
#include <vector>

namespace archsim {

/// One machine of a study: a label for tables and plots, a machine config, and `--set`
/// overrides applied on top of it.
struct StudyMachine {
    std::string label;
    std::string config;               ///< resolved against the study file's folder
    std::vector<std::string> sets;    ///< "key=value"
};

/// A study file (configs/studies/*.toml):
///   name = "..."; description = "..."; models = ["path.onnx", ...]
///   [[machine]] label = "T64"; config = "../kpu/t64.toml"; set = ["tiles.rows=2", ...]
/// Paths are relative to the study file's folder.
struct StudySpec {
    std::string file;
    std::string name;
    std::string description;
    std::vector<std::string> models;
    std::vector<StudyMachine> machines;
};

/// Reads and checks a study file. Throws UserError("file: key", reason) for a syntax error, an
/// unknown or missing key, a wrong type, an empty list, a duplicate label or a missing file.
StudySpec load_study(const std::string& file);

}  // namespace archsim
