// Training steps (workloads/training): the backward graph's MACs against closed forms, gradient
// sums, the optimizer's updates, and the errors for operators without a gradient rule.
#include <catch2/catch.hpp>

#include <map>

#include <onnx/onnx_pb.h>

#include "sim/base/error.h"
#include "tests/support/temp_file.h"
#include "workloads/generators/onnx_builder.h"
#include "workloads/onnx/importer.h"
#include "workloads/load_workload.h"
#include "workloads/lowering/lower.h"
#include "workloads/lowering/runtime_profile.h"
#include "workloads/training/training_step.h"

using namespace archsim;

namespace {
std::string write(const std::string& name, const std::string& text) { return test::write_temp(name, text); }
/// MACs of the operators of each phase.
std::map<TrainingPhase, int64_t> macs_by_phase(const OpGraph& g) {
    std::map<TrainingPhase, int64_t> m;
    for (const Operator& op : g.ops()) m[op.phase] += op.cost.macs;
    return m;
}
}  // namespace

TEST_CASE("an MLP's backward is twice its forward GEMMs but the first layer's input gradient", "[import][training]") {
    // 4 Linear layers 512 -> 1024 -> 1024 -> 1024 -> 10 at batch 32, sigmoid between
    const std::string file = write("archsim_train_mlp.toml", "[m]\nfamily = \"mlp\"\nlayers = 4\ninput = 512\nwidth = 1024\n"
                                                             "output = 10\nactivation = \"sigmoid\"\nbatch = 32\n");
    const ImportResult r = load_workload(file + "#m", {});
    const int64_t b = 32;
    const int64_t fwd = b * (512 * 1024 + 1024 * 1024 + 1024 * 1024 + 1024 * 10);
    REQUIRE(r.graph.total_macs() == fwd);
    const TrainingStep step = make_training_step(r.graph, TrainingOptions{});
    CHECK(step.forward_macs == fwd);
    // each layer: the weight gradient (as many MACs as its forward), the input gradient too
    // except the first layer's, whose input (the model's) takes no gradient
    CHECK(step.backward_macs == 2 * fwd - b * 512 * 1024);
    const auto by_phase = macs_by_phase(step.graph);
    CHECK(by_phase.at(TrainingPhase::Forward) == fwd);
    CHECK(by_phase.at(TrainingPhase::Backward) == step.backward_macs);
    CHECK(step.loss == "cross_entropy");  // 10 class scores per row
    CHECK(step.samples == 32);
    CHECK(step.params == r.graph.total_params());
    // SGD: one update per weight and bias, 2 operations per parameter
    int64_t updates = 0, update_flops = 0;
    for (const Operator& op : step.graph.ops())
        if (op.phase == TrainingPhase::Optimizer) ++updates, update_flops += op.cost.flops;
    CHECK(updates == 8);
    CHECK(update_flops == 2 * step.params);
    // sigmoid's gradient: 3 operations per element of each hidden activation
    int64_t sigmoid_grad = 0;
    for (const Operator& op : step.graph.ops())
        if (op.op_type == "SigmoidGrad") sigmoid_grad += op.cost.flops;
    CHECK(sigmoid_grad == 3 * 3 * b * 1024);
    // Adam keeps two moments per parameter: 14 operations, and the state read and written
    const TrainingStep adam = make_training_step(r.graph, TrainingOptions{"auto", "adam", false});
    int64_t adam_flops = 0, adam_bytes = 0;
    for (const Operator& op : adam.graph.ops())
        if (op.phase == TrainingPhase::Optimizer) adam_flops += op.cost.flops, adam_bytes += op.cost.bytes_read + op.cost.bytes_written;
    CHECK(adam_flops == 14 * adam.params);
    CHECK(adam_bytes == 4 * 7 * adam.params);  // reads w, g, m, v; writes w, m, v (fp32)
}

