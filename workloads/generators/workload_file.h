#pragma once
// Generated workloads: a TOML file of named entries, each a `family` and its parameters, built
// into the same operator graph the ONNX importer produces.
#include <cstdint>
#include <map>
#include <optional>
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

/// The shape and batch of the llm entry `name` (no '@' phase) of workload file `file`, its fields
/// `sets` applied (see apply_workload_sets); false if the entry is another family. Throws
/// UserError like generate_workload for a bad entry.
bool read_llm_entry(const std::string& file, const std::string& name, LlmShape& shape, int64_t& batch,
                    const std::vector<std::string>& sets = {});

/// What an entry asks of a run besides its graph: `mode` = "infer" (the default) or "train" (a
/// training step, as `run --train`), and for training the optional fields `optimizer`, `loss`,
/// `recompute`, `microbatches` and `setup` (as the run flags of the same names; a flag given on
/// the command line wins; under "infer" they are checked and unused), and the precision it runs
/// at: an llm entry's `precision.weights`, or any entry's `precision` string (fp8 runs as int8),
/// which wins over the machine's (sim/engine/run_choice.h). Absent fields stay empty.
struct WorkloadRunFields {
    bool train = false;
    std::string optimizer, loss, recompute;  ///< "" = not set by the entry
    int64_t microbatches = 0;                ///< 0 = not set
    std::optional<bool> setup;               ///< not set, or the entry's value
    std::string precision;                   ///< "" = not set by the entry
};
/// The run fields of entry `name` (an '@' phase suffix is ignored) of `file`, `sets` applied.
/// Throws UserError naming the field for a bad value, like generate_workload for a bad entry.
WorkloadRunFields read_workload_run_fields(const std::string& file, const std::string& name, const std::vector<std::string>& sets = {});

/// Builds workload `name` of workload file `file`: its [name] table with `family = "..."`, or a
/// [workload.name] table (how a study file holds its own workloads). "name@phase" picks an llm
/// phase. `options.batch` overrides the entry's batch; `options.workload_sets` override its fields
/// ("KEY=VALUE", KEY dotted into sub-tables, VALUE read as a TOML value or else as a string; a key
/// the family does not read is an error, so a typo never becomes a silent tag). Throws UserError
/// naming the file, the entry and the field for a missing file or entry, an unknown family, a
/// missing required field or a value of the wrong type or range. Scalar fields the family does
/// not use (nor the run fields, see WorkloadRunFields) are the user's tags: returned in `tags`
/// (when given) for results tables.
ImportResult generate_workload(const std::string& file, const std::string& name, const ImportOptions& options,
                               std::map<std::string, std::string>* tags = nullptr);

/// The tags of workload `name` of `file` (its scalar fields the family does not use), without
/// importing the model. Throws UserError like generate_workload.
std::map<std::string, std::string> workload_tags(const std::string& file, const std::string& name);

}  // namespace archsim
