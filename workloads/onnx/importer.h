#pragma once
// ONNX file -> OpGraph: load, bind dims, run ONNX shape inference, fold shape subgraphs, cost ops.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workloads/graph/op_graph.h"

namespace onnx {
class ModelProto;
}

namespace archsim {

/// What the user may say about a model when importing it.
struct ImportOptions {
    std::map<std::string, int64_t> dims;   ///< binds symbolic dims by name (--dim name=value)
    std::optional<int64_t> batch;          ///< sets dim 0 of every model input (--batch N)
    bool allow_unsupported = false;        ///< unknown ops become zero-cost Unsupported nodes
    /// A generated workload's (FILE.toml#NAME) fields set to other values, "KEY=VALUE"
    /// (--workload-set, a study's workload.KEY axis); an error for any other model file.
    std::vector<std::string> workload_sets;
    /// Sample inputs (--inputs: serialized TensorProto / SequenceProto files, input_data.h):
    /// they bind the inputs' dims, and small control inputs' values.
    std::vector<std::string> input_files;
};

/// Result of an import: the graph and the warnings the user should see.
struct ImportResult {
    OpGraph graph;
    std::vector<std::string> warnings;   ///< e.g. "node 'x' (Foo): unsupported op, costed as zero"
    int64_t folded_nodes = 0;             ///< nodes removed by constant folding
};

/// Imports an ONNX model. Weight bytes are never read: initializers stored as external data
/// contribute only their dims. External data that folding needs must lie inside the model's
/// folder. Throws UserError (one line: file, node or tensor, reason) for a missing, truncated or
/// non-ONNX file, an opset newer than the ONNX library knows, a dim left unknown, an unsupported
/// op (unless allowed), inconsistent shapes, a cycle or a missing initializer.
ImportResult import_onnx(const std::string& path, const ImportOptions& options = {});

/// The same for a model already in memory (the workload generators build ModelProtos); `path`
/// names it in errors and in the graph.
ImportResult import_onnx_model(onnx::ModelProto model, const std::string& path, const ImportOptions& options = {});

/// The same for a serialized model in memory (the fuzz harness); `name` names it in errors.
ImportResult import_onnx_bytes(const std::string& bytes, const std::string& name, const ImportOptions& options = {});

/// Parses "name=value" (value a positive integer) into `dims`; throws UserError otherwise.
void parse_dim_binding(const std::string& text, std::map<std::string, int64_t>& dims);

}  // namespace archsim
