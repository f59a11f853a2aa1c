#include "workloads/onnx/op_handlers.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <utility>

#include "sim/base/error.h"

namespace archsim {

// ---------------------------------------------------------------------------------------------
// NodeContext
// ---------------------------------------------------------------------------------------------
static const onnx::AttributeProto* find_attr(const onnx::NodeProto* n, const std::string& name) {
    for (const auto& a : n->attribute())
        if (a.name() == name) return &a;
    return nullptr;
}

int64_t NodeContext::attr_int(const std::string& name, int64_t def) const {
    auto a = find_attr(node, name);
    return a ? a->i() : def;
}
double NodeContext::attr_float(const std::string& name, double def) const {
    auto a = find_attr(node, name);
    return a ? a->f() : def;
}
std::string NodeContext::attr_string(const std::string& name, const std::string& def) const {
    auto a = find_attr(node, name);
    return a ? a->s() : def;
}
std::vector<int64_t> NodeContext::attr_ints(const std::string& name) const {
    auto a = find_attr(node, name);
    if (!a) return {};
    return {a->ints().begin(), a->ints().end()};
}
const Tensor& NodeContext::input(size_t i) const {
    if (i >= in.size() || !in[i]) throw UserError(where, "missing input #" + std::to_string(i));
    return *in[i];
}
const Tensor& NodeContext::output(size_t i) const {
    if (i >= out.size() || !out[i]) throw UserError(where, "missing output #" + std::to_string(i));
    return *out[i];
}

// ---------------------------------------------------------------------------------------------
// Common cost pieces
// ---------------------------------------------------------------------------------------------
namespace {

/// The product of v[from .. to) (to clamped to v's size; 1 when empty).
int64_t prod(const std::vector<int64_t>& v, size_t from = 0, size_t to = SIZE_MAX) {
    const size_t end = std::min(to, v.size());
    if (from >= end) return 1;
    // iterators, not an index up to SIZE_MAX: GCC 12 warned that such a loop's iteration 2^61 is UB
    return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(end), int64_t{1},
                           std::multiplies<int64_t>());
}

}  // namespace

OpCost op_cost::base_cost(const NodeContext& c, OpClass cls) {
    OpCost k;
    k.cls = cls;
    for (auto* t : c.in)
        if (t) {
            k.bytes_read += t->bytes();
            if (t->role == TensorRole::Weight) k.params += t->elems();
        }
    for (auto* t : c.out)
        if (t) k.bytes_written += t->bytes();
    return k;
}

void op_cost::read_part(OpCost& k, const NodeContext& c, size_t input, int64_t elems) {
    const Tensor& x = c.input(input);
    if (elems >= x.elems()) return;
    k.read_elems.assign(c.in.size(), -1);
    k.read_elems[input] = elems;
    k.bytes_read -= (x.elems() - elems) * x.elem_bytes;
}

namespace {
using op_cost::base_cost;
using op_cost::read_part;

int64_t out_elems(const NodeContext& c) {
    int64_t s = 0;
    for (auto* t : c.out)
        if (t) s += t->elems();
    return s;
}

/// Elementwise: one vector operation per output element (the counting convention of fvcore
/// and ptflops for activations; transcendental functions count as one special-function op).
OpCost elementwise(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Elementwise);
    k.flops = out_elems(c);
    return k;
}

/// A copy: no arithmetic; the data input is read and the output written.
OpCost data_movement(const NodeContext& c) { return base_cost(c, OpClass::DataMovement); }

/// A lookup (Gather, GatherElements, GatherND) or a Slice: it reads the entries it copies, as
/// many as it writes, not its whole data input (an embedding table, the fused QKV tensor a
/// slice takes a third of), plus every index or bound.
OpCost gather(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::DataMovement);
    read_part(k, c, 0, c.output(0).elems());
    return k;
}

/// A view (Reshape, Flatten, ...): no data moves, no arithmetic.
OpCost shape_only(const NodeContext& c) {
    OpCost k;
    k.cls = OpClass::ShapeOnly;
    return k;
}

/// Dropout: in inference (no training_mode input, as exporters write it) a view; with a
/// training_mode input (a training graph) a kernel drawing one random number per element,
/// comparing it with the ratio and scaling the kept values (3 operations per element; the
/// counter-based Philox generator PyTorch and cuDNN use costs a few integer operations per
/// element, amortized over 4 outputs per draw), writing the output and its mask.
OpCost dropout(const NodeContext& c) {
    if (c.input_id(2) < 0) return shape_only(c);
    OpCost k = base_cost(c, OpClass::Elementwise);
    k.flops = 3 * c.input(0).elems();
    return k;
}

