#include "workloads/training/grad_rules.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace archsim {

namespace {

/// A backward operator of `fwd` reading `in` and writing `out`: its bytes from the tensors,
/// `flops` vector operations (plus 2 per MAC of `gemms`).
Operator make_op(const GradBuilder& b, const Operator& fwd, const std::string& part, OpClass cls, std::vector<int32_t> in,
                 std::vector<int32_t> out, int64_t flops, std::vector<GemmView> gemms = {}) {
    Operator op;
    op.name = "backward/" + fwd.name + "/" + part;
    op.op_type = fwd.op_type + "Grad";
    op.phase = TrainingPhase::Backward;
    op.inputs = std::move(in);
    op.outputs = std::move(out);
    op.cost.cls = cls;
    count_bytes(op, b);
    for (const GemmView& v : gemms) op.cost.macs += v.macs();
    op.cost.gemms = std::move(gemms);
    op.cost.flops = 2 * op.cost.macs + flops;
    return op;
}

/// A gradient tensor for forward tensor `t`.
int32_t grad_tensor(GradBuilder& b, int32_t t, const std::string& tag) {
    const Tensor& x = b.tensor(t);
    return b.new_tensor("grad/" + x.name + tag, x.shape, x);
}

// ---- contractions ---------------------------------------------------------------------------

bool contraction(const Operator& op, GradBuilder& b) {
    if (!op.cost.attention.empty()) return false;  // a fused attention kernel: built by lowering, not imported
    // dC: the gradient of the first output that has one (a recurrent operator read only through
    // its last state Y_h, as `_, (h, c) = lstm(x)` exports, has no gradient on Y)
    int32_t dy = -1;
    for (const int32_t t : op.outputs)
        if (t >= 0 && (dy = b.grad(t)) >= 0) break;
    if (dy < 0) return true;
    std::set<int32_t> gemm_operands;
    // a recurrent operator's gate arithmetic, backward: twice the forward's, in its first
    // gradient kernel (whichever of its operands take a gradient)
    bool recurrent = false;
    for (const GemmView& v : op.cost.gemms) recurrent = recurrent || v.repeat > 1;
    int64_t gates = recurrent ? 2 * op.cost.non_mac_flops() : 0;
    auto take_gates = [&gates] { return std::exchange(gates, 0); };
    int64_t views = 0;
    for (const GemmView& v : op.cost.gemms) {
        ++views;
        gemm_operands.insert(v.a.tensor), gemm_operands.insert(v.b.tensor);
        const std::string tag = op.cost.gemms.size() > 1 ? std::to_string(views) : "";
        // the recurrent step's state is on chip: its gradient flows inside the backward kernel
        if (v.a.tensor >= 0 && b.needs_grad(v.a.tensor)) {
            GemmView d = v;  // dA (m x k) = dC (m x n) B^T (n x k)
            d.n = v.k, d.k = v.n;
            d.a = {dy, false};
            d.a_unique_elems = d.m * d.k;
            if (op.op_type == "Conv" && b.tensor(dy).elems() > 0) {
                // the data gradient as an implicit GEMM into dX (cuDNN's dgrad): per output pixel
                // and tap, dY's Cout/g values times the tap's filter slice, accumulated into
                // dX's Cin/g channels: m = N Ho Wo, n = Cin/g, k = Cout/g x kernel taps (the
                // forward's MACs), A = dY read in place through the taps, C = dX (col2im's
                // im2col-sized intermediate never written)
                const std::vector<int64_t>& xs = b.tensor(v.a.tensor).shape;
                const int64_t cin_g = xs.size() > 1 ? std::max<int64_t>(1, xs[1] / v.groups) : v.k;
                const int64_t taps = std::max<int64_t>(1, v.k / cin_g);
                d.n = cin_g, d.k = v.n * taps;
                d.a = {dy, true};
                d.a_unique_elems = std::min(d.m * d.k, b.tensor(dy).elems() / v.groups);
            } else if (op.op_type == "ConvTranspose") {
                d.a = {dy, true};  // the forward convolution of dY: implicit im2col over dY
                d.a_unique_elems = std::min(d.m * d.k, b.tensor(dy).elems() / v.groups);
            }
            d.b = v.b;
            const int32_t da = grad_tensor(b, v.a.tensor, "/from_" + op.name + tag);
            d.c = {da, false};
            b.add(make_op(b, op, "dA" + tag, OpClass::Contraction, {dy, v.b.tensor}, {da}, take_gates(), {d}));
            b.contribute(v.a.tensor, da);
        }
        if (v.b.tensor >= 0 && b.needs_grad(v.b.tensor)) {
            GemmView d = v;  // dB (k x n) = A^T (k x m) dC (m x n), per batch entry unless B is shared
            d.m = v.k, d.k = v.m, d.n = v.n;
            d.a = v.a;
            d.a_unique_elems = v.a.in_place ? v.a_unique_elems : d.m * d.k;
            d.b = {dy, false};
            d.b_is_weight = false;
            const int32_t db = grad_tensor(b, v.b.tensor, "/from_" + op.name + tag);
            d.c = {db, false};
            if (v.a.tensor < 0 && v.repeat > 1 && !op.outputs.empty()) {
                // the recurrent weight's gradient sums dgates_t^T h_{t-1} over all steps: one GEMM
                // after the loop over the saved states Y (k = steps x batch), as cuDNN's RNN
                // backward weights does, not one per step
                d.k = v.m * v.repeat, d.repeat = 1;
                d.a = {op.outputs[0], false};
                d.a_unique_elems = d.m * d.k;
            }
            std::vector<GemmView> views = {d};
            if (v.a.tensor < 0 && v.repeat > 1) {
                // backpropagation through time: the state's gradient dh_{t-1} = dgates_t R, one
                // dependent step per time step (m = batch, n = hidden, k = gates x hidden), on
                // chip like the forward's state (cuDNN's RNN backward data)
                GemmView dh = v;
                dh.n = v.k, dh.k = v.n;
                dh.a = {dy, false};
                dh.a_unique_elems = dh.m * dh.k;
                dh.c = {-1, false};
                views.push_back(dh);
            }
            b.add(make_op(b, op, "dB" + tag, OpClass::Contraction, {d.a.tensor, dy}, {db}, take_gates(), views));
            b.contribute(v.b.tensor, db);
        }
    }
    // other trained inputs (a Gemm's or Conv's bias): the sum of dC over its rows
    for (const int32_t t : op.inputs) {
        if (t < 0 || gemm_operands.count(t) || !b.needs_grad(t)) continue;
        const int32_t g = grad_tensor(b, t, "/from_" + op.name);
        b.add(make_op(b, op, "dbias", OpClass::Reduction, {dy}, {g}, b.tensor(dy).elems()));
        b.contribute(t, g);
    }
    return true;
}

// ---- elementwise ----------------------------------------------------------------------------

/// What the derivative of a one-input function reads besides dY: its saved input, its saved
/// output, or nothing (a constant derivative). As PyTorch's autograd formulas
/// (tools/autograd/derivatives.yaml) save them: relu, sigmoid, tanh, exp, sqrt, reciprocal and
/// elu from the result, the others from the input.
enum class Saves : uint8_t { Input, Output, Nothing };

/// A one-input function's gradient: vector operations per element of dX = dY * f'(.), and what
/// it reads.
struct UnaryRule {
    int64_t ops;
    Saves saves;
};

const std::map<std::string, UnaryRule>& unary_rules() {
    constexpr Saves X = Saves::Input, Y = Saves::Output, N = Saves::Nothing;
    static const std::map<std::string, UnaryRule> m = {
        {"Relu", {1, Y}},     {"LeakyRelu", {2, X}}, {"ThresholdedRelu", {1, X}}, {"Elu", {3, Y}},     {"Selu", {3, Y}},
        {"Celu", {3, Y}},     {"Clip", {2, X}},      {"Sigmoid", {3, Y}},         {"HardSigmoid", {2, X}}, {"HardSwish", {3, X}},
        {"Tanh", {3, Y}},     {"Erf", {4, X}},       {"Gelu", {8, X}},            {"Exp", {1, Y}},     {"Log", {1, X}},
        {"Sqrt", {2, Y}},     {"Reciprocal", {2, Y}}, {"Neg", {1, N}},            {"Abs", {2, X}},     {"Softplus", {4, X}},
        {"Softsign", {3, X}}, {"Mish", {8, X}},      {"Sin", {2, X}},             {"Cos", {2, X}},     {"Tan", {3, Y}},
        {"Asin", {4, X}},     {"Acos", {4, X}},      {"Atan", {3, X}},            {"Sinh", {2, X}},    {"Cosh", {2, X}},
        {"Asinh", {4, X}},    {"Acosh", {4, X}},     {"Atanh", {3, X}},           {"Shrink", {1, X}},  {"Trilu", {1, N}},
        {"Cast", {0, N}},     {"CastLike", {0, N}},  {"Resize", {1, N}},          {"Upsample", {1, N}}, {"Round", {0, N}},
        {"Ceil", {0, N}},     {"Floor", {0, N}},     {"Sign", {0, N}},            {"Identity", {0, N}}, {"Bernoulli", {0, N}},
        {"QuantizeLinear", {1, N}}, {"DequantizeLinear", {1, N}}};
    return m;
}

/// Operators whose outputs carry no gradient (comparisons, logic, integer results).
bool non_differentiable(const std::string& type) {
    static const std::set<std::string> s = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or",
                                            "Xor", "IsNaN", "IsInf", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr",
                                            "BitwiseXor", "BitwiseNot", "ArgMax", "ArgMin", "Hardmax", "NonZero",
                                            "Shape", "Size", "ConstantOfShape", "Range", "EyeLike", "OneHot"};
    return s.count(type) > 0;
}

