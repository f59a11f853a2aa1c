#pragma once
// Generated workloads: a TOML file of named entries, each a `family` and its parameters, built
// into the same operator graph the ONNX importer produces.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workloads/onnx/importer.h"

namespace archsim {

class GeneratorArgs;

/// One workload family: its name, a one-line description, and its builder. The builder reads the
/// entry's fields (through GeneratorArgs, which checks and records them) and returns an ONNX
/// model with shape-only weights; the importer then costs it exactly as it costs an exported file.
struct WorkloadFamily {
    const char* name;
    const char* doc;
    void (*build)(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);
};

/// The families a workload file may name, one registration line each (workload_file.cpp).
const std::vector<WorkloadFamily>& workload_families();

struct LlmShape;

/// The shape and batch of the llm entry `name` (no '@' phase) of workload file `file`; false if
/// the entry is another family. Throws UserError like generate_workload for a bad entry.
bool read_llm_entry(const std::string& file, const std::string& name, LlmShape& shape, int64_t& batch);

/// Builds workload `name` of workload file `file`: its [name] table with `family = "..."`, or a
/// [workload.name] table (how a study file holds its own workloads). "name@phase" picks an llm
/// phase. `options.batch` overrides the entry's batch. Throws UserError naming the file, the entry
/// and the field for a missing file or entry, an unknown family, a missing required field or a
/// value of the wrong type or range. Scalar fields the family does not use are the user's tags:
/// returned in `tags` (when given) for results tables.
ImportResult generate_workload(const std::string& file, const std::string& name, const ImportOptions& options,
                               std::map<std::string, std::string>* tags = nullptr);

/// The tags of workload `name` of `file` (its scalar fields the family does not use), without
/// importing the model. Throws UserError like generate_workload.
std::map<std::string, std::string> workload_tags(const std::string& file, const std::string& name);

}  // namespace archsim
