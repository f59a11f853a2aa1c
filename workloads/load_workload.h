#pragma once
// One entry point for every kind of workload file the CLI accepts.
#include <string>

#include "workloads/onnx/importer.h"

namespace archsim {

/// A workload reference as the CLI and study files write it, parsed once: a model file (.onnx, a
/// SCALE-Sim .csv) or the entry NAME of a workload file, written FILE.toml#NAME (NAME may carry an
/// llm phase suffix such as @prefill).
struct WorkloadRef {
    std::string text;   ///< as written
    std::string file;   ///< the file on disk
    std::string entry;  ///< NAME of FILE.toml#NAME; "" for a model file
    /// True for a generated workload (FILE.toml#NAME).
    bool generated() const { return !entry.empty(); }
    /// The name results are filed under: the entry, else the file's stem.
    std::string name() const;
};

/// Splits `text` into a WorkloadRef (no file access).
WorkloadRef parse_workload_ref(const std::string& text);

/// Loads `path`: "FILE.toml#NAME" builds the generated workload NAME of a workload file
/// (workloads/generators/), ".onnx" goes through the ONNX importer, ".csv" is a SCALE-Sim
/// topology. `options.batch` applies to all. Throws UserError for an unknown extension.
ImportResult load_workload(const std::string& path, const ImportOptions& options);

/// The name results are filed under: NAME for "FILE.toml#NAME", else the file's stem.
std::string workload_name(const std::string& path);

}  // namespace archsim
