#pragma once
// One entry point for every kind of workload file the CLI accepts.
#include <string>

#include "workloads/onnx/importer.h"
#include "workloads/graph/workload_ref.h"

namespace archsim {

/// Loads `path`: "FILE.toml#NAME" builds the generated workload NAME of a workload file
/// (workloads/generators/), ".onnx" goes through the ONNX importer, ".csv" is a SCALE-Sim
/// topology. `options.batch` applies to all. Throws UserError for an unknown extension.
ImportResult load_workload(const std::string& path, const ImportOptions& options);

}  // namespace archsim
