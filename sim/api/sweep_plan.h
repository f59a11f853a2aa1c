#pragma once
// Expanding a study file into its points: every model x machine x combination of axis values.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/api/study.h"

namespace archsim {

/// One simulation of a sweep.
struct SweepPoint {
    size_t index = 0;             ///< position in the study's expansion order (machines, models, axes)
    std::string id;               ///< stable identity: 16 hex digits (see plan_sweep)
    std::string machine;          ///< the machine's label
    std::string kind;             ///< its machine kind
    std::string model;            ///< model file path
    std::vector<std::pair<std::string, std::string>> axes;  ///< axis key -> value of this point
    std::map<std::string, std::string> tags;                ///< a generated workload's user tags
    std::vector<std::string> sets;    ///< config overrides: the machine's, then the axes'
    /// A generated workload's fields set by `workload.KEY` axes: "KEY=VALUE" (run --workload-set)
    std::vector<std::string> workload_sets;
    int64_t batch = 0;                ///< 0 = as in the model
    std::string resolved_config;      ///< the machine config with every override applied (TOML)
};

/// The points of a study, in a fixed order, and what was left out.
struct SweepPlan {
    std::vector<SweepPoint> points;
    std::vector<std::string> axis_keys;  ///< every axis key, in first-seen order (global axes first)
    std::vector<std::string> tag_keys;   ///< every workload tag key (sorted)
    size_t skipped = 0;                  ///< points dropped by [[skip]] rules
};

/// Expands `study`: for each machine, each model, each combination of the global and the
/// machine's axes (cartesian product, or element-wise for mode = "zip"), minus [[skip]] matches.
/// An axis `workload.KEY` sets field KEY of a generated workload (FILE.toml#NAME or a study's own
/// [workload.NAME]) instead of a config key: `workload.mode` = ["infer", "train"] compares an
/// inference with a training step, `workload.width` sweeps an MLP's width.
/// Every point's config is resolved here (the machine file plus overrides, through the machine
/// kind's schema), so a bad key or value fails before anything runs; each model's workload keys
/// are checked on its first point. The point id is the FNV-1a hash (then the splitmix64
/// finalizer) of the resolved config, the model (file name, size and a hash of its first MiB),
/// the batch and the workload sets (when any): extending a study, renaming a label or moving the
/// repository keeps the ids of old points. Throws UserError naming the study file, the machine
/// and the problem.
SweepPlan plan_sweep(const StudySpec& study);

}  // namespace archsim
