#include "workloads/load_workload.h"

#include <filesystem>

#include "sim/base/error.h"
#include "workloads/generators/workload_file.h"
#include "workloads/onnx/input_data.h"
#include "workloads/scalesim/topology_csv.h"

namespace archsim {

ImportResult load_workload(const std::string& path, const ImportOptions& options) {
    const WorkloadRef ref = parse_workload_ref(path);
    if (ref.generated()) return generate_workload(ref.file, ref.entry, options);
    if (!options.workload_sets.empty())
        throw UserError(path, "workload sets ('" + options.workload_sets.front() + "') apply to a generated workload (FILE.toml#NAME) only");
    if (std::filesystem::is_directory(path))
        throw UserError(path, "is a folder, not a model (give an .onnx file, a SCALE-Sim topology .csv, or FILE.toml#NAME)");
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".onnx") return import_onnx(path, options);
    if (ext == ".csv") return ImportResult{read_scalesim_topology(path, options.batch.value_or(1)), {}, 0};
    throw UserError(path, "unknown workload type '" + ext + "' (expected .onnx, a SCALE-Sim topology .csv, or FILE.toml#NAME)");
}

ImportOptions make_import_options(const std::map<std::string, int64_t>& dims, int64_t batch, bool allow_unsupported,
                                  const std::vector<std::string>& workload_sets, const std::string& inputs) {
    ImportOptions opt;
    opt.dims = dims;
    if (batch > 0) opt.batch = batch;
    opt.allow_unsupported = allow_unsupported;
    opt.workload_sets = workload_sets;
    if (!inputs.empty()) opt.input_files = input_data_files(inputs);
    return opt;
}

}  // namespace archsim