/// The gradient of input `i` of a multi-input elementwise operator: vector operations per dY
/// element (0: dY itself, no kernel unless broadcast) and the saved operands it reads (input
/// positions; -1 = the output).
struct BinaryRule {
    int64_t ops;
    std::vector<int> reads;
};
BinaryRule binary_rule(const std::string& type, size_t i, size_t inputs) {
    const int other = i == 0 ? 1 : 0;
    if (type == "Add" || type == "Sum") return {0, {}};
    if (type == "Sub") return {i == 0 ? 0 : 1, {}};
    if (type == "Mean") return {1, {}};  // dY / n
    if (type == "Max" || type == "Min") {  // dY routed to the input that won
        std::vector<int> all;
        for (size_t j = 0; j < inputs; ++j) all.push_back(static_cast<int>(j));
        return {1, all};
    }
    if (type == "Mul") return {1, {other}};                               // dA = dY B
    if (type == "Where") return {1, {0}};                                 // dY where the condition picks it
    if (type == "Div") return i == 0 ? BinaryRule{1, {1}} : BinaryRule{3, {1, -1}};  // dA = dY / B; dB = -dY Y / B
    if (type == "Pow") return i == 0 ? BinaryRule{3, {0, 1}} : BinaryRule{4, {0, -1}};  // dY p A^(p-1); dY Y ln A
    if (type == "PRelu") return {2, {0, 1}};
    return {2, {0, 1}};
}

