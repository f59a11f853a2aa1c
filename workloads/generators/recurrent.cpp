#include "workloads/generators/recurrent.h"

#include <onnx/onnx_pb.h>

#include "sim/base/error.h"
#include "workloads/generators/generator_args.h"
#include "workloads/generators/onnx_builder.h"

namespace archsim {

namespace {

/// One recurrent operator's outputs: every step's state Y [S, dirs, B, H] and the last Y_h
/// [dirs, B, H].
struct RecurrentOutputs {
    std::string y, y_h;
};

/// An LSTM or GRU operator on the sequence-first `x` [S, B, in], weights named `w`.{W,R,B}.
RecurrentOutputs recurrent_op(gen::Emitter& e, const std::string& cell, const std::string& x, const std::string& w, int64_t in,
                              int64_t hidden, int64_t dirs) {
    const bool lstm = cell == "lstm";
    const int64_t gates = lstm ? 4 : 3;
    gen::add_weight(e.graph(), w + ".W", {dirs, gates * hidden, in});
    gen::add_weight(e.graph(), w + ".R", {dirs, gates * hidden, hidden});
    gen::add_weight(e.graph(), w + ".B", {dirs, 2 * gates * hidden});
    onnx::NodeProto* n = nullptr;
    const std::string y = e.node(lstm ? "LSTM" : "GRU", {x, w + ".W", w + ".R", w + ".B"}, &n);
    n->add_output(n->name() + "_output_1");
    gen::set_int(*n, "hidden_size", hidden);
    if (dirs == 2) gen::set_string(*n, "direction", "bidirectional");
    if (!lstm) gen::set_int(*n, "linear_before_reset", 1);  // PyTorch's GRU
    return {y, n->name() + "_output_1"};
}

/// A stack of `layers` recurrent operators on the sequence-first `x` [S, B, in]; returns the
/// last layer's outputs with Y folded to [S, B, dirs x H] (and `last` the unfolded ones).
std::string recurrent_stack(gen::Emitter& e, const std::string& cell, std::string x, const std::string& w, int64_t layers, int64_t in,
                            int64_t hidden, int64_t dirs, int64_t seq, int64_t batch, RecurrentOutputs* last = nullptr) {
    for (int64_t l = 0; l < layers; ++l) {
        const RecurrentOutputs o = recurrent_op(e, cell, x, w + ".l" + std::to_string(l), in, hidden, dirs);
        if (last) *last = o;
        x = dirs == 1 ? e.node("Squeeze", {o.y, e.ints({1})}) : e.reshape(e.transpose(o.y, {0, 2, 1, 3}), {seq, batch, dirs * hidden});
        in = dirs * hidden;
    }
    return x;
}

}  // namespace

void build_rnn(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const std::string cell = a.choice_or("cell", "lstm", {"lstm", "gru"});
    const int64_t layers = a.integer("layers");
    const int64_t input = a.integer("input");
    const int64_t hidden = a.integer("hidden");
    const int64_t seq = a.integer("sequence");
    const int64_t dirs = a.boolean_or("bidirectional", false) ? 2 : 1;
    const int64_t classes = a.integer_or("classes", 0, 0);
    auto& g = gen::start_model(model, cell);
    gen::add_input(g, "input", {batch, seq, input});
    gen::Emitter e(g, "/rnn");
    std::string x = recurrent_stack(e, cell, e.transpose("input", {1, 0, 2}), "rnn", layers, input, hidden, dirs, seq, batch);
    x = e.transpose(x, {1, 0, 2});  // [B, S, dirs x H]
    if (classes == 0) {
        gen::add_output(g, x, {batch, seq, dirs * hidden});
        return;
    }
    gen::Emitter h(g, "/fc");
    const std::string last = h.reshape(h.node("Slice", {x, h.ints({seq - 1}), h.ints({seq}), h.ints({1})}), {batch, dirs * hidden});
    gen::add_output(g, h.fc(last, "fc", dirs * hidden, classes), {batch, classes});
}

void build_seq_autoencoder(const GeneratorArgs& a, int64_t batch, onnx::ModelProto& model) {
    const std::string cell = a.choice_or("cell", "lstm", {"lstm", "gru"});
    const int64_t layers = a.integer("layers");
    const int64_t features = a.integer("features");
    const int64_t hidden = a.integer("hidden");
    const int64_t seq = a.integer("sequence");
    auto& g = gen::start_model(model, "seq_autoencoder");
    gen::add_input(g, "input", {batch, seq, features});
    gen::Emitter enc(g, "/encoder");
    RecurrentOutputs code;
    recurrent_stack(enc, cell, enc.transpose("input", {1, 0, 2}), "encoder", layers, features, hidden, 1, seq, batch, &code);
    // the code, repeated at every step: [1, B, H] -> [S, B, H]
    gen::Emitter rep(g, "/repeat");
    const std::string repeated = rep.node("Expand", {code.y_h, rep.ints({seq, batch, hidden})});
    gen::Emitter dec(g, "/decoder");
    std::string x = recurrent_stack(dec, cell, repeated, "decoder", layers, hidden, hidden, 1, seq, batch);
    gen::Emitter out(g, "/output");
    x = out.linear(out.transpose(x, {1, 0, 2}), "output", hidden, features, true);
    gen::add_output(g, x, {batch, seq, features});
}

}  // namespace archsim
