#include "workloads/onnx/causal_mask.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace archsim {

namespace {

constexpr int64_t kMaxMaskElems = int64_t(1) << 24;

/// The tensor's values as doubles (bool / integer / float storage), empty if unreadable.
std::vector<double> values_of(const onnx::TensorProto& t, int64_t n) {
    std::vector<double> v;
    using T = onnx::TensorProto;
    const std::string& raw = t.raw_data();
    auto from_raw = [&](auto zero) {
        using E = decltype(zero);
        if (raw.size() != static_cast<size_t>(n) * sizeof(E)) return;
        v.resize(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) {
            E e;
            std::memcpy(&e, raw.data() + k * sizeof(E), sizeof(E));
            v[static_cast<size_t>(k)] = static_cast<double>(e);
        }
    };
    switch (t.data_type()) {
        case T::BOOL:
        case T::UINT8:
        case T::INT8:
            if (!raw.empty()) from_raw(uint8_t{});
            else if (t.int32_data_size() == n) v.assign(t.int32_data().begin(), t.int32_data().end());
            break;
        case T::INT32:
            if (!raw.empty()) from_raw(int32_t{});
            else if (t.int32_data_size() == n) v.assign(t.int32_data().begin(), t.int32_data().end());
            break;
        case T::INT64:
            if (!raw.empty()) from_raw(int64_t{});
            else if (t.int64_data_size() == n) v.assign(t.int64_data().begin(), t.int64_data().end());
            break;
        case T::FLOAT:
            if (!raw.empty()) from_raw(float{});
            else if (t.float_data_size() == n) v.assign(t.float_data().begin(), t.float_data().end());
            break;
        default:
            break;
    }
    return v;
}

}  // namespace

bool is_causal_mask(const onnx::TensorProto& t) {
    const int rank = t.dims_size();
    if (rank < 2) return false;
    for (int d = 0; d + 2 < rank; ++d)
        if (t.dims(d) != 1) return false;
    const int64_t q = t.dims(rank - 2), kv = t.dims(rank - 1);
    if (q < 2 || kv < q) return false;
    if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) return t.data_type() == onnx::TensorProto::BOOL;
    if (q > kMaxMaskElems / kv) return false;
    const std::vector<double> v = values_of(t, q * kv);
    if (v.empty()) return false;
    const bool additive = t.data_type() == onnx::TensorProto::FLOAT;
    bool masked_true = !additive, kept_true = !additive, additive_ok = additive;
    for (int64_t i = 0; i < q; ++i)
        for (int64_t j = 0; j < kv; ++j) {
            const bool masked = j > i + (kv - q);
            const double x = v[static_cast<size_t>(i * kv + j)];
            masked_true = masked_true && ((x != 0) == masked);
            kept_true = kept_true && ((x != 0) == !masked);
            additive_ok = additive_ok && (masked ? x <= -1000.0 : x == 0.0);
            if (!masked_true && !kept_true && !additive_ok) return false;
        }
    return masked_true || kept_true || additive_ok;
}

}  // namespace archsim
