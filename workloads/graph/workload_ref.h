#pragma once
// How the CLI and study files name a workload: a model file or FILE.toml#NAME. A leaf of the
// workloads layer: the importer and the generators name their graphs by it without depending on
// the dispatcher (load_workload.h) that calls them.
#include <string>

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

/// The name results are filed under: NAME for "FILE.toml#NAME", else the file's stem.
std::string workload_name(const std::string& path);

}  // namespace archsim