bool elementwise(const Operator& op, GradBuilder& b) {
    if (non_differentiable(op.op_type)) return true;
    const int32_t dy = op.outputs.empty() ? -1 : b.grad(op.outputs[0]);
    if (dy < 0) return true;
    const auto unary = unary_rules().find(op.op_type);
    const int64_t dy_elems = b.tensor(dy).elems();
    size_t data_inputs = 0;
    for (const int32_t t : op.inputs) data_inputs += t >= 0;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
        const int32_t t = op.inputs[i];
        if (t < 0 || !b.needs_grad(t)) continue;
        if (op.op_type == "Where" && i == 0) continue;  // the condition
        std::vector<int32_t> reads{dy};
        int64_t per = 0;
        if (op.op_type == "Dropout") {  // dX = dY * mask / (1 - ratio): the saved mask (or the output)
            per = 2;
            reads.push_back(op.outputs.size() > 1 && op.outputs[1] >= 0 ? op.outputs[1] : op.outputs[0]);
        } else if (unary != unary_rules().end() && (data_inputs == 1 || i == 0)) {
            per = unary->second.ops;
            if (unary->second.saves == Saves::Input) reads.push_back(t);
            if (unary->second.saves == Saves::Output) reads.push_back(op.outputs[0]);
        } else {
            const BinaryRule r = binary_rule(op.op_type, i, op.inputs.size());
            per = r.ops;
            for (const int j : r.reads) {
                const int32_t x = j < 0 ? op.outputs[0] : j < static_cast<int>(op.inputs.size()) ? op.inputs[static_cast<size_t>(j)] : -1;
                if (x >= 0 && std::find(reads.begin(), reads.end(), x) == reads.end()) reads.push_back(x);
            }
        }
        const bool broadcast = b.tensor(t).elems() < dy_elems;
        if (per == 0 && !broadcast && op.op_type != "Cast" && op.op_type != "CastLike") {  // dY itself
            b.contribute(t, dy);
            continue;
        }
        const int32_t g = grad_tensor(b, t, "/from_" + op.name);
        const std::string part = "d" + std::to_string(i);
        if (broadcast)  // the gradient summed over the broadcast dims in the same pass
            b.add(make_op(b, op, part, OpClass::Reduction, reads, {g}, dy_elems * (per + 1)));
        else
            b.add(make_op(b, op, part, per == 0 ? OpClass::DataMovement : OpClass::Elementwise, reads, {g}, dy_elems * per));
        b.contribute(t, g);
    }
    return true;
}

