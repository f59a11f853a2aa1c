#include "workloads/onnx/const_fold.h"
#include "workloads/onnx/const_fold_parts.h"

#include <cstdint>
#include <type_traits>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

namespace archsim {

using onnx::TensorProto_DataType;

bool ConstTensor::is_float() const {
    return dtype == onnx::TensorProto_DataType_FLOAT || dtype == onnx::TensorProto_DataType_DOUBLE ||
           dtype == onnx::TensorProto_DataType_FLOAT16 || dtype == onnx::TensorProto_DataType_BFLOAT16;
}

int64_t ConstTensor::elems() const {
    int64_t n = 1;
    for (auto d : shape) {
        if (d < 0) return INT64_MAX;  // a corrupt shape: callers refuse anything above their limits
        if (d != 0 && __builtin_mul_overflow(n, d, &n)) return INT64_MAX;
        if (d == 0) n = 0;
    }
    return n;
}

namespace fold {

bool is_int_type(int32_t dt) {
    switch (dt) {
        case onnx::TensorProto_DataType_INT64: case onnx::TensorProto_DataType_INT32:
        case onnx::TensorProto_DataType_INT16: case onnx::TensorProto_DataType_INT8:
        case onnx::TensorProto_DataType_UINT8: case onnx::TensorProto_DataType_UINT16:
        case onnx::TensorProto_DataType_UINT32: case onnx::TensorProto_DataType_UINT64:
        case onnx::TensorProto_DataType_BOOL: return true;
        default: return false;
    }
}

/// `v` as an int64: NaN -> 0, beyond the range -> the nearest end (out-of-range float-to-int casts are
/// undefined in C++; ONNX leaves them unspecified too).
int64_t saturate_i64(double v) {
    if (std::isnan(v)) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return static_cast<int64_t>(v);
}

template <class T>
bool read_raw(const std::string& raw, int64_t n, std::vector<int64_t>& out) {
    if (n < 0 || n > kMaxFoldElems || static_cast<int64_t>(raw.size()) != n * static_cast<int64_t>(sizeof(T))) return false;
    out.resize(n);
    for (int64_t k = 0; k < n; ++k) {
        T v;
        std::memcpy(&v, raw.data() + k * sizeof(T), sizeof(T));
        if constexpr (std::is_floating_point_v<T>) out[k] = saturate_i64(static_cast<double>(v));
        else out[k] = static_cast<int64_t>(v);
    }
    return true;
}

template <class T>
bool read_raw_f(const std::string& raw, int64_t n, std::vector<double>& out) {
    if (n < 0 || n > kMaxFoldElems || static_cast<int64_t>(raw.size()) != n * static_cast<int64_t>(sizeof(T))) return false;
    out.resize(n);
    for (int64_t k = 0; k < n; ++k) {
        T v;
        std::memcpy(&v, raw.data() + k * sizeof(T), sizeof(T));
        out[k] = static_cast<double>(v);
    }
    return true;
}

/// Strides of a row-major shape.
std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (int64_t k = static_cast<int64_t>(shape.size()) - 2; k >= 0; --k) s[k] = s[k + 1] * shape[k + 1];
    return s;
}

/// numpy broadcast of several shapes; nullopt if incompatible.
std::optional<std::vector<int64_t>> broadcast(const std::vector<const ConstTensor*>& ts) {
    size_t rank = 0;
    for (auto* t : ts) rank = std::max(rank, t->shape.size());
    std::vector<int64_t> out(rank, 1);
    for (auto* t : ts) {
        size_t off = rank - t->shape.size();
        for (size_t k = 0; k < t->shape.size(); ++k) {
            int64_t d = t->shape[k];
            if (out[off + k] == 1) out[off + k] = d;
            else if (d != 1 && d != out[off + k]) return std::nullopt;
        }
    }
    return out;
}

/// Index into `t` for a flat index of the broadcast output shape.
int64_t broadcast_index(const ConstTensor& t, const std::vector<int64_t>& out_shape, int64_t flat) {
    const size_t rank = out_shape.size(), off = rank - t.shape.size();
    auto ts = strides_of(t.shape);
    int64_t idx = 0;
    for (int64_t k = static_cast<int64_t>(rank) - 1; k >= 0; --k) {
        int64_t coord = flat % out_shape[k];
        flat /= out_shape[k];
        if (static_cast<size_t>(k) >= off) {
            size_t tk = k - off;
            if (t.shape[tk] != 1) idx += coord * ts[tk];
        }
    }
    return idx;
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}

int64_t attr_i(const onnx::NodeProto& n, const char* name, int64_t def) {
    auto a = attr(n, name);
    return a ? a->i() : def;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const char* name) {
    auto a = attr(n, name);
    if (!a) return {};
    return {a->ints().begin(), a->ints().end()};
}

ConstTensor make_int(std::vector<int64_t> shape, std::vector<int64_t> v) {
    ConstTensor c;
    c.shape = std::move(shape);
    c.i = std::move(v);
    return c;
}

int64_t norm_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

Result one(ConstTensor c) {
    if (c.elems() > kMaxFoldElems) return std::nullopt;
    return std::vector<ConstTensor>{std::move(c)};
}

/// Elementwise n-ary op with numpy broadcasting; `fi` for integer inputs, `ff` for floats.
Result elementwise(const std::vector<const ConstTensor*>& in, int32_t out_dtype,
                   const std::function<double(const std::vector<double>&)>& f) {
    auto shape = broadcast(in);
    if (!shape) return std::nullopt;
    ConstTensor out;
    out.shape = *shape;
    out.dtype = out_dtype;
    const int64_t n = out.elems();
    if (n > kMaxFoldElems) return std::nullopt;
    std::vector<double> args(in.size());
    for (int64_t k = 0; k < n; ++k) {
        for (size_t a = 0; a < in.size(); ++a) args[a] = in[a]->as_double(broadcast_index(*in[a], *shape, k));
        double r = f(args);
        if (out.is_float()) out.f.push_back(r);
        else out.i.push_back(saturate_i64(r));
    }
    return one(std::move(out));
}

Result fold_slice(const onnx::NodeProto& node, const std::vector<const ConstTensor*>& in, int64_t opset) {
    const ConstTensor& data = *in[0];
    std::vector<int64_t> starts, ends, axes, steps;
    if (opset < 10) {
        starts = attr_ints(node, "starts");
        ends = attr_ints(node, "ends");
        axes = attr_ints(node, "axes");
    } else {
        if (in.size() < 3) return std::nullopt;
        for (int64_t k = 0; k < in[1]->elems(); ++k) starts.push_back(in[1]->as_int(k));
        for (int64_t k = 0; k < in[2]->elems(); ++k) ends.push_back(in[2]->as_int(k));
        if (in.size() > 3 && in[3])
            for (int64_t k = 0; k < in[3]->elems(); ++k) axes.push_back(in[3]->as_int(k));
        if (in.size() > 4 && in[4])
            for (int64_t k = 0; k < in[4]->elems(); ++k) steps.push_back(in[4]->as_int(k));
    }
    const int64_t rank = static_cast<int64_t>(data.shape.size());
    if (axes.empty())
        for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (axes.size() != starts.size() || ends.size() != starts.size() || steps.size() != starts.size()) return std::nullopt;
    std::vector<int64_t> b(rank, 0), st(rank, 1), cnt = data.shape;
    for (size_t k = 0; k < axes.size(); ++k) {
        int64_t ax = norm_axis(axes[k], rank);
        if (ax < 0 || ax >= rank || steps[k] == 0) return std::nullopt;
        int64_t dim = data.shape[ax], s = starts[k], e = ends[k], step = steps[k];
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (step > 0) {
            s = std::clamp<int64_t>(s, 0, dim);
            e = std::clamp<int64_t>(e, 0, dim);
            cnt[ax] = e > s ? (e - s + step - 1) / step : 0;
        } else {
            s = std::clamp<int64_t>(s, -1, dim - 1);
            e = std::clamp<int64_t>(e, -1, dim - 1);
            cnt[ax] = s > e ? (s - e + (-step) - 1) / (-step) : 0;
        }
        b[ax] = s;
        st[ax] = step;
    }
    ConstTensor out;
    out.dtype = data.dtype;
    out.shape = cnt;
    const int64_t n = out.elems();
    auto ds = strides_of(data.shape);
    for (int64_t flat = 0; flat < n; ++flat) {
        int64_t rem = flat, src = 0;
        for (int64_t k = rank - 1; k >= 0; --k) {
            int64_t c = rem % cnt[k];
            rem /= cnt[k];
            src += (b[k] + c * st[k]) * ds[k];
        }
        if (data.is_float()) out.f.push_back(data.f[src]);
        else out.i.push_back(data.i[src]);
    }
    return one(std::move(out));
}

Result fold_gather(const onnx::NodeProto& node, const ConstTensor& data, const ConstTensor& idx) {
    const int64_t rank = static_cast<int64_t>(data.shape.size());
    if (rank == 0) return std::nullopt;
    const int64_t axis = norm_axis(attr_i(node, "axis", 0), rank);
    if (axis < 0 || axis >= rank) return std::nullopt;
    ConstTensor out;
    out.dtype = data.dtype;
    for (int64_t k = 0; k < axis; ++k) out.shape.push_back(data.shape[k]);
    for (auto d : idx.shape) out.shape.push_back(d);
    for (int64_t k = axis + 1; k < rank; ++k) out.shape.push_back(data.shape[k]);
    const int64_t outer = [&] { int64_t p = 1; for (int64_t k = 0; k < axis; ++k) p *= data.shape[k]; return p; }();
    const int64_t inner = [&] { int64_t p = 1; for (int64_t k = axis + 1; k < rank; ++k) p *= data.shape[k]; return p; }();
    const int64_t dim = data.shape[axis];
    if (outer * idx.elems() * inner > kMaxFoldElems) return std::nullopt;
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < idx.elems(); ++j) {
            int64_t ix = idx.as_int(j);
            if (ix < 0) ix += dim;
            if (ix < 0 || ix >= dim) return std::nullopt;
            for (int64_t in = 0; in < inner; ++in) {
                int64_t src = (o * dim + ix) * inner + in;
                if (data.is_float()) out.f.push_back(data.f[src]);
                else out.i.push_back(data.i[src]);
            }
        }
    return one(std::move(out));
}