TEST_CASE("a convolutional network's gradients are exact per layer, and a residual's gradients are summed", "[import][training]") {
    const ImportResult r = load_workload(std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx", {});
    const TrainingStep step = make_training_step(r.graph, TrainingOptions{});
    // every convolution and the classifier: a weight gradient of its forward MACs, and an input
    // gradient of its forward MACs except the first convolution's (the image takes none)
    int64_t first = -1;
    for (const int32_t i : r.graph.topo_order())
        if (r.graph.ops()[static_cast<size_t>(i)].cost.cls == OpClass::Contraction) {
            first = r.graph.ops()[static_cast<size_t>(i)].cost.macs;
            break;
        }
    REQUIRE(first > 0);
    CHECK(step.backward_macs == 2 * r.graph.total_macs() - first);
    std::map<std::string, int64_t> grads;  // "backward/<op>/dA" and ".../dB" MACs by forward operator
    for (const Operator& op : step.graph.ops())
        if (op.phase == TrainingPhase::Backward && op.cost.macs > 0) grads[op.name] = op.cost.macs;
    for (const Operator& op : r.graph.ops()) {
        if (op.cost.cls != OpClass::Contraction) continue;
        INFO(op.name);
        CHECK(grads["backward/" + op.name + "/dB"] == op.cost.macs);
        if (op.cost.macs != first) CHECK(grads["backward/" + op.name + "/dA"] == op.cost.macs);
    }
    // a convolution's data gradient is an implicit GEMM into dX (cuDNN's dgrad): A is dY read in
    // place through the taps, C no larger than dX (no im2col-sized intermediate), B the filter
    for (const Operator& op : step.graph.ops()) {
        if (op.op_type != "ConvGrad" || op.name.size() < 3 || op.name.substr(op.name.size() - 3) != "/dA") continue;
        INFO(op.name);
        REQUIRE(op.cost.gemms.size() == 1);
        const GemmView& v = op.cost.gemms[0];
        CHECK(v.a.in_place);
        CHECK(v.groups * v.m * v.n <= step.graph.tensors()[static_cast<size_t>(v.c.tensor)].elems());
        CHECK(v.groups * v.k * v.n == step.graph.tensors()[static_cast<size_t>(v.b.tensor)].elems());
    }
    // a residual block's input feeds the block and the shortcut: its gradient is their sum
    int64_t sums = 0;
    for (const Operator& op : step.graph.ops()) sums += op.op_type == "GradSum";
    CHECK(sums >= 8);  // one per basic block at least
}

TEST_CASE("batch normalization trains on its batch's statistics, and its scale and shift get gradients", "[import][training]") {
    // x [2, 4, 3, 3] -> BatchNormalization(scale, shift, mean, var) -> y, a hand-made graph
    std::vector<Tensor> t(6);
    t[0] = {"x", {2, 4, 3, 3}, 1, 4, TensorRole::Input};
    t[1] = {"scale", {4}, 1, 4, TensorRole::Weight};
    t[2] = {"shift", {4}, 1, 4, TensorRole::Weight};
    t[3] = {"mean", {4}, 1, 4, TensorRole::Constant};
    t[4] = {"var", {4}, 1, 4, TensorRole::Constant};
    t[5] = {"y", {2, 4, 3, 3}, 1, 4, TensorRole::Activation};
    Operator bn;
    bn.name = "bn", bn.op_type = "BatchNormalization", bn.inputs = {0, 1, 2, 3, 4}, bn.outputs = {5};
    bn.cost.cls = OpClass::Elementwise, bn.cost.flops = 2 * 72;  // as imported: stored statistics applied
    const OpGraph g("bn", "bn.onnx", t, {bn});
    const TrainingStep step = make_training_step(g, TrainingOptions{"mse", "sgd", false});
    std::map<std::string, const Operator*> by_name;
    for (const Operator& op : step.graph.ops()) by_name[op.name] = &op;
    CHECK(by_name.at("bn")->cost.flops == 8 * 72);             // the batch's mean and variance computed
    CHECK(by_name.at("backward/bn/d")->cost.flops == 13 * 72);  // dX 10, dscale and dshift 3 per element
    CHECK(by_name.at("backward/bn/d")->outputs.size() == 2);   // x is the model's input: no dX
    CHECK(by_name.count("optimizer/scale") == 1);
    CHECK(by_name.count("optimizer/shift") == 1);
    CHECK(by_name.count("optimizer/mean") == 0);                // running statistics are not trained
}

TEST_CASE("a recurrent operator's backward: twice its gate arithmetic, and the MACs of backpropagation through time", "[import][training]") {
    // two stacked LSTMs: the first reads the model's input (no input gradient), the second the first's output
    const std::string model = std::string(ARCHSIM_SHARED_DIR) + "/models/lstm2.onnx";
    const ImportResult r = load_workload(model, {});
    const TrainingStep step = make_training_step(r.graph, TrainingOptions{});
    int64_t lstms = 0;
    for (const Operator& op : r.graph.ops()) {
        if (op.op_type != "LSTM") continue;
        ++lstms;
        INFO(op.name);
        int64_t gates = 0;  // the gradient GEMMs' arithmetic beyond 2 per MAC (bias reductions aside)
        for (const Operator& g : step.graph.ops())
            if (g.name.rfind("backward/" + op.name + "/", 0) == 0 && g.cost.macs > 0) gates += g.cost.flops - 2 * g.cost.macs;
        CHECK(op.cost.non_mac_flops() > 0);
        CHECK(gates == 2 * op.cost.non_mac_flops());
        // backpropagation through time: dX (not for the model's input) and dW of the input
        // projection, dh_{t-1} = dgates_t R per step and dR over all steps
        const GemmView& in = op.cost.gemms.at(0);
        const GemmView& rec = op.cost.gemms.at(1);
        int64_t macs = 0, steps = 0;
        for (const Operator& g : step.graph.ops())
            if (g.name.rfind("backward/" + op.name + "/", 0) == 0)
                for (const GemmView& v : g.cost.gemms) macs += v.macs(), steps = std::max(steps, v.repeat);
        const bool first = lstms == 1;
        CHECK(macs == (first ? 1 : 2) * in.macs() + 2 * rec.macs());
        CHECK(steps == rec.repeat);  // the state's gradient: one dependent step per time step
    }
    CHECK(lstms == 2);
}

TEST_CASE("lowering never fuses operators of different training phases into one kernel", "[import][training]") {
    const ImportResult r = load_workload(std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx", {});
    const TrainingStep step = make_training_step(r.graph, TrainingOptions{"auto", "adam", false});
    const RuntimeProfile rt = load_runtime("tensorrt", std::string(ARCHSIM_SOURCE_DIR) + "/configs/runtimes");
    const OpGraph plan = lower(step.graph, rt, "fp16");
    std::map<std::string, TrainingPhase> phase_of;
    for (const Operator& op : step.graph.ops()) phase_of[op.name] = op.phase;
    // every operator carries its phase, and its name says the same to a reader ("backward/...")
    for (const Operator& op : step.graph.ops())
        CHECK((op.phase == TrainingPhase::Forward || op.name.rfind(std::string(to_string(op.phase)) + "/", 0) == 0));
    int64_t optimizer_kernels = 0;
    for (const Operator& k : plan.ops()) {
        INFO(k.name);
        for (const std::string& m : k.members) CHECK(phase_of.at(m) == k.phase);
        optimizer_kernels += k.phase == TrainingPhase::Optimizer;
    }
    CHECK(optimizer_kernels > 0);
    CHECK(plan.total_macs() == step.graph.total_macs());
}

TEST_CASE("an operator without a gradient rule is an error naming it, or runs forward only when allowed", "[import][training]") {
    // a graph built by hand: x -> MatMul(W) -> Foo (unsupported) -> MatMul(W2) -> y
    std::vector<Tensor> t(6);
    t[0] = {"x", {4, 8}, 1, 4, TensorRole::Input};
    t[1] = {"W", {8, 8}, 1, 4, TensorRole::Weight};
    t[2] = {"h", {4, 8}, 1, 4, TensorRole::Activation};
    t[3] = {"u", {4, 8}, 1, 4, TensorRole::Activation};
    t[4] = {"W2", {8, 3}, 1, 4, TensorRole::Weight};
    t[5] = {"y", {4, 3}, 1, 4, TensorRole::Activation};
    std::vector<Operator> ops(3);
    ops[0].name = "mm1", ops[0].op_type = "MatMul", ops[0].inputs = {0, 1}, ops[0].outputs = {2};
    ops[0].cost.cls = OpClass::Contraction;
    GemmView v;
    v.m = 4, v.n = 8, v.k = 8, v.a = {0, false}, v.b = {1, false}, v.c = {2, false};
    ops[0].cost.gemms = {v}, ops[0].cost.macs = v.macs();
    ops[1].name = "foo", ops[1].op_type = "Foo", ops[1].inputs = {2}, ops[1].outputs = {3};
    ops[1].cost.cls = OpClass::Unsupported;
    ops[2].name = "mm2", ops[2].op_type = "MatMul", ops[2].inputs = {3, 4}, ops[2].outputs = {5};
    ops[2].cost.cls = OpClass::Contraction;
    GemmView w = v;
    w.n = 3, w.a = {3, false}, w.b = {4, false}, w.c = {5, false};
    ops[2].cost.gemms = {w}, ops[2].cost.macs = w.macs();
    const OpGraph g("hand", "hand.onnx", t, ops);
    try {
        make_training_step(g, TrainingOptions{});
        FAIL("no error");
    } catch (const UserError& e) {
        const std::string what = e.what();
        CHECK(what.find("hand.onnx") != std::string::npos);
        CHECK(what.find("'foo' (Foo) has no gradient rule") != std::string::npos);
    }
    const TrainingStep step = make_training_step(g, TrainingOptions{"mse", "sgd", true});
    CHECK(step.no_gradient == std::vector<std::string>{"foo"});
    CHECK(step.loss == "mse");
    // mm2's weight gradient and input gradient; nothing flows past foo, so W gets no update
    CHECK(step.backward_macs == 2 * w.macs());
    int64_t updates = 0;
    for (const Operator& op : step.graph.ops()) updates += op.phase == TrainingPhase::Optimizer;
    CHECK(updates == 1);
    CHECK_THROWS_AS(make_training_step(g, TrainingOptions{"auto", "lamb", false}), UserError);
}

TEST_CASE("the setup initializes every parameter, zeroes the optimizer state and draws the batch, before the step", "[import][training]") {
    // a square MLP (input and output default to the width): 3 Linear layers 256 -> 256 at batch 16
    const std::string file = write("archsim_train_setup.toml", "[m]\nfamily = \"mlp\"\nlayers = 3\nwidth = 256\nactivation = \"sigmoid\"\n"
                                                               "batch = 16\n");
    const ImportResult r = load_workload(file + "#m", {});
    const int64_t params = 3 * (256 * 256 + 256);
    REQUIRE(r.graph.total_params() == params);
    TrainingOptions opt;
    opt.optimizer = "adam", opt.mixed_precision = true, opt.setup = true;
    const TrainingStep step = make_training_step(r.graph, opt);
    TrainingOptions plain = opt;
    plain.setup = false;
    const TrainingStep without = make_training_step(r.graph, plain);
    CHECK(step.setup);
    // the step itself is unchanged: same operators after the setup's, same MACs
    CHECK(step.graph.ops().size() == without.graph.ops().size() + 6 + 6 * 3 + 2);
    CHECK(step.graph.total_macs() == without.graph.total_macs());
    std::map<std::string, int64_t> flops, count;
    for (const Operator& op : step.graph.ops())
        if (op.phase == TrainingPhase::Setup) {
            flops[op.op_type] += op.cost.flops, ++count[op.op_type];
            CHECK(fusion_stage(op.phase) == 4);
            CHECK(op.cost.macs == 0);
        }
    // each weight and bias drawn (2 operations per element), and the labels (integers: none)
    CHECK(count["RandomUniform"] == 6 + 1);
    CHECK(flops["RandomUniform"] == 2 * params);
    // mixed-precision Adam: an fp32 master copy converted from each parameter, two moments zeroed
    CHECK(count["Cast"] == 6);
    CHECK(flops["Cast"] == params);
    CHECK(count["ConstantOfShape"] == 12);
    CHECK(flops["ConstantOfShape"] == 0);
    // the float input drawn from a normal distribution: 6 operations per element
    CHECK(count["RandomNormal"] == 1);
    CHECK(flops["RandomNormal"] == 6 * 16 * 256);
    // every setup operator runs before every operator of the step
    bool step_started = false;
    for (const int32_t i : step.graph.topo_order()) {
        const bool setup = step.graph.ops()[static_cast<size_t>(i)].phase == TrainingPhase::Setup;
        CHECK_FALSE((setup && step_started));
        step_started = step_started || !setup;
    }
}

TEST_CASE("a training-mode export's BatchNormalization, with its statistics outputs, imports and trains", "[import][training]") {
    // what torch.onnx.export(..., training=TrainingMode.TRAINING) writes at opset 13: the
    // normalization keeps its running and saved mean and variance as outputs 1 to 4, which
    // ONNX's shape inference leaves untyped
    onnx::ModelProto model;
    onnx::GraphProto& g = gen::start_model(model, "bn_train");
    gen::add_input(g, "x", {8, 4, 6, 6});
    gen::add_weight(g, "w", {4, 4, 3, 3});
    for (const char* p : {"scale", "bias", "mean", "var"}) gen::add_weight(g, p, {4});
    gen::add_weight(g, "fc.w", {10, 4});
    auto& conv = gen::add_node(g, "Conv", "/conv", {"x", "w"}, {"c"});
    gen::set_ints(conv, "pads", {1, 1, 1, 1});
    gen::add_node(g, "BatchNormalization", "/bn", {"c", "scale", "bias", "mean", "var"}, {"b", "rm", "rv", "sm", "sv"});
    gen::add_node(g, "GlobalAveragePool", "/pool", {"b"}, {"p"});
    gen::add_node(g, "Flatten", "/flat", {"p"}, {"f"});
    auto& fc = gen::add_node(g, "Gemm", "/fc", {"f", "fc.w"}, {"y"});
    gen::set_int(fc, "transB", 1);
    gen::add_output(g, "y", {8, 10});
    const ImportResult r = import_onnx_model(model, "bn_train.onnx");
    const OpGraph& fwd = r.graph;
    const Operator* bn = nullptr;
    for (const Operator& op : fwd.ops())
        if (op.op_type == "BatchNormalization") bn = &op;
    REQUIRE(bn != nullptr);
    REQUIRE(bn->outputs.size() == 5);
    for (size_t o = 1; o < 5; ++o) CHECK(fwd.tensors()[static_cast<size_t>(bn->outputs[o])].shape == std::vector<int64_t>{4});
    const TrainingStep step = make_training_step(fwd, TrainingOptions{});
    // the convolution's weight gradient and the normalization's scale and shift get gradients
    // (the statistics are buffers, not trained); the conv's data gradient is skipped (model input)
    int64_t conv_dw = 0;
    bool bn_grad = false;
    for (const Operator& op : step.graph.ops()) {
        if (op.phase != TrainingPhase::Backward) continue;
        if (op.cost.cls == OpClass::Contraction && op.name.find("/conv") != std::string::npos) conv_dw += op.cost.macs;
        bn_grad = bn_grad || op.name.find("/bn") != std::string::npos;
    }
    CHECK(conv_dw == 8 * 4 * 6 * 6 * 4 * 9);
    CHECK(bn_grad);
}