// ---- reductions and normalizations -----------------------------------------------------------

bool reduction(const Operator& op, GradBuilder& b) {
    if (non_differentiable(op.op_type)) return true;
    const int32_t dy = op.outputs.empty() ? -1 : b.grad(op.outputs[0]);
    if (dy < 0) return true;
    const std::string& type = op.op_type;
    const bool norm = type == "LayerNormalization" || type == "InstanceNormalization" || type == "MeanVarianceNormalization" ||
                      type == "BatchNormalization" || type == "LRN";
    const int32_t x = op.inputs.empty() ? -1 : op.inputs[0];
    if (x < 0) return true;
    const int64_t n = b.tensor(x).elems();
    if (norm) {  // one kernel: dX (10 per element) and the scale and shift gradients (3)
        std::vector<int32_t> outs;
        std::vector<std::pair<int32_t, int32_t>> parts;
        for (size_t i = 0; i < op.inputs.size() && i < 3; ++i) {
            const int32_t t = op.inputs[i];
            if (t < 0 || !b.needs_grad(t)) continue;
            const int32_t g = grad_tensor(b, t, "/from_" + op.name);
            outs.push_back(g), parts.push_back({t, g});
        }
        if (outs.empty()) return true;
        std::vector<int32_t> reads{dy};
        for (size_t i = 0; i < op.inputs.size() && i < 2; ++i)
            if (op.inputs[i] >= 0) reads.push_back(op.inputs[i]);
        b.add(make_op(b, op, "d", OpClass::Reduction, reads, outs, n * 13));
        for (const auto& [t, g] : parts) b.contribute(t, g);
        return true;
    }
    if (!b.needs_grad(x)) return true;
    int64_t per = 1;
    std::vector<int32_t> reads{dy};
    if (type == "Softmax" || type == "LogSoftmax") per = 4, reads.push_back(op.outputs[0]);
    else if (type == "ReduceSum" || type == "CumSum" || type == "TopK") per = type == "ReduceSum" ? 0 : 1;
    else if (type == "ReduceMax" || type == "ReduceMin") per = 1, reads.push_back(x), reads.push_back(op.outputs[0]);
    else if (type != "ReduceMean") per = 3, reads.push_back(x);  // L1, L2, sum of squares, log-sum-exp, product, Lp
    const int32_t g = grad_tensor(b, x, "/from_" + op.name);
    b.add(make_op(b, op, "dX", per == 0 ? OpClass::DataMovement : OpClass::Elementwise, reads, {g}, n * per));
    b.contribute(x, g);
    return true;
}

// ---- pooling, data movement, views --------------------------------------------------------------

bool pooling(const Operator& op, GradBuilder& b) {
    const int32_t dy = op.outputs.empty() ? -1 : b.grad(op.outputs[0]);
    const int32_t x = op.inputs.empty() ? -1 : op.inputs[0];
    if (dy < 0 || x < 0 || !b.needs_grad(x)) return true;
    const bool max = op.op_type.find("Max") != std::string::npos;
    const bool global = op.op_type.rfind("Global", 0) == 0;
    // max: dY routed to each window's maximum (found again from X), 1 per output; average: the
    // forward's window sums spread back; global: 1 per input element
    const int64_t flops = global ? b.tensor(x).elems() : max ? b.tensor(dy).elems() : op.cost.flops;
    std::vector<int32_t> reads{dy};
    if (max) reads.push_back(x);
    const int32_t g = grad_tensor(b, x, "/from_" + op.name);
    b.add(make_op(b, op, "dX", OpClass::Pooling, reads, {g}, flops));
    b.contribute(x, g);
    return true;
}

