#pragma once
// Sample inputs for a model (--inputs): the dims of inputs with symbolic dims, and the values of
// small control inputs (a Loop's trip count, an If's condition, a window's size) that decide
// shapes and control flow at import.
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace archsim {

/// The files of `spec`: a directory's input_<i>.pb in index order (an ONNX test data set), else
/// `spec` itself. Throws UserError naming `spec` for a missing path or a directory without any.
std::vector<std::string> input_data_files(const std::string& spec);

/// Binds `model`'s graph inputs (those without an initializer) to the serialized samples in
/// `files`: each an onnx.TensorProto, or an onnx.SequenceProto / onnx.OptionalProto for a
/// sequence / optional input; a tensor sample is matched by its name when it names an input, any
/// other by position. Every tensor input given takes the sample's dims. A sequence input becomes
/// one input "<name>/<i>" per element of its sample (its dims) and a SequenceConstruct over them
/// (SequenceEmpty for an empty sample), so its length is known; an optional input becomes an
/// Optional node over its sample's value, or an empty Optional. An integer or boolean input of at most kMaxFoldElems
/// elements, or a float scalar, also takes the sample's value: it becomes a constant, so
/// folding and control flow see it (unless `values` is false: dims only). Throws UserError (naming `file` and the sample) for an
/// unreadable sample, one matching no input, or more samples than inputs.
void bind_input_data(onnx::ModelProto& model, const std::vector<std::string>& files, const std::string& file, bool values = true);

}  // namespace archsim
