#include "workloads/load_workload.h"

#include <filesystem>

#include "sim/common/error.h"
#include "workloads/generators/workload_file.h"
#include "workloads/scalesim/topology_csv.h"

namespace archsim {

std::string workload_name(const std::string& path) {
    const size_t hash = path.find(".toml#");
    if (hash != std::string::npos) return path.substr(hash + 6);
    return std::filesystem::path(path).stem().string();
}

ImportResult load_workload(const std::string& path, const ImportOptions& options) {
    const size_t hash = path.find(".toml#");
    if (hash != std::string::npos) return generate_workload(path.substr(0, hash + 5), path.substr(hash + 6), options);
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".onnx") return import_onnx(path, options);
    if (ext == ".csv") return ImportResult{read_scalesim_topology(path, options.batch.value_or(1)), {}, 0};
    throw UserError(path, "unknown workload type '" + ext + "' (expected .onnx, a SCALE-Sim topology .csv, or FILE.toml#NAME)");
}

}  // namespace archsim
