// The training suite's workload families (workloads/training_suite.toml): each family's MACs
// and parameters against its closed form (and against a real export or the published figure
// where one exists), and each preset's training step against autograd's rule: one gradient
// GEMM per contraction operand that requires a gradient.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "workloads/graph/op_graph.h"
#include "workloads/load_workload.h"
#include "workloads/training/training_step.h"

using namespace archsim;

namespace {

const std::string kSuite = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/training_suite.toml";

/// Preset `name` of the suite with the workload sets `sets` applied.
OpGraph preset(const std::string& name, const std::vector<std::string>& sets = {}) {
    ImportOptions opt;
    opt.workload_sets = sets;
    return load_workload(kSuite + "#" + name, opt).graph;
}

int64_t count_ops(const OpGraph& g, const std::string& type) {
    int64_t n = 0;
    for (const Operator& op : g.ops()) n += op.op_type == type;
    return n;
}

/// Autograd's MACs for the backward of `g`: per GEMM view, the forward's MACs once for A's
/// gradient when A depends on a trained weight (a recurrent state, A = -1, always does) and once
/// for B's when B does.
int64_t autograd_backward_macs(const OpGraph& g) {
    std::set<int32_t> requires_grad;
    for (size_t t = 0; t < g.tensors().size(); ++t)
        if (g.tensors()[t].role == TensorRole::Weight) requires_grad.insert(static_cast<int32_t>(t));
    for (const int32_t i : g.topo_order()) {
        const Operator& op = g.ops()[static_cast<size_t>(i)];
        bool any = false;
        for (const int32_t t : op.inputs) any = any || requires_grad.count(t);
        if (any)
            for (const int32_t t : op.outputs) requires_grad.insert(t);
    }
    int64_t macs = 0;
    for (const Operator& op : g.ops())
        for (const GemmView& v : op.cost.gemms)
            macs += v.macs() * ((v.a.tensor < 0 || requires_grad.count(v.a.tensor)) + (requires_grad.count(v.b.tensor) ? 1 : 0));
    return macs;
}

}  // namespace

TEST_CASE("the rnn family equals shared/models/lstm2.onnx and the recurrent MAC formula", "[import][generators][training]") {
    const std::string onnx = std::string(ARCHSIM_SHARED_DIR) + "/models/lstm2.onnx";
    const OpGraph lstm = preset("lstm_classifier", {"layers=2", "input=256", "hidden=512", "sequence=64", "classes=0", "batch=1"});
    if (std::filesystem::exists(onnx)) {
        const OpGraph ref = load_workload(onnx, {}).graph;
        CHECK(lstm.total_macs() == ref.total_macs());  // 234,881,024 (manifest.csv)
        CHECK(count_ops(lstm, "LSTM") == count_ops(ref, "LSTM"));
    }
    CHECK(lstm.total_params() == 3678208);  // manifest.csv's parameter count of lstm2
    // a bidirectional GRU: dirs x seq x batch x 3 H x (in + H) per layer, the second reading 2 H
    const OpGraph gru = preset("bigru_tagger");
    const int64_t per_step = 2 * 64 * 32 * 3 * 256;
    CHECK(gru.total_macs() == per_step * (300 + 256) + per_step * (512 + 256));
    CHECK(count_ops(gru, "GRU") == 2);
    // the classifier head reads the last step only
    const OpGraph cls = preset("lstm_classifier");
    const int64_t steps = 100 * 32;
    CHECK(cls.total_macs() == steps * 4 * 256 * (128 + 256) + steps * 4 * 256 * (256 + 256) + 32 * 256 * 10);
}

TEST_CASE("the seq_autoencoder family: encoder, repeated code, decoder and output layer", "[import][generators][training]") {
    const OpGraph g = preset("lstm_autoencoder");
    const int64_t s = 50, b = 32, f = 64, h = 128;
    CHECK(g.total_macs() == s * b * 4 * h * (f + h) + s * b * 4 * h * (h + h) + s * b * h * f);
    CHECK(count_ops(g, "Expand") == 1);
    CHECK(g.tensors()[static_cast<size_t>(g.ops().back().outputs[0])].shape == std::vector<int64_t>{b, s, f});
    const OpGraph gru = preset("lstm_autoencoder", {"cell=gru", "layers=2"});
    CHECK(gru.total_macs() == s * b * 3 * h * ((f + h) + 3 * (h + h)) + s * b * h * f);
}

TEST_CASE("the conv_autoencoder family: U-Net's convolutions level by level, for each kind of skip", "[import][generators][training]") {
    const int64_t n = 2, c = 3, base = 8, depth = 3, size = 32;
    for (const std::string skip : {"concat", "add", "none"}) {
        INFO(skip);
        const OpGraph g = preset("unet_autoencoder", {"batch=2", "channels=8", "size=32", "skip=\"" + skip + "\""});
        int64_t macs = 0, in = c;
        for (int64_t i = 0; i < depth; ++i) {
            const int64_t hw = (size >> i) * (size >> i), out = base << i;
            macs += hw * out * in * 9 + hw * out * out * 9;
            in = out;
        }
        const int64_t hw_b = (size >> depth) * (size >> depth), mid = base << depth;
        macs += hw_b * mid * in * 9 + hw_b * mid * mid * 9;
        in = mid;
        for (int64_t i = depth - 1; i >= 0; --i) {
            const int64_t hw = (size >> i) * (size >> i), out = base << i;
            macs += (hw / 4) * in * out * 4;  // 2x2 stride-2 ConvTranspose: input pixels x Cin x Cout x taps
            macs += hw * out * (skip == "concat" ? 2 * out : out) * 9 + hw * out * out * 9;
            in = out;
        }
        macs += size * size * c * base;  // the 1x1 reconstruction
        CHECK(g.total_macs() == n * macs);
        CHECK(count_ops(g, "Concat") == (skip == "concat" ? depth : 0));
        CHECK(g.tensors()[static_cast<size_t>(g.ops().back().outputs[0])].shape == std::vector<int64_t>{n, c, size, size});
    }
}

