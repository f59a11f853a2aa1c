#pragma once
// The "rnn" and "seq_autoencoder" workload families: stacks of ONNX LSTM / GRU operators.
#include <cstdint>

namespace onnx {
class ModelProto;
}

namespace archsim {

class GeneratorArgs;

/// A stack of recurrent layers as torch.onnx exports nn.LSTM / nn.GRU(batch_first=True) at
/// opset 13: a Transpose to sequence-first, one LSTM (or GRU, linear_before_reset = 1) operator
/// per layer with W [dirs, gates x hidden, in], R [dirs, gates x hidden, hidden] and
/// B [dirs, 2 x gates x hidden] and zero initial states (omitted), the direction axis folded
/// away between layers (Squeeze, or Transpose and Reshape to 2 x hidden features when
/// bidirectional), and a Transpose back. Fields: `cell` (lstm | gru, default lstm), `layers`,
/// `input` (features per step), `hidden`, `sequence` (steps), `bidirectional` (default false),
/// `classes` (default 0: the output is every step's hidden state [batch, sequence, dirs x
/// hidden]; > 0: a Linear classifier on the last step, [batch, classes]). Input [batch,
/// sequence, input]. MACs per layer and direction: sequence x batch x gates x hidden x (in +
/// hidden), the definition of ../shared/models/manifest.csv (lstm2 is layers 2, input 256,
/// hidden 512, sequence 64).
void build_rnn(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

/// A sequence-to-sequence autoencoder (Srivastava et al., ICML 2015, "Unsupervised Learning of
/// Video Representations using LSTMs"; Keras's LSTM autoencoder): an encoder stack reads the
/// sequence, its last layer's final state Y_h [1, batch, hidden] is the code, repeated over
/// every step (Expand; Keras's RepeatVector), a decoder stack of the same shape reads it, and a
/// Linear layer maps each step back to the input's features. Fields: `cell` (lstm | gru,
/// default lstm), `layers` (per stack), `features`, `hidden`, `sequence`. Input and output
/// [batch, sequence, features] (train it with loss = "mse").
void build_seq_autoencoder(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

}  // namespace archsim
