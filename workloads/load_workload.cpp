#include "workloads/load_workload.h"

#include <filesystem>

#include "sim/common/error.h"
#include "workloads/scalesim/topology_csv.h"

namespace archsim {

ImportResult load_workload(const std::string& path, const ImportOptions& options) {
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".onnx") return import_onnx(path, options);
    if (ext == ".csv") return ImportResult{read_scalesim_topology(path, options.batch.value_or(1)), {}, 0};
    throw UserError(path, "unknown workload type '" + ext + "' (expected .onnx or a SCALE-Sim topology .csv)");
}

}  // namespace archsim
