#pragma once
// Numeric precisions a machine can compute in, and their storage sizes.
#include <cstdint>
#include <string>

namespace archsim {

/// Operand precision of a run. Accumulators are 32-bit for every precision listed here
/// (int8 -> int32, fp16/bf16 -> fp32), as in TPU v1 and tensor cores.
enum class Precision : uint8_t { Int8, Fp16, Bf16, Fp32 };

/// Bytes per operand element: int8 1, fp16/bf16 2, fp32 4.
inline int64_t operand_bytes(Precision p) {
    switch (p) {
        case Precision::Int8: return 1;
        case Precision::Fp16:
        case Precision::Bf16: return 2;
        case Precision::Fp32: return 4;
    }
    return 4;
}

/// Bytes per accumulator (partial sum) element: 4 for every supported precision.
inline int64_t accumulator_bytes(Precision) { return 4; }

/// The one of four per-precision values that belongs to `p` (config structs keep one field per
/// precision; this picks it).
template <class T>
const T& by_precision(Precision p, const T& int8, const T& fp16, const T& bf16, const T& fp32) {
    switch (p) {
        case Precision::Int8: return int8;
        case Precision::Fp16: return fp16;
        case Precision::Bf16: return bf16;
        case Precision::Fp32: return fp32;
    }
    return fp32;
}

/// Lower-case name ("int8", "fp16", "bf16", "fp32").
std::string to_string(Precision p);

/// Parses a lower-case name; throws UserError(where, ...) listing the valid names otherwise.
Precision parse_precision(const std::string& text, const std::string& where);

}  // namespace archsim
