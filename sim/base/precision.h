#pragma once
// Numeric precisions a machine can compute in, and their storage sizes.
#include <cstdint>
#include <string>
#include <vector>

namespace archsim {

/// Operand precision of a run. Accumulators are 32-bit for every precision listed here
/// (int8 -> int32, fp8/fp16/bf16 -> fp32), as in TPU v1 and tensor cores. Fp8 is an 8-bit float
/// (E4M3 or E5M2, OCP "OCP 8-bit Floating Point Specification (OFP8)" rev 1.0, 2023; Hopper's and
/// Ada's FP8 tensor cores): its own rate and energy, never INT8's.
enum class Precision : uint8_t { Int8, Fp16, Bf16, Fp32, Fp8 };

/// Every precision's name, in the order configs and error messages list them.
const std::vector<std::string>& precision_names();

/// Bytes per operand element: int8/fp8 1, fp16/bf16 2, fp32 4.
inline int64_t operand_bytes(Precision p) {
    switch (p) {
        case Precision::Int8:
        case Precision::Fp8: return 1;
        case Precision::Fp16:
        case Precision::Bf16: return 2;
        case Precision::Fp32: return 4;
    }
    return 4;
}

/// Bytes per accumulator (partial sum) element: 4 for every supported precision.
inline int64_t accumulator_bytes(Precision) { return 4; }

/// The one of five per-precision values that belongs to `p` (config structs keep one field per
/// precision; this picks it).
template <class T>
const T& by_precision(Precision p, const T& int8, const T& fp16, const T& bf16, const T& fp32, const T& fp8) {
    switch (p) {
        case Precision::Int8: return int8;
        case Precision::Fp16: return fp16;
        case Precision::Bf16: return bf16;
        case Precision::Fp32: return fp32;
        case Precision::Fp8: return fp8;
    }
    return fp32;
}

/// by_precision on mutable fields (a config binder's field selector).
template <class T>
T& by_precision(Precision p, T& int8, T& fp16, T& bf16, T& fp32, T& fp8) {
    return const_cast<T&>(by_precision(p, static_cast<const T&>(int8), static_cast<const T&>(fp16), static_cast<const T&>(bf16),
                                       static_cast<const T&>(fp32), static_cast<const T&>(fp8)));
}

/// Lower-case name ("int8", "fp8", "fp16", "bf16", "fp32").
std::string to_string(Precision p);

/// Parses a lower-case name (precision_names()); throws UserError(where, ...) listing them otherwise.
Precision parse_precision(const std::string& text, const std::string& where);

}  // namespace archsim
