#pragma once
// Sequences and optionals whose contents are known at import, rewritten on their elements:
// a sequence built by SequenceConstruct / SequenceEmpty / SequenceInsert / SequenceErase /
// SplitToSequence / SequenceMap (or bound to a sample by --inputs) is a known list of tensors,
// so SequenceAt becomes the element it reads, SequenceLength a constant, ConcatFromSequence a
// Concat, SequenceMap its body once per element, and an optional of known presence answers
// OptionalHasElement and OptionalGetElement. What the model then computes is plain tensors,
// which ONNX's shape inference types exactly; a sequence still read as a whole (a graph output,
// an operator without a rewrite) is gathered by one SequenceConstruct over its elements.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>

#include "workloads/onnx/const_fold.h"

namespace archsim {

/// Rewrites `model`'s main graph as above. `consts`: the known constant values (positions,
/// split sizes); `shapes`: the static shapes (SplitToSequence's input); `opset`: the model's
/// default-domain opset. A rewrite that needs a value not known (a position computed at run
/// time, a sequence of unknown length) leaves its node as it is. Sequence and optional nodes no
/// value reads any more are removed. Returns the number of nodes rewritten or removed (0: the
/// graph is unchanged). Throws UserError (naming `file` and the node) for a SequenceMap whose
/// unrolling exceeds kMaxUnrolledNodes or whose sequences differ in length, and for a position
/// outside its sequence.
int64_t resolve_sequences(onnx::ModelProto& model, const std::map<std::string, ConstTensor>& consts, const ShapeMap& shapes,
                          int64_t opset, const std::string& file);

}  // namespace archsim
