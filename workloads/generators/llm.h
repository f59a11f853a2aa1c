#pragma once
// The "llm" workload family: decoder-only language models in two phases, prefill and decode.
#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
}

namespace archsim {

class GeneratorArgs;

/// The shape of a decoder-only model, from a preset and/or explicit fields.
struct LlmShape {
    std::string model_family;        ///< gpt | llama | moe
    int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0;
    int64_t experts = 0, top_k = 0;  ///< moe only
    int64_t max_positions = 0;       ///< gpt: learned position embeddings
    int64_t prompt = 0, generate = 0;
    std::string weights_precision{}, activations_precision{};
    /// Dropout probability in training (GPT-2's embedding, attention and residual dropout: 0.1;
    /// Llama and MoE: 0).
    double dropout = 0;
    /// Parameters the model holds (embeddings, every layer, final norm, an untied LM head).
    int64_t parameters() const;
    /// Bytes per element of the weights and of the activations (fp8 as an 8-bit operand, as the
    /// runs take it: sim/base/precision.h's operand_bytes).
    int64_t weight_elem_bytes() const;
    int64_t activation_elem_bytes() const;
};

/// Reads an llm entry: `preset` (gpt2-small, gpt2-medium, llama2-7b, llama3-8b, mixtral-8x7b)
/// fills the shape, explicit fields override it: `model_family`, `hidden`, `layers`, `heads`,
/// `kv_heads` (grouped-query attention; default heads), `ffn`, `vocab`, `experts` and `top_k`
/// (moe), `max_positions` (gpt), `sequence.prompt` and `sequence.generate` (tokens),
/// `precision.weights` and `precision.activations` (fp32, bf16, fp16, fp8, int8), `dropout`
/// (probability in training; default 0.1 for gpt, 0 otherwise). Throws
/// UserError naming the entry and the field.
LlmShape read_llm_shape(const GeneratorArgs& args);

/// The decode steps a request's `steps` decode steps are priced by (step t, 0 .. steps - 1, attends
/// over prompt + t cached tokens): the first, the two at a third and two thirds, and the last,
/// each once, in order; every other step is interpolated linearly between the two simulated
/// around it (`archsim run` of an llm entry and inference jobs both). Empty for steps <= 0.
std::vector<int64_t> decode_step_samples(int64_t steps);

/// The vocabulary Megatron-LM pads to under tensor parallelism `tp`: the next multiple of 128 x tp
/// (megatron/tokenizer: _vocab_size_with_padding, --make-vocab-size-divisible-by 128).
int64_t padded_vocab(int64_t vocab, int64_t tp);

/// Rows of the vocabulary one of `tp` ranks holds: padded_vocab / tp, the whole unpadded
/// vocabulary without tensor parallelism.
int64_t vocab_shard(int64_t vocab, int64_t tp);

/// One device's part of the model under tensor and pipeline parallelism (the entry's optional
/// `shard` table): Megatron-LM's column/row splits give each of `tp` ranks heads/tp query heads
/// (kv_heads/tp KV heads, at least one), ffn/tp of the feed-forward width and padded_vocab/tp of
/// the (vocabulary-parallel) embedding and LM head; a pipeline chunk holds `layers` layers, the
/// embeddings only if `embedding` (else its input is the previous chunk's hidden states,
/// `hidden_in` [batch, tokens, hidden]) and the final norm and LM head only if `head` (else its
/// output is its hidden states). The collectives between ranks are not operators: the job
/// simulator (sim/cluster) adds them. Defaults: the whole model on one device.
struct LlmShard {
    int64_t tp = 1, layers = 0;
    /// Expert-parallel ranks: a rank holds experts/ep experts and runs the tokens routed to them
    /// from all ep ranks (under balanced routing as many rows as its own tokens x top_k); its
    /// router scores its own experts only.
    int64_t ep = 1;
    bool embedding = true, head = true;
    /// Megatron-LM's sequence parallelism (Korthikanti et al., MLSys 2023): with tp > 1, the
    /// layer's norms, dropouts and residual sums (and the embedding's dropout) run on this rank's
    /// 1/tp of the tokens, the residual stream (a chunk's input and output included) holds only
    /// them, and the tokens are gathered before each column-parallel GEMM and scattered after
    /// each row-parallel one (archsim.SequenceGather / SequenceScatter: views on the device, the
    /// collectives are the job's); a row-parallel GEMM's bias is added after the scatter, as
    /// Megatron's fused bias-dropout-add does. No effect at tp 1 or in decode (one token).
    bool sequence_parallel = false;
};

/// Reads `shard.tp`, `shard.ep`, `shard.layers`, `shard.embedding`, `shard.head` and
/// `shard.sequence_parallel` of an llm entry of shape `s`. Throws UserError naming the field
/// when tp does not divide heads or ffn (or fit kv_heads), ep does not divide the experts,
/// layers exceeds the model's, or sequence parallelism at tp > 1 meets a prompt tp does not divide.
LlmShard read_llm_shard(const GeneratorArgs& args, const LlmShape& s);

/// Builds one phase of the model, chosen by args.phase(): "prefill" (the prompt, all tokens at
/// once; the default), "decode=L" (one token per sequence attending over a KV cache of L
/// earlier tokens, given as graph inputs past_key_<layer> and past_value_<layer>) or "train"
/// (the forward pass of training on sequences of `sequence.prompt` tokens: the LM head on every
/// token, dropout layers in training mode where `dropout` > 0 (after the embeddings, on the
/// attention probabilities, after each sublayer's output projection), GPT's LayerNorm and GELU
/// as single fused operators, as a training framework runs them; opset 17). GPT: learned
/// positions, LayerNorm, biased projections, GELU MLP, LM head tied to the embeddings. Llama:
/// RMSNorm, no biases, SwiGLU FFN (gate, up, down), untied LM head. MoE: Llama layers whose FFN
/// is `experts` SwiGLU experts behind a router, `top_k` per token, routing assumed balanced (the
/// batch's tokens x top_k spread evenly over min(experts, tokens x top_k) experts). Attention
/// groups query heads by KV head ([batch, kv_heads, group x tokens, head_dim]), so a KV head's
/// cache is read once per group. In prefill and decode the LM head runs on the last token only
/// (as serving stacks do).
/// Not modeled: the causal mask and rotary embeddings (elementwise, small next to the matmuls).
void build_llm(const GeneratorArgs& args, int64_t batch, onnx::ModelProto& model);

}  // namespace archsim
