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

/// The import options a caller's values ask for: `dims` binds symbolic dims by name, `batch` sets
/// dim 0 of every input (0: as in the model), `workload_sets` sets fields of a generated workload
/// ("KEY=VALUE"), `inputs` names sample inputs ("": none; a directory of input_<i>.pb or one .pb
/// file). The CLI and the Python module both build their options here. Throws UserError for
/// sample inputs that cannot be found.
ImportOptions make_import_options(const std::map<std::string, int64_t>& dims, int64_t batch, bool allow_unsupported,
                                  const std::vector<std::string>& workload_sets, const std::string& inputs);

}  // namespace archsim