TEST_CASE("the separable_cnn family without squeeze-excite is MobileNet v1: 569 M MACs, 4.2 M parameters", "[import][generators][training]") {
    // Howard et al. 2017, Table 2 (1.0 MobileNet-224: 569 million mult-adds, 4.2 million parameters)
    const OpGraph g = preset("mobilenet_se", {"se_ratio=0", "batch_norm=false", "batch=1"});
    CHECK(double(g.total_macs()) == Approx(569e6).epsilon(0.001));
    CHECK(double(g.total_params()) == Approx(4.2e6).epsilon(0.01));
    // the closed form: stem, then per block depthwise (9 per output) and pointwise, then the classifier
    const std::vector<int64_t> ch = {64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024};
    const std::vector<int64_t> st = {1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1};
    int64_t hw = 112, c = 32, macs = 112 * 112 * 32 * 27;
    for (size_t i = 0; i < ch.size(); ++i) {
        hw = (hw + 2 - 3) / st[i] + 1;
        macs += hw * hw * c * 9 + hw * hw * c * ch[i];
        c = ch[i];
    }
    CHECK(g.total_macs() == macs + 1024 * 1000);
    // squeeze-excite adds two 1x1 convolutions per block on the pooled channels
    const OpGraph se = preset("mobilenet_se", {"batch_norm=false", "batch=1"});
    int64_t se_macs = 0;
    c = 32;
    for (size_t i = 0; i < ch.size(); ++i) se_macs += 2 * c * (c / 4), c = ch[i];
    CHECK(se.total_macs() == g.total_macs() + se_macs);
    CHECK(count_ops(se, "GlobalAveragePool") == 14);
}

TEST_CASE("the tcn family: causal dilated convolutions keep the sequence length", "[import][generators][training]") {
    const OpGraph g = preset("tcn_seq_mnist", {"levels=4", "channels=[16, 16, 32, 32]", "batch=2"});
    const int64_t s = 784, k = 7, b = 2;
    int64_t macs = 0, in = 1;
    for (const int64_t c : {16, 16, 32, 32}) {
        macs += s * c * in * k + s * c * c * k + (in != c ? s * c * in : 0);
        in = c;
    }
    CHECK(g.total_macs() == b * (macs + 32 * 10));
    for (const Operator& op : g.ops())
        if (op.op_type == "Conv") CHECK(g.tensors()[static_cast<size_t>(op.outputs[0])].shape.back() == s);
}

TEST_CASE("the moe_mlp family: top-k gating and balanced expert shares", "[import][generators][training]") {
    const OpGraph g = preset("moe_mlp");
    const int64_t b = 128, w = 512, e = 8, k = 2, f = 2048;
    CHECK(g.total_macs() == b * 784 * w + 2 * (b * w * e + b * k * 2 * w * f) + b * w * 10);
    CHECK(g.total_params() == 784 * w + w + 2 * (w * e + e * (2 * w * f + f + w)) + w * 10 + 10);
    CHECK(count_ops(g, "TopK") == 2);
    // 3 rows x top-2 over 4 experts: 4 shares of 2 rows, the last padded
    const OpGraph odd = preset("moe_mlp", {"batch=3", "experts=4"});
    CHECK(odd.total_macs() == 3 * 784 * w + 2 * (3 * w * 4 + 4 * 2 * 2 * w * f) + 3 * w * 10);
    // fewer routed rows than experts: the idle experts' weights stay, their operators are not built
    const OpGraph idle = preset("moe_mlp", {"batch=1", "experts=8"});
    CHECK(idle.total_params() == g.total_params());
    CHECK(count_ops(idle, "Gemm") == 2 + 2 * 2 * 2);
}

TEST_CASE("the rotary_encoder family: attention MACs plus rotations without MACs", "[import][generators][training]") {
    const OpGraph g = preset("rotary_encoder", {"layers=2", "sequence=64", "batch=2"});
    const int64_t b = 2, s = 64, d = 512, f = 2048;
    CHECK(g.total_macs() == 2 * (b * s * (4 * d * d + 2 * d * f) + 2 * b * s * s * d));
    CHECK(count_ops(g, "Neg") == 2 * 2);  // q and k rotated in each layer
    // the rotation tables are inputs (buffers), not trained
    CHECK(g.total_params() == 2 * (4 * (d * d + d) + 2 * d * f + f + d + 4 * d) + 2 * d);
}

TEST_CASE("every training-suite preset trains: one gradient GEMM per operand that requires a gradient", "[import][generators][training]") {
    for (const std::string name : {"lstm_classifier", "bigru_tagger", "lstm_autoencoder", "unet_autoencoder", "residual_autoencoder",
                                   "mobilenet_se", "tcn_seq_mnist", "moe_mlp", "rotary_encoder"}) {
        INFO(name);
        const OpGraph g = preset(name, {"batch=2"});
        const TrainingStep step = make_training_step(g, TrainingOptions{});
        CHECK(step.no_gradient.empty());
        CHECK(step.forward_macs == g.total_macs());
        CHECK(step.backward_macs == autograd_backward_macs(g));
        CHECK(step.backward_macs > step.forward_macs);
        CHECK(step.backward_macs <= 2 * step.forward_macs);
    }
}