/// A view that must keep the element count. A mismatch means the file hard-codes a shape that
/// no longer fits its inputs (typically a Reshape exported with a static batch, after --batch).
OpCost view(const NodeContext& c) {
    const Tensor& in = c.input(0);
    const Tensor& out = c.output(0);
    if (in.elems() != out.elems())
        throw UserError(c.where, "reshapes " + shape_string(in.shape) + " (" + std::to_string(in.elems()) +
                                     " elements) into " + shape_string(out.shape) + " (" + std::to_string(out.elems()) +
                                     "): the model hard-codes this shape (exported with a static batch?)");
    return shape_only(c);
}

/// Reductions read every input element once (one add/compare each).
OpCost reduction(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Reduction);
    k.flops = c.input(0).elems();
    return k;
}

/// Fixed number of vector ops per input element: softmax 5 (max, subtract, exp, sum, divide),
/// layer/instance norm 8 (mean, subtract, square, mean, add eps, rsqrt, scale, shift),
/// batch norm in inference 2 (scale and shift with folded statistics).
OpHandler per_element(OpClass cls, int64_t ops_per_elem) {
    return [cls, ops_per_elem](const NodeContext& c) {
        OpCost k = base_cost(c, cls);
        k.flops = c.input(0).elems() * ops_per_elem;
        return k;
    };
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Contractions. MAC count = output elements x reduction length, grouping-aware (the
// definition of shared/models/manifest.csv, and of torch/fvcore counters).
// ---------------------------------------------------------------------------------------------
OpCost op_cost::conv(const NodeContext& c) {
    const Tensor& x = c.input(0);
    const Tensor& w = c.input(1);
    const Tensor& y = c.output(0);
    if (x.shape.size() < 3 || w.shape.size() != x.shape.size() || y.shape.size() != x.shape.size())
        throw UserError(c.where, "Conv expects X, W, Y of equal rank >= 3, got X " + shape_string(x.shape) +
                                     ", W " + shape_string(w.shape) + ", Y " + shape_string(y.shape));
    const int64_t g = c.attr_int("group", 1);
    const int64_t n = x.shape[0], cin = x.shape[1], cout = w.shape[0];
    if (g < 1 || cin % g != 0 || cout % g != 0 || w.shape[1] != cin / g)
        throw UserError(c.where, "Conv channels do not match: X has " + std::to_string(cin) + " channels, W is " +
                                     shape_string(w.shape) + ", group = " + std::to_string(g));
    const int64_t kernel = prod(w.shape, 2);
    const int64_t out_spatial = prod(y.shape, 2);
    OpCost k = base_cost(c, OpClass::Contraction);
    GemmView v;
    v.groups = g;
    v.m = n * out_spatial;
    v.n = cout / g;
    v.k = (cin / g) * kernel;
    v.a_unique_elems = std::min(v.m * v.k, n * (cin / g) * prod(x.shape, 2));
    v.b_is_weight = w.role == TensorRole::Weight || w.role == TensorRole::Constant;
    v.a = {c.input_id(0), /*in_place=*/true};  // direct convolution: implicit im2col over X
    v.b = {c.input_id(1), false};
    v.c = {c.output_id(0), false};
    k.gemms.push_back(v);
    k.macs = v.macs();
    k.flops = 2 * k.macs + (c.in.size() > 2 && c.in[2] ? y.elems() : 0);
    return k;
}

namespace {
using op_cost::conv;

/// ConvTranspose as the GEMM of input pixels by (Cout/g * kernel) columns followed by col2im:
/// MACs = N * Cin * prod(in spatial) * (Cout/g) * prod(kernel).
OpCost conv_transpose(const NodeContext& c) {
    const Tensor& x = c.input(0);
    const Tensor& w = c.input(1);
    const Tensor& y = c.output(0);
    if (x.shape.size() < 3 || w.shape.size() != x.shape.size())
        throw UserError(c.where, "ConvTranspose expects X and W of equal rank >= 3");
    const int64_t g = c.attr_int("group", 1);
    const int64_t n = x.shape[0], cin = x.shape[1];
    if (g < 1 || cin % g != 0 || w.shape[0] != cin)
        throw UserError(c.where, "ConvTranspose channels do not match: X " + shape_string(x.shape) + ", W " +
                                     shape_string(w.shape) + ", group = " + std::to_string(g));
    OpCost k = base_cost(c, OpClass::Contraction);
    GemmView v;
    v.groups = g;
    v.m = n * prod(x.shape, 2);
    v.n = w.shape[1] * prod(w.shape, 2);
    v.k = cin / g;
    v.a_unique_elems = v.m * v.k;
    v.a = {c.input_id(0), /*in_place=*/true};  // direct kernel over X's pixels, then col2im
    v.b = {c.input_id(1), false};
    v.c = {c.output_id(0), false};
    k.gemms.push_back(v);
    k.macs = v.macs();
    k.flops = 2 * k.macs + (c.in.size() > 2 && c.in[2] ? y.elems() : 0);
    return k;
}

OpCost gemm(const NodeContext& c) {
    const Tensor& a = c.input(0);
    const Tensor& b = c.input(1);
    if (a.shape.size() != 2 || b.shape.size() != 2)
        throw UserError(c.where, "Gemm expects 2-D A and B, got " + shape_string(a.shape) + " and " + shape_string(b.shape));
    const bool ta = c.attr_int("transA", 0) != 0, tb = c.attr_int("transB", 0) != 0;
    const int64_t m = ta ? a.shape[1] : a.shape[0], ka = ta ? a.shape[0] : a.shape[1];
    const int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
    if (ka != kb)
        throw UserError(c.where, "Gemm inner dims differ: A " + shape_string(a.shape) + (ta ? "^T" : "") + ", B " +
                                     shape_string(b.shape) + (tb ? "^T" : ""));
    OpCost k = base_cost(c, OpClass::Contraction);
    GemmView v;
    v.m = m;
    v.n = n;
    v.k = ka;
    v.a_unique_elems = m * ka;
    v.b_is_weight = b.role != TensorRole::Activation && b.role != TensorRole::Input;
    v.a = {c.input_id(0), false};
    v.b = {c.input_id(1), false};
    v.c = {c.output_id(0), false};
    k.gemms.push_back(v);
    k.macs = v.macs();
    k.flops = 2 * k.macs + (c.in.size() > 2 && c.in[2] ? m * n : 0);
    return k;
}

}  // namespace

/// MatMul with numpy semantics: 1-D operands are promoted, batch dims broadcast. When B is a
/// 2-D weight, A's batch dims fold into M (one weight, one big GEMM).
OpCost op_cost::matmul(const NodeContext& c) {
    std::vector<int64_t> a = c.input(0).shape, b = c.input(1).shape;
    if (a.empty() || b.empty()) throw UserError(c.where, "MatMul operands must have rank >= 1");
    if (a.size() == 1) a.insert(a.begin(), 1);
    if (b.size() == 1) b.push_back(1);
    const int64_t m = a[a.size() - 2], ka = a.back(), kb = b[b.size() - 2], n = b.back();
    if (ka != kb)
        throw UserError(c.where, "MatMul inner dims differ: " + shape_string(c.input(0).shape) + " x " +
                                     shape_string(c.input(1).shape));
    const int64_t batch_a = prod(a, 0, a.size() - 2), batch_b = prod(b, 0, b.size() - 2);
    const int64_t batch = c.output(0).elems() / std::max<int64_t>(1, m * n);
    OpCost k = base_cost(c, OpClass::Contraction);
    GemmView v;
    v.k = ka;
    v.n = n;
    const Tensor& bt = c.input(1);
    v.b_is_weight = bt.role == TensorRole::Weight || bt.role == TensorRole::Constant;
    if (batch_b == 1) {  // one B shared by every batch entry: fold the batch into M
        v.m = batch * m;
    } else {
        v.batch = batch;
        v.m = m;
    }
    (void)batch_a;
    v.a_unique_elems = v.m * v.k;
    v.a = {c.input_id(0), false};
    v.b = {c.input_id(1), false};
    v.c = {c.output_id(0), false};
    k.gemms.push_back(v);
    k.macs = v.macs();
    k.flops = 2 * k.macs;
    return k;
}

namespace {
using op_cost::matmul;

/// LSTM / GRU / RNN: `gates` gate matmuls per step (4, 3, 1). The input projection of all
/// steps is one GEMM; the recurrent projection is `seq` dependent steps.
/// MACs = dirs * seq * batch * gates*H * (I + H), the manifest's definition.
OpHandler recurrent(int64_t gates) {
    return [gates](const NodeContext& c) {
        const Tensor& x = c.input(0);
        const Tensor& w = c.input(1);
        if (x.shape.size() != 3 || w.shape.size() != 3)
            throw UserError(c.where, "recurrent op expects 3-D X and W, got " + shape_string(x.shape) + ", " +
                                         shape_string(w.shape));
        const bool batch_first = c.attr_int("layout", 0) == 1;
        const int64_t seq = batch_first ? x.shape[1] : x.shape[0];
        const int64_t batch = batch_first ? x.shape[0] : x.shape[1];
        const int64_t input = x.shape[2];
        const int64_t dirs = w.shape[0];
        const int64_t hidden = c.attr_int("hidden_size", w.shape[1] / gates);
        if (w.shape[1] != gates * hidden)
            throw UserError(c.where, "W is " + shape_string(w.shape) + " but hidden_size = " + std::to_string(hidden));
        OpCost k = base_cost(c, OpClass::Contraction);
        GemmView in_proj;
        in_proj.batch = dirs;
        in_proj.m = seq * batch;
        in_proj.n = gates * hidden;
        in_proj.k = input;
        in_proj.a_unique_elems = in_proj.m * in_proj.k;
        in_proj.a = {c.input_id(0), false};   // X
        in_proj.b = {c.input_id(1), false};   // W
        in_proj.c = {c.output_id(0), false};  // Y
        GemmView rec = in_proj;
        rec.repeat = seq;
        rec.m = batch;
        rec.k = hidden;
        rec.a_unique_elems = rec.m * rec.k;
        rec.a = {-1, false};                 // the hidden state stays on chip between steps
        rec.b = {c.input_id(2), false};      // R
        k.gemms = {in_proj, rec};
        k.macs = in_proj.macs() + rec.macs();
        // Per hidden element and step: gate pre-activation adds and biases (3 per gate),
        // one activation per gate, plus the cell update (3) and output (2): 4*gates + 5.
        k.flops = 2 * k.macs + dirs * seq * batch * hidden * (4 * gates + 5);
        return k;
    };
}

OpCost pool(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Pooling);
    k.flops = c.output(0).elems() * std::max<int64_t>(1, prod(c.attr_ints("kernel_shape")));
    return k;
}

OpCost global_pool(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Pooling);
    k.flops = c.input(0).elems();
    return k;
}

struct Table {
    std::map<std::pair<std::string, std::string>, OpHandler> map;
    void add(const std::string& op, OpHandler h, const std::string& domain = "") { map[{domain, op}] = std::move(h); }
};

const Table& table() {
    static const Table t = [] {
        Table t;
        t.add("Conv", conv);
        t.add("ConvTranspose", conv_transpose);
        t.add("Gemm", gemm);
        t.add("MatMul", matmul);
        t.add("LSTM", recurrent(4));
        t.add("GRU", recurrent(3));
        t.add("RNN", recurrent(1));
        for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu",
                               "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Exp", "Log", "Sqrt",
                               "Reciprocal", "Neg", "Abs", "Ceil", "Floor", "Round", "Sign", "Max", "Min", "Mean",
                               "Sum", "Where", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not",
                               "And", "Or", "Xor", "Cast", "CastLike", "Softplus", "Softsign", "Mish", "Gelu",
                               "ThresholdedRelu", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
                               "Asinh", "Acosh", "Atanh", "Mod", "BitShift", "IsNaN", "IsInf", "QuantizeLinear",
                               "DequantizeLinear", "Shrink", "Trilu", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
                               "BitwiseNot", "Bernoulli", "Resize", "Upsample"})
            t.add(op, elementwise);
        for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                               "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
                               "CumSum", "TopK", "LpNormalization"})
            t.add(op, reduction);
        t.add("Softmax", per_element(OpClass::Reduction, 5));
        t.add("LogSoftmax", per_element(OpClass::Reduction, 5));
        t.add("Hardmax", per_element(OpClass::Reduction, 2));
        t.add("LayerNormalization", per_element(OpClass::Reduction, 8));
        t.add("InstanceNormalization", per_element(OpClass::Reduction, 8));
        t.add("MeanVarianceNormalization", per_element(OpClass::Reduction, 8));
        t.add("LRN", per_element(OpClass::Reduction, 8));
        t.add("BatchNormalization", per_element(OpClass::Elementwise, 2));
        for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) t.add(op, pool);
        for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) t.add(op, global_pool);
        for (const char* op : {"Gather", "GatherElements", "GatherND", "Slice"}) t.add(op, gather);
        for (const char* op : {"Transpose", "Concat", "Split",
                               "ScatterElements", "ScatterND", "Scatter", "Pad", "Expand", "Tile", "DepthToSpace",
                               "SpaceToDepth", "ConstantOfShape", "OneHot", "Range", "ReverseSequence", "Compress",
                               "NonZero", "EyeLike", "SequenceAt", "Col2Im"})
            t.add(op, data_movement);
        for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) t.add(op, view);
        for (const char* op : {"Shape", "Size", "Constant"}) t.add(op, shape_only);
        t.add("Dropout", dropout);
        op_cost::add_more_handlers([&t](const std::string& domain, const std::string& op, OpHandler h) { t.add(op, std::move(h), domain); });
        return t;
    }();
    return t;
}

}  // namespace

const OpHandler* find_op_handler(const std::string& domain, const std::string& op_type) {
    const std::string d = domain == "ai.onnx" ? "" : domain;
    const auto& m = table().map;
    auto it = m.find({d, op_type});
    return it == m.end() ? nullptr : &it->second;
}

std::vector<std::string> supported_ops() {
    std::vector<std::string> out;
    for (const auto& [key, h] : table().map) out.push_back(key.first.empty() ? key.second : key.first + ":" + key.second);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace archsim
