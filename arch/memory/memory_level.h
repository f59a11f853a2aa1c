#pragma once
// A memory level as the analytical models describe it: how fast it moves bytes and what a byte
// costs. Declared by one function, so every kind names the keys the same way.
#include <functional>
#include <string>

#include "sim/base/params.h"

namespace archsim {

/// Bandwidth and access energy of one level of the memory hierarchy.
struct MemoryLevel {
    double bandwidth_gbps = 0;  ///< sustained bandwidth, GB/s (1e9 B/s); 0 = the level is not modeled
    double pj_per_byte = 0;     ///< access energy, read or write, pJ/byte
};

/// Declares `<name>.bandwidth_gbps` and `<name>.pj_per_byte` on `b`, bound to the MemoryLevel
/// that `level` selects in T. `what` names the level in the docs, `source` cites the defaults;
/// with `optional`, a bandwidth of 0 leaves the level out.
template <class T>
void declare_memory_level(ParamBinder<T>& b, const std::string& name, std::function<MemoryLevel&(T&)> level,
                          const MemoryLevel& defaults, const std::string& what, const std::string& source, bool optional) {
    auto& bw = b.real(name + ".bandwidth_gbps", [level](T& c) -> double& { return level(c).bandwidth_gbps; },
                      defaults.bandwidth_gbps, "GB/s",
                      "Sustained bandwidth of " + what + (optional ? "; 0 = not modeled" : "") + " (default: " + source + ")");
    if (optional) at_least(bw, 0);
    else above(bw, 0);
    at_least(b.real(name + ".pj_per_byte", [level](T& c) -> double& { return level(c).pj_per_byte; }, defaults.pj_per_byte,
                    "pJ/byte", "Access energy of " + what + ", read or write (default: " + source + ")"),
             0);
}

}  // namespace archsim
