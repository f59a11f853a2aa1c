#pragma once
// The "conv_autoencoder", "separable_cnn" and "tcn" workload families: convolutional networks
// of the training suite.
#include <cstdint>

namespace onnx {
class ModelProto;
}

namespace archsim {

class GeneratorArgs;

/// A convolutional autoencoder with skip connections, U-Net's shape (Ronneberger et al., MICCAI
/// 2015): `depth` encoder levels (default 3) of two 3x3 convolutions (padding 1, ReLU, each
/// with a BatchNormalization when `batch_norm`, default false) and a 2x2 max pool, a bottleneck
/// of two convolutions, and `depth` decoder levels of a 2x2 stride-2 ConvTranspose halving the
/// channels, the skip from the encoder level of the same size (`skip`: concat, as U-Net | add,
/// as a residual autoencoder | none, a plain autoencoder) and two convolutions; a 1x1
/// convolution back to `in_channels` (default 3) and a Sigmoid. Level i has `channels` x 2^i
/// channels (`channels` default 32). Input and output [batch, in_channels, H, W] with `size` = H
/// = W or [H, W], both divisible by 2^depth (train it with loss = "mse").
void build_conv_autoencoder(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

/// A depthwise-separable CNN with squeeze-and-excitation: MobileNet's blocks (Howard et al.,
/// arXiv:1704.04861, 2017) with MobileNetV3's placement of SE (Howard et al., ICCV 2019; SE of
/// Hu et al., CVPR 2018). A 3x3 stride-2 stem convolution of `stem` channels (default 32), then
/// `blocks` blocks, each a 3x3 depthwise convolution (groups = channels, stride `stride`, one
/// value or one per block, default 1), an SE unit when `se_ratio` > 0 (default 0.25: global
/// average pool, 1x1 convolution to max(1, channels x se_ratio), ReLU, 1x1 convolution back,
/// Sigmoid, channel-wise Mul) and a 1x1 pointwise convolution to `channels` (one value or one
/// per block); every convolution but the SE's is followed by a BatchNormalization (`batch_norm`,
/// default true) and `activation` (relu | silu, default relu). The head: global average pool,
/// Flatten and a Linear layer to `classes` (default 1000; 0 = no head, the output is the last
/// feature map). Input [batch, in_channels (default 3), H, W], `size` = H = W or [H, W].
void build_separable_cnn(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

/// A temporal convolutional network (Bai, Kolter and Koltun, arXiv:1803.01271, 2018): `levels`
/// residual blocks, block i two dilated causal 1-D convolutions of `kernel` taps (default 3),
/// dilation 2^i and `channels` outputs (one value or one per level), each followed by a ReLU,
/// plus the block's input (through a 1x1 convolution when the channel count changes), then a
/// ReLU. Causal: each convolution pads (kernel - 1) x dilation steps before the sequence and none
/// after (ONNX Conv's asymmetric pads), so it computes exactly `sequence` outputs (the
/// reference code pads both ends and chomps the extra outputs, computing (kernel - 1) x dilation
/// more per convolution). The reference's weight normalization and dropout are not built. Input
/// [batch, in_channels, sequence]; output every step [batch, channels, sequence], or with
/// `classes` > 0 a Linear layer on the last step, [batch, classes] (the reference's sequential
/// MNIST head).
void build_tcn(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

}  // namespace archsim
