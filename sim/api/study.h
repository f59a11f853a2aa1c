#pragma once
// A study file: models x machines x axes, parsed once for the study engine (`sweep`, `compare`).
#include <string>
#include <vector>

namespace archsim {

/// One swept dimension: a config key (or `batch`), and the values it takes, as TOML wrote them
/// (strings unquoted).
struct StudyAxis {
    std::string key;
    std::vector<std::string> values;
};

/// A rule that drops points: a point matching every condition is skipped. Conditions are on
/// `machine` (label), `model` (file stem) or an axis key; each allows one or more values.
struct StudySkip {
    std::vector<std::pair<std::string, std::vector<std::string>>> conditions;
};

/// One machine of a study: a label for tables and plots, a machine config, `--set` overrides
/// applied on top of it, and axes swept on this machine only.
struct StudyMachine {
    std::string label;
    std::string config;               ///< resolved against the study file's folder
    std::vector<std::string> sets;    ///< "key=value"
    std::vector<StudyAxis> axes;      ///< [machine.axes]: swept on this machine only
};

/// A study file (configs/studies/*.toml):
///   name = "..."; description = "..."; models = ["path.onnx", ...]; mode = "product" | "zip"
///   [axes] "array.rows" = [16, 32]; batch = [1, 8]; precision = ["int8", "fp16"]
///   [[machine]] label = "T64"; config = "../kpu/t64.toml"; set = ["tiles.rows=2", ...]
///               axes = { "tiles.rows" = [2, 4] }   (swept on this machine only)
///   [[skip]] machine = "T4"; precision = ["bf16"]  (drop the points matching all of these)
///   [workload.w1] family = "mlp"; ...   (a generated workload of this file: models = ["#w1"];
///                                        models may also be "FILE.toml#NAME" of a workload file)
/// Axes combine as a cartesian product (mode = "product", the default) or element-wise (mode =
/// "zip": every axis of a machine must then have the same number of values). `batch` sets the
/// workload batch; `workload.KEY` sets field KEY of a generated workload (run --workload-set);
/// any other axis key is a config key of the machine, or several joined by commas
/// ("array.rows,array.cols" = [32, 64] sweeps square arrays). Paths are relative to the study
/// file's folder.
struct StudySpec {
    std::string file;
    std::string name;
    std::string description;
    std::string mode = "product";
    std::vector<std::string> models;
    std::vector<StudyMachine> machines;
    std::vector<StudyAxis> axes;      ///< [axes]: swept on every machine
    std::vector<StudySkip> skips;
};

/// Reads and checks a study file. Throws UserError("file: key", reason) for a syntax error, an
/// unknown or missing key, a wrong type, an empty list, a duplicate label or axis, a missing
/// file, or zipped axes of different lengths.
StudySpec load_study(const std::string& file);

/// The `name` of study file `file` (its stem when it has none), without checking the rest: a
/// sweep folder's copy of its study, whose relative model paths no longer resolve. Throws
/// UserError for a missing file or a TOML syntax error.
std::string study_name(const std::string& file);

}  // namespace archsim
