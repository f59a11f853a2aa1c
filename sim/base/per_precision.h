#pragma once
// Per-precision config values as named sub-keys (`<key>.int8`, `.fp16`, `.bf16`, `.fp32`, `.fp8`): the
// typed vocabulary for anything a machine does at a different rate or energy per precision.
#include <array>
#include <functional>
#include <string>

#include "sim/base/precision.h"
#include "sim/base/params.h"

namespace archsim {

/// One value per operand precision (fp8 last: most parts have none, so it defaults to 0).
struct PerPrecision {
    double int8 = 0, fp16 = 0, bf16 = 0, fp32 = 0, fp8 = 0;
    /// The value for `p`.
    double at(Precision p) const { return by_precision(p, int8, fp16, bf16, fp32, fp8); }
};

/// Declares `<key>.int8`, `<key>.fp16`, `<key>.bf16`, `<key>.fp32` and `<key>.fp8` on `b` (each
/// >= 0, in `unit`), bound to the PerPrecision that `field` selects in T; `doc` says what the value
/// is (`docs`, if given, one line per precision in that order instead) and `defaults` the default
/// values.
/// `old_keys`, if given, is the key's former per-precision name with "{}" for the precision
/// (e.g. "energy.mac_pj_{}"): the old names then fail with the new one named.
template <class T>
void declare_per_precision(ParamBinder<T>& b, const std::string& key, std::function<PerPrecision&(T&)> field,
                           const PerPrecision& defaults, const std::string& unit, const std::string& doc,
                           const std::string& old_keys = "", const std::array<std::string, 5>& docs = {}) {
    const std::pair<const char*, double PerPrecision::*> parts[] = {{"int8", &PerPrecision::int8}, {"fp16", &PerPrecision::fp16},
                                                                    {"bf16", &PerPrecision::bf16}, {"fp32", &PerPrecision::fp32},
                                                                    {"fp8", &PerPrecision::fp8}};
    for (size_t i = 0; i < 5; ++i) {
        const auto& [name, member] = parts[i];
        at_least(b.real(key + "." + name, [field, member = member](T& c) -> double& { return field(c).*member; }, defaults.*member,
                        unit, docs[i].empty() ? doc + " (" + name + " operands)" : doc + ": " + docs[i]),
                 0);
        const size_t at = old_keys.find("{}");
        if (at != std::string::npos && parts[i].second != &PerPrecision::fp8)  // fp8 came after the old names
            b.rename(old_keys.substr(0, at) + name + old_keys.substr(at + 2), key + "." + name);
    }
}

}  // namespace archsim
