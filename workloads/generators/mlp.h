#pragma once
// The "mlp" workload family.
#include <cstdint>

namespace onnx {
class ModelProto;
}

namespace archsim {

class GeneratorArgs;

/// Builds an MLP: `layers` Linear layers (required, >= 1) from `input` to `output` features
/// (required, except that each defaults to `width` when that is one integer and layers >= 2: a
/// square d -> ... -> d network), hidden widths `width` (an integer, or a list of layers - 1), `activation` between
/// layers (relu | gelu | sigmoid, default relu), `bias` (default true), on a [batch, input]
/// input. Gemm nodes with transB = 1, as torch.onnx exports nn.Linear: the MACs, shapes and
/// parameters equal such an export's (e.g. ../shared/models/mlp.onnx).
void build_mlp(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

}  // namespace archsim