Result fold_concat(const onnx::NodeProto& node, const std::vector<const ConstTensor*>& in) {
    const int64_t rank = static_cast<int64_t>(in[0]->shape.size());
    if (rank == 0) return std::nullopt;
    const int64_t axis = norm_axis(attr_i(node, "axis", 0), rank);
    if (axis < 0 || axis >= rank) return std::nullopt;
    ConstTensor out;
    out.dtype = in[0]->dtype;
    out.shape = in[0]->shape;
    out.shape[axis] = 0;
    for (auto* t : in) {
        if (static_cast<int64_t>(t->shape.size()) != rank || t->is_float() != in[0]->is_float()) return std::nullopt;
        for (int64_t k = 0; k < rank; ++k)
            if (k != axis && t->shape[k] != in[0]->shape[k]) return std::nullopt;
        out.shape[axis] += t->shape[axis];
    }
    int64_t outer = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= out.shape[k];
    for (int64_t o = 0; o < outer; ++o)
        for (auto* t : in) {
            int64_t chunk = t->elems() / std::max<int64_t>(outer, 1);
            for (int64_t c = 0; c < chunk; ++c) {
                int64_t src = o * chunk + c;
                if (t->is_float()) out.f.push_back(t->f[src]);
                else out.i.push_back(t->i[src]);
            }
        }
    return one(std::move(out));
}

