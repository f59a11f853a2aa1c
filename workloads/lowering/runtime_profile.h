#pragma once
// A runtime profile: what a deployed runtime (TensorRT, PyTorch, XLA, a KPU compiler) does to an
// operator graph before it runs, as data (configs/runtimes/<name>.toml): which lowering passes it
// applies and which operators its epilogues take.
#include <string>
#include <vector>

#include "sim/config/params.h"

namespace archsim {

/// One runtime's lowering choices; filled only by load_runtime(), already valid.
struct RuntimeProfile {
    std::string name;                          ///< the file's stem: "tensorrt", "none", ...
    std::string doc;                           ///< one line: which runtime and version it stands for
    std::string source;                        ///< the file it was read from
    bool keep_graph = false;                   ///< run the graph as imported (machines keep their own epilogue rule)
    bool epilogues = false;                    ///< contractions take their elementwise consumers
    std::string epilogue_ops_text;             ///< comma-separated op types an epilogue takes; "" = every elementwise one
    bool vector_regions = false;               ///< connected elementwise/reduction operators become one kernel
    bool layouts = false;                      ///< transposes feeding contractions fold into their operand layout
    bool attention = false;                    ///< attention blocks become one fused kernel (FlashAttention)
    bool activations = false;                  ///< decomposed activations (SiLU, GELU, ...) become one kernel each
    bool projections = false;                  ///< projections of one input (Q, K, V) merge into one GEMM
    std::string library_ops_text;              ///< comma-separated op types the fast library runs in its blocked layout
    bool conversions = false;                  ///< layout conversions around the library's kernels
    std::vector<std::string> epilogue_ops;     ///< epilogue_ops_text split
    std::vector<std::string> library_ops;      ///< library_ops_text split

    /// True when the graph runs as imported and machines keep their own epilogue rules
    /// (`fusion.elementwise`): the `none` runtime. Any other profile, even one with no pass on,
    /// runs its kernels exactly as lowered.
    bool literal() const { return keep_graph; }
};

/// The declared keys of a runtime profile file.
const ParamBinder<RuntimeProfile>& runtime_params();

/// Loads runtime `name_or_file`: a path ending in .toml, or a name looked up as
/// `<runtimes_dir>/<name>.toml`. Throws UserError naming the runtime and the known ones when
/// there is no such file, and the file and key for a bad key or value.
RuntimeProfile load_runtime(const std::string& name_or_file, const std::string& runtimes_dir);

/// The names of the profiles in `runtimes_dir`, sorted.
std::vector<std::string> runtime_names(const std::string& runtimes_dir);

}  // namespace archsim