bool data_movement(const Operator& op, GradBuilder& b) {
    if (non_differentiable(op.op_type)) return true;
    std::vector<int32_t> dys;
    for (const int32_t t : op.outputs)
        if (t >= 0 && b.grad(t) >= 0) dys.push_back(b.grad(t));
    if (dys.empty()) return true;
    const std::string& type = op.op_type;
    // which inputs carry data (the others are indices, bounds, shapes)
    std::vector<size_t> data{0};
    if (type == "Concat") {
        data.clear();
        for (size_t i = 0; i < op.inputs.size(); ++i) data.push_back(i);
    } else if (type == "ScatterElements" || type == "ScatterND" || type == "Scatter") {
        data = {0, 2};
    }
    std::vector<int32_t> outs;
    std::vector<std::pair<int32_t, int32_t>> parts;
    for (const size_t i : data) {
        if (i >= op.inputs.size()) continue;
        const int32_t t = op.inputs[i];
        if (t < 0 || !b.needs_grad(t)) continue;
        const int32_t g = grad_tensor(b, t, "/from_" + op.name);
        outs.push_back(g), parts.push_back({t, g});
    }
    if (outs.empty()) return true;
    std::vector<int32_t> reads = dys;
    int64_t flops = 0;
    OpClass cls = OpClass::DataMovement;
    int64_t dy_elems = 0;
    for (const int32_t d : dys) dy_elems += b.tensor(d).elems();
    if (type == "Gather" || type == "GatherElements" || type == "GatherND") {
        flops = dy_elems;  // a scatter-add of every gathered element into the (dense) table gradient
        if (op.inputs.size() > 1 && op.inputs[1] >= 0) reads.push_back(op.inputs[1]);
    } else if (type == "Expand" || type == "Tile") {
        flops = dy_elems, cls = OpClass::Reduction;  // the copies summed
    }
    b.add(make_op(b, op, "d", cls, reads, outs, flops));
    for (const auto& [t, g] : parts) b.contribute(t, g);
    return true;
}

bool view(const Operator& op, GradBuilder& b) {
    if (op.op_type == "Shape" || op.op_type == "Size" || op.op_type == "Constant") return true;
    const int32_t dy = op.outputs.empty() ? -1 : b.grad(op.outputs[0]);
    const int32_t x = op.inputs.empty() ? -1 : op.inputs[0];
    if (dy < 0 || x < 0 || !b.needs_grad(x)) return true;
    const int32_t g = grad_tensor(b, x, "/from_" + op.name);
    b.add(make_op(b, op, "view", OpClass::ShapeOnly, {dy}, {g}, 0));
    b.contribute(x, g);
    return true;
}

}  // namespace

void count_bytes(Operator& op, const GradBuilder& b) {
    op.cost.bytes_read = op.cost.bytes_written = 0;
    if (op.cost.cls == OpClass::ShapeOnly) return;
    for (const int32_t t : op.inputs)
        if (t >= 0) op.cost.bytes_read += b.tensor(t).bytes();
    for (const int32_t t : op.outputs)
        if (t >= 0) op.cost.bytes_written += b.tensor(t).bytes();
}

bool add_gradient(const Operator& op, GradBuilder& b) {
    switch (op.cost.cls) {
        case OpClass::Contraction: return contraction(op, b);
        case OpClass::Elementwise:
            if (op.op_type == "BatchNormalization") return reduction(op, b);
            return elementwise(op, b);
        case OpClass::Reduction: return reduction(op, b);
        case OpClass::Pooling: return pooling(op, b);
        case OpClass::DataMovement: return data_movement(op, b);
        case OpClass::ShapeOnly: return view(op, b);
        case OpClass::Unsupported: return false;
    }
    return false;
}

}  // namespace archsim
