#pragma once
// One entry point for every kind of workload file the CLI accepts.
#include <string>

#include "workloads/onnx/importer.h"

namespace archsim {

/// Loads `path` by its extension: ".onnx" through the ONNX importer, ".csv" as a SCALE-Sim
/// topology. `options.batch` applies to both. Throws UserError for an unknown extension.
ImportResult load_workload(const std::string& path, const ImportOptions& options);

}  // namespace archsim