/// Reshape target with ONNX's 0 (copy) and -1 (infer) rules.
std::optional<std::vector<int64_t>> reshape_target(const std::vector<int64_t>& in_shape, const ConstTensor& spec,
                                                   bool allowzero) {
    std::vector<int64_t> out;
    int64_t known = 1, infer = -1, total = 1;
    for (auto d : in_shape) total *= d;
    for (int64_t k = 0; k < spec.elems(); ++k) {
        int64_t d = spec.as_int(k);
        if (d == 0 && !allowzero) {
            if (k >= static_cast<int64_t>(in_shape.size())) return std::nullopt;
            d = in_shape[k];
        }
        if (d == -1) {
            if (infer >= 0) return std::nullopt;
            infer = k;
            out.push_back(1);
            continue;
        }
        if (d < 0 || (d != 0 && __builtin_mul_overflow(known, d, &known))) return std::nullopt;
        if (d == 0) known = 0;
        out.push_back(d);
    }
    if (infer >= 0) {
        if (known == 0 || total % known != 0) return std::nullopt;
        out[infer] = total / known;
    } else if (known != total) {
        return std::nullopt;
    }
    return out;
}

}  // namespace fold

using namespace fold;

std::optional<ConstTensor> const_from_proto(const onnx::TensorProto& t) {
    ConstTensor c;
    c.dtype = t.data_type();
    for (auto d : t.dims()) {
        if (d < 0) return std::nullopt;
        c.shape.push_back(d);
    }
    const int64_t n = c.elems();
    if (n > kMaxFoldElems) return std::nullopt;
    if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) return std::nullopt;
    const std::string& raw = t.raw_data();
    const bool has_raw = t.has_raw_data();
    switch (c.dtype) {
        case onnx::TensorProto_DataType_INT64:
            if (has_raw) { if (!read_raw<int64_t>(raw, n, c.i)) return std::nullopt; }
            else c.i.assign(t.int64_data().begin(), t.int64_data().end());
            break;
        case onnx::TensorProto_DataType_INT32:
            if (has_raw) { if (!read_raw<int32_t>(raw, n, c.i)) return std::nullopt; }
            else c.i.assign(t.int32_data().begin(), t.int32_data().end());
            break;
        case onnx::TensorProto_DataType_INT8:
            if (has_raw) { if (!read_raw<int8_t>(raw, n, c.i)) return std::nullopt; }
            else c.i.assign(t.int32_data().begin(), t.int32_data().end());
            break;
        case onnx::TensorProto_DataType_UINT8:
        case onnx::TensorProto_DataType_BOOL:
            if (has_raw) { if (!read_raw<uint8_t>(raw, n, c.i)) return std::nullopt; }
            else c.i.assign(t.int32_data().begin(), t.int32_data().end());
            break;
        case onnx::TensorProto_DataType_FLOAT:
            if (has_raw) { if (!read_raw_f<float>(raw, n, c.f)) return std::nullopt; }
            else c.f.assign(t.float_data().begin(), t.float_data().end());
            break;
        case onnx::TensorProto_DataType_DOUBLE:
            if (has_raw) { if (!read_raw_f<double>(raw, n, c.f)) return std::nullopt; }
            else c.f.assign(t.double_data().begin(), t.double_data().end());
            break;
        default:
            return std::nullopt;
    }
    if (static_cast<int64_t>(c.is_float() ? c.f.size() : c.i.size()) != n) return std::nullopt;
    return c;
}

