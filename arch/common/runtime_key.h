#pragma once
// The `runtime` key every machine kind declares: the runtime profile (configs/runtimes/) whose
// lowering the engine applies to the graph before this machine runs it, unless `--runtime`
// overrides it.
#include <string>

#include "sim/base/params.h"

namespace archsim {

/// Declares `runtime` on `b` with default `def` (a profile name or a .toml path); `why` says why
/// that runtime is the kind's default.
template <class T>
void declare_runtime_key(ParamBinder<T>& b, const std::string& def, const std::string& why) {
    b.unbound_string("runtime", def,
                     "Runtime profile (configs/runtimes/<name>.toml or a .toml path) that lowers the graph into the kernels this "
                     "machine runs; none = the graph as imported. Default: " + why);
}

}  // namespace archsim
