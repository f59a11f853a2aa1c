// The folding rules, one per op type (ONNX operator semantics, opset 1-18), and their table:
// shape reads (Shape, Size, Constant), shape arithmetic (Gather, Concat, Slice, Unsqueeze,
// Squeeze, Reshape, ConstantOfShape, Expand, Range, ReduceProd/Sum over everything) and
// elementwise arithmetic and comparisons with numpy broadcasting.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "workloads/onnx/const_fold_parts.h"

namespace archsim::fold {

namespace {

using Args = std::vector<double>;
constexpr int32_t kBool = onnx::TensorProto_DataType_BOOL;

/// Shape, or Size with `size`: from the input's static shape.
Result shape_of(const FoldArgs& a, bool size) {
    const onnx::NodeProto& node = a.node;
    if (node.input_size() < 1) return std::nullopt;
    auto it = a.shapes.find(node.input(0));
    if (it == a.shapes.end()) return std::nullopt;
    const auto& s = it->second;
    if (size) {
        int64_t p = 1;
        for (auto d : s) p *= d;
        return one(make_int({}, {p}));
    }
    const int64_t rank = static_cast<int64_t>(s.size());
    int64_t b = std::clamp<int64_t>(norm_axis(attr_i(node, "start", 0), rank), 0, rank);
    int64_t e = std::clamp<int64_t>(norm_axis(attr_i(node, "end", rank), rank), 0, rank);
    std::vector<int64_t> v(s.begin() + b, s.begin() + std::max(b, e));
    return one(make_int({static_cast<int64_t>(v.size())}, v));
}

Result constant(const FoldArgs& a) {
    const onnx::NodeProto& node = a.node;
    if (auto at = attr(node, "value"); at && at->has_t()) {
        auto c = const_from_proto(at->t());
        if (!c) return std::nullopt;
        return one(*c);
    }
    if (auto at = attr(node, "value_int")) return one(make_int({}, {at->i()}));
    if (auto at = attr(node, "value_ints")) return one(make_int({at->ints_size()}, {at->ints().begin(), at->ints().end()}));
    if (auto at = attr(node, "value_float")) {
        ConstTensor c;
        c.dtype = onnx::TensorProto_DataType_FLOAT;
        c.f = {at->f()};
        return one(c);
    }
    if (auto at = attr(node, "value_floats")) {
        ConstTensor c;
        c.dtype = onnx::TensorProto_DataType_FLOAT;
        c.shape = {at->floats_size()};
        c.f.assign(at->floats().begin(), at->floats().end());
        return one(c);
    }
    return std::nullopt;
}

Result cast(const FoldArgs& a) {
    const ConstTensor& x = *a.in[0];
    ConstTensor c;
    c.shape = x.shape;
    c.dtype = static_cast<int32_t>(attr_i(a.node, "to", onnx::TensorProto_DataType_INT64));
    if (!c.is_float() && !is_int_type(c.dtype)) return std::nullopt;
    for (int64_t k = 0; k < x.elems(); ++k) {
        if (c.is_float()) c.f.push_back(x.as_double(k));
        else if (c.dtype == kBool) c.i.push_back(x.as_double(k) != 0.0);
        else c.i.push_back(saturate_i64(x.as_double(k)));
    }
    return one(std::move(c));
}

/// Unsqueeze, or Squeeze with `squeeze`: axes from the attribute, or the second input from opset 13.
Result unsqueeze(const FoldArgs& a, bool squeeze) {
    const ConstTensor& x = *a.in[0];
    std::vector<int64_t> axes = attr_ints(a.node, "axes");
    if (a.opset >= 13 && a.in.size() > 1 && a.in[1])
        for (int64_t k = 0; k < a.in[1]->elems(); ++k) axes.push_back(a.in[1]->as_int(k));
    ConstTensor c = x;
    if (!squeeze) {
        const int64_t out_rank = static_cast<int64_t>(x.shape.size() + axes.size());
        for (auto& ax : axes) ax = norm_axis(ax, out_rank);
        std::sort(axes.begin(), axes.end());
        for (auto ax : axes) {
            if (ax < 0 || ax > static_cast<int64_t>(c.shape.size())) return std::nullopt;
            c.shape.insert(c.shape.begin() + ax, 1);
        }
    } else {
        const int64_t rank = static_cast<int64_t>(x.shape.size());
        std::vector<int64_t> s;
        for (int64_t k = 0; k < rank; ++k) {
            bool drop = axes.empty() ? x.shape[k] == 1
                                     : std::any_of(axes.begin(), axes.end(), [&](int64_t ax) { return norm_axis(ax, rank) == k; });
            if (!drop) s.push_back(x.shape[k]);
        }
        c.shape = s;
    }
    return one(std::move(c));
}

Result reshape(const FoldArgs& a) {
    if (a.in.size() < 2 || !a.in[1]) return std::nullopt;
    auto s = reshape_target(a.in[0]->shape, *a.in[1], attr_i(a.node, "allowzero", 0) != 0);
    if (!s) return std::nullopt;
    ConstTensor c = *a.in[0];
    c.shape = *s;
    return one(std::move(c));
}

Result constant_of_shape(const FoldArgs& a) {
    const ConstTensor& x = *a.in[0];
    ConstTensor c;
    for (int64_t k = 0; k < x.elems(); ++k) {
        if (x.as_int(k) < 0) return std::nullopt;
        c.shape.push_back(x.as_int(k));
    }
    if (c.elems() > kMaxFoldElems) return std::nullopt;
    double value = 0;
    c.dtype = onnx::TensorProto_DataType_FLOAT;
    if (auto at = attr(a.node, "value"); at && at->has_t()) {
        auto v = const_from_proto(at->t());
        if (!v || v->elems() != 1) return std::nullopt;
        c.dtype = v->dtype;
        value = v->as_double(0);
    }
    if (c.is_float()) c.f.assign(c.elems(), value);
    else c.i.assign(c.elems(), saturate_i64(value));
    return one(std::move(c));
}

Result expand(const FoldArgs& a) {
    if (a.in.size() < 2 || !a.in[1]) return std::nullopt;
    const ConstTensor& x = *a.in[0];
    ConstTensor target;
    for (int64_t k = 0; k < a.in[1]->elems(); ++k) target.shape.push_back(a.in[1]->as_int(k));
    auto shape = broadcast({&x, &target});
    if (!shape) return std::nullopt;
    ConstTensor c;
    c.dtype = x.dtype;
    c.shape = *shape;
    if (c.elems() > kMaxFoldElems) return std::nullopt;
    for (int64_t k = 0; k < c.elems(); ++k) {
        int64_t src = broadcast_index(x, *shape, k);
        if (x.is_float()) c.f.push_back(x.f[src]);
        else c.i.push_back(x.i[src]);
    }
    return one(std::move(c));
}

Result range(const FoldArgs& a) {
    if (a.in.size() != 3 || !a.in[1] || !a.in[2]) return std::nullopt;
    const ConstTensor& x = *a.in[0];
    double start = x.as_double(0), limit = a.in[1]->as_double(0), delta = a.in[2]->as_double(0);
    if (delta == 0) return std::nullopt;
    int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
    if (n > kMaxFoldElems) return std::nullopt;
    ConstTensor c;
    c.dtype = x.dtype;
    c.shape = {n};
    for (int64_t k = 0; k < n; ++k) {
        double v = start + k * delta;
        if (c.is_float()) c.f.push_back(v);
        else c.i.push_back(static_cast<int64_t>(v));
    }
    return one(std::move(c));
}

/// ReduceProd, or ReduceSum with `sum`, over every axis (no axes attribute, no axes input).
Result reduce_all(const FoldArgs& a, bool sum) {
    if (!attr_ints(a.node, "axes").empty() || a.in.size() != 1) return std::nullopt;
    const ConstTensor& x = *a.in[0];
    double acc = sum ? 0 : 1;
    for (int64_t k = 0; k < x.elems(); ++k) acc = sum ? acc + x.as_double(k) : acc * x.as_double(k);
    ConstTensor c;
    c.dtype = x.dtype;
    if (attr_i(a.node, "keepdims", 1)) c.shape.assign(x.shape.size(), 1);
    if (c.is_float()) c.f = {acc};
    else c.i = {static_cast<int64_t>(acc)};
    return one(std::move(c));
}

/// A binary elementwise rule: `f` on the two inputs, the result of the first's type (or bool).
FoldRule binary(double (*f)(double, double), bool to_bool = false) {
    return {true, [f, to_bool](const FoldArgs& a) -> Result {
                if (a.in.size() != 2 || !a.in[1]) return std::nullopt;
                return elementwise(a.in, to_bool ? kBool : a.in[0]->dtype, [f](const Args& v) { return f(v[0], v[1]); });
            }};
}

/// A unary elementwise rule; `float_only`: folded on floating-point input only.
FoldRule unary(double (*f)(double), bool to_bool = false, bool float_only = false) {
    return {true, [f, to_bool, float_only](const FoldArgs& a) -> Result {
                const ConstTensor& x = *a.in[0];
                if (float_only && !x.is_float()) return std::nullopt;
                return elementwise({&x}, to_bool ? kBool : x.dtype, [f](const Args& v) { return f(v[0]); });
            }};
}

Result divide(const FoldArgs& a) {
    if (a.in.size() != 2 || !a.in[1]) return std::nullopt;
    for (int64_t k = 0; k < a.in[1]->elems(); ++k)
        if (a.in[1]->as_double(k) == 0.0) return std::nullopt;
    const bool fl = a.in[0]->is_float();
    return elementwise(a.in, a.in[0]->dtype, [fl](const Args& v) { return fl ? v[0] / v[1] : std::trunc(v[0] / v[1]); });
}

Result where(const FoldArgs& a) {
    if (a.in.size() != 3 || !a.in[1] || !a.in[2] || a.in[1]->is_float() != a.in[2]->is_float()) return std::nullopt;
    return elementwise(a.in, a.in[1]->dtype, [](const Args& v) { return v[0] != 0.0 ? v[1] : v[2]; });
}

const std::unordered_map<std::string, FoldRule>& rules() {
    static const std::unordered_map<std::string, FoldRule> table = {
        {"Shape", {false, [](const FoldArgs& a) { return shape_of(a, false); }}},
        {"Size", {false, [](const FoldArgs& a) { return shape_of(a, true); }}},
        {"Constant", {false, constant}},
        {"Identity", {true, [](const FoldArgs& a) { return one(*a.in[0]); }}},
        {"Cast", {true, cast}},
        {"Gather", {true, [](const FoldArgs& a) -> Result {
             if (a.in.size() != 2 || !a.in[1]) return std::nullopt;
             return fold_gather(a.node, *a.in[0], *a.in[1]);
         }}},
        {"Concat", {true, [](const FoldArgs& a) -> Result {
             for (auto* t : a.in)
                 if (!t) return std::nullopt;
             return fold_concat(a.node, a.in);
         }}},
        {"Slice", {true, [](const FoldArgs& a) { return fold_slice(a.node, a.in, a.opset); }}},
        {"Unsqueeze", {true, [](const FoldArgs& a) { return unsqueeze(a, false); }}},
        {"Squeeze", {true, [](const FoldArgs& a) { return unsqueeze(a, true); }}},
        {"Reshape", {true, reshape}},
        {"ConstantOfShape", {true, constant_of_shape}},
        {"Expand", {true, expand}},
        {"Range", {true, range}},
        {"ReduceProd", {true, [](const FoldArgs& a) { return reduce_all(a, false); }}},
        {"ReduceSum", {true, [](const FoldArgs& a) { return reduce_all(a, true); }}},
        {"Add", binary([](double x, double y) { return x + y; })},
        {"Sub", binary([](double x, double y) { return x - y; })},
        {"Mul", binary([](double x, double y) { return x * y; })},
        {"Div", {true, divide}},
        {"Max", binary([](double x, double y) { return std::max(x, y); })},
        {"Min", binary([](double x, double y) { return std::min(x, y); })},
        {"Equal", binary([](double x, double y) { return x == y ? 1.0 : 0.0; }, true)},
        {"Less", binary([](double x, double y) { return x < y ? 1.0 : 0.0; }, true)},
        {"Greater", binary([](double x, double y) { return x > y ? 1.0 : 0.0; }, true)},
        {"Where", {true, where}},
        {"Neg", unary([](double x) { return -x; })},
        {"Abs", unary([](double x) { return std::fabs(x); })},
        {"Relu", unary([](double x) { return std::max(x, 0.0); })},
        {"Not", unary([](double x) { return x == 0.0 ? 1.0 : 0.0; }, true)},
        {"Sqrt", unary([](double x) { return std::sqrt(x); }, false, true)},
        {"Floor", unary([](double x) { return std::floor(x); }, false, true)},
        {"Ceil", unary([](double x) { return std::ceil(x); }, false, true)},
    };
    return table;
}

}  // namespace

const FoldRule* find_fold_rule(const std::string& op_type) {
    const auto it = rules().find(op_type);
    return it == rules().end() ? nullptr : &it->second;
}

}  // namespace archsim::fold