onnx::TensorProto const_to_proto(const ConstTensor& c, const std::string& name) {
    onnx::TensorProto t;
    t.set_name(name);
    for (auto d : c.shape) t.add_dims(d);
    t.set_data_type(c.dtype);
    switch (c.dtype) {
        case onnx::TensorProto_DataType_INT64:
            for (auto v : c.i) t.add_int64_data(v);
            break;
        case onnx::TensorProto_DataType_DOUBLE:
            for (auto v : c.f) t.add_double_data(v);
            break;
        case onnx::TensorProto_DataType_FLOAT:
            for (auto v : c.f) t.add_float_data(static_cast<float>(v));
            break;
        default:  // INT32, INT8, UINT8, BOOL ... all live in int32_data
            for (auto v : c.i) t.add_int32_data(static_cast<int32_t>(v));
            break;
    }
    return t;
}

std::optional<std::vector<ConstTensor>> fold_node(const onnx::NodeProto& node,
                                                  const std::map<std::string, ConstTensor>& consts,
                                                  const ShapeMap& shapes, int64_t opset) {
    if (!node.domain().empty() && node.domain() != "ai.onnx") return std::nullopt;
    const FoldRule* rule = find_fold_rule(node.op_type());
    if (!rule) return std::nullopt;
    FoldArgs a{node, {}, shapes, opset};
    if (rule->constant_inputs) {  // every (present) input a known constant, the first present
        for (const auto& name : node.input()) {
            if (name.empty()) {
                a.in.push_back(nullptr);
                continue;
            }
            auto it = consts.find(name);
            if (it == consts.end()) return std::nullopt;
            a.in.push_back(&it->second);
        }
        if (a.in.empty() || !a.in[0]) return std::nullopt;
    }
    return rule->fold(a);
}

}  // namespace archsim
