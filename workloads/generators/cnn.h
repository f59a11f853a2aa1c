#pragma once
// The "conv" and "resnet_block" workload families.
#include <cstdint>

namespace onnx {
class ModelProto;
}

namespace archsim {

class GeneratorArgs;

/// A stack of `layers` convolutions on a [batch, in_channels, H, W] input (`input`: H = W, or
/// [H, W]). Per layer (one value for all, or a list of `layers`): `channels` (required), `kernel`
/// (default 3), `stride` (1), `padding` (kernel / 2), `groups` (1). `batch_norm` (default false)
/// adds a BatchNormalization after each convolution, `activation` (relu | gelu | sigmoid | none,
/// default relu) follows it, `bias` (default true).
void build_conv(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

/// A torchvision ResNet block as exported with BatchNorm folded (convolutions with bias):
/// `block` = "basic" (3x3, 3x3) or "bottleneck" (1x1, 3x3, 1x1 with expansion 4: `channels` is
/// the block's output), `in_channels`, `channels`, `stride` (default 1), `size` (input H = W), and
/// a 1x1 projection shortcut when the stride or the channel count changes. Names and operators
/// equal torch.onnx's export of torchvision's BasicBlock / Bottleneck (../shared/models/
/// resnet_basic_block.onnx is resnet18's layer2[0]).
void build_resnet_block(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

}  // namespace archsim
