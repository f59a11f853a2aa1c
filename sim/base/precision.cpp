#include "sim/base/precision.h"

#include "sim/base/error.h"

namespace archsim {

std::string to_string(Precision p) {
    switch (p) {
        case Precision::Int8: return "int8";
        case Precision::Fp16: return "fp16";
        case Precision::Bf16: return "bf16";
        case Precision::Fp32: return "fp32";
        case Precision::Fp8: return "fp8";
    }
    return "fp32";
}

const std::vector<std::string>& precision_names() {
    static const std::vector<std::string> names = {"int8", "fp8", "fp16", "bf16", "fp32"};
    return names;
}

Precision parse_precision(const std::string& text, const std::string& where) {
    if (text == "int8") return Precision::Int8;
    if (text == "fp16") return Precision::Fp16;
    if (text == "bf16") return Precision::Bf16;
    if (text == "fp32") return Precision::Fp32;
    if (text == "fp8") return Precision::Fp8;
    throw UserError(where, "unknown precision '" + text + "' (expected int8, fp8, fp16, bf16 or fp32)");
}

}  // namespace archsim
