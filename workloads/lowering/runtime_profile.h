#pragma once
// A runtime profile: what a deployed runtime (TensorRT, PyTorch, XLA, a KPU compiler) does to an
// operator graph before it runs, as data (configs/runtimes/<name>.toml): which lowering passes it
// applies and which operators its epilogues take.
#include <algorithm>
#include <string>
#include <vector>

#include "sim/base/params.h"

namespace archsim {

/// One runtime's lowering choices; filled only by load_runtime(), already valid.
/// How a serving engine batches requests: a profile's `serving` section, under which an inference
/// job with a serving block runs (sim/serving; docs/serving.md).
struct ServingEngine {
    std::string policy = "continuous";             ///< continuous (iteration-level) | static
    std::string scheduler = "guaranteed_no_evict"; ///< guaranteed_no_evict (blocks reserved for the whole output) | max_utilization (blocks as tokens come, recompute preemption)
    int64_t max_batch = 2048;                      ///< sequences in flight at most
    int64_t max_num_tokens = 8192;                 ///< tokens per iteration at most; 0 = no budget
    int64_t kv_block_tokens = 64;                  ///< tokens per KV-cache block
    bool chunked_prefill = false;                  ///< prompts split to fill the token budget
    bool mixed_batches = true;                     ///< prefills and decodes in one iteration
    double kv_cache_fraction = 0.9;                ///< of the device memory left after the weights, for the KV cache
    double iteration_overhead_us = 0;              ///< the engine's own time per iteration, us
    std::string preemption = "recompute";          ///< recompute | swap (the KV to host memory and back)
    double swap_space_gib = 4.0;                   ///< host memory for swapped KV blocks per device, GiB
};

struct RuntimeProfile {
    std::string name;                          ///< the file's stem: "tensorrt", "none", ...
    std::string doc;                           ///< one line: which runtime and version it stands for
    std::string source;                        ///< the file it was read from
    bool keep_graph = false;                   ///< run the graph as imported (machines keep their own epilogue rule)
    bool epilogues = false;                    ///< contractions take their elementwise consumers
    std::string epilogue_ops_text;             ///< comma-separated op types an epilogue takes; "" = every elementwise one
    bool vector_regions = false;               ///< connected elementwise/reduction operators become one kernel
    std::string vector_separate_text;          ///< "A>B, ...": a B reading an A stays out of A's vector kernel
    bool layouts = false;                      ///< transposes feeding contractions fold into their operand layout
    bool attention = false;                    ///< attention blocks become one fused kernel (FlashAttention)
    bool activations = false;                  ///< decomposed activations (SiLU, GELU, ...) become one kernel each
    bool projections = false;                  ///< projections of one input (Q, K, V) merge into one GEMM
    std::string library_ops_text;              ///< comma-separated op types the fast library runs in its blocked layout
    bool conversions = false;                  ///< layout conversions around the library's kernels
    std::string library_entry_ops_text;        ///< comma-separated op types that start a library-layout region
    std::string reference_ops_text;            ///< comma-separated op types run by the framework's scalar kernel off the library
    std::string blas_ops_text;                 ///< comma-separated op types the runtime sends to the system BLAS
    int64_t blas_threads = 0;                  ///< threads the BLAS runs on; 0 = every core
    int64_t blas_conv_max_input_elems = 0;     ///< small batch-1 convolutions run as im2col + BLAS GEMM; 0 = none
    std::string blas_precisions_text;          ///< comma-separated precisions at which blas.ops go there; "" = all
    std::vector<std::string> epilogue_ops;     ///< epilogue_ops_text split
    std::vector<std::string> library_ops;      ///< library_ops_text split
    std::vector<std::string> blas_ops;         ///< blas_ops_text split
    std::vector<std::string> library_entry_ops;///< library_entry_ops_text split
    std::vector<std::string> reference_ops;    ///< reference_ops_text split
    std::vector<std::string> blas_precisions;  ///< blas_precisions_text split
    /// vector_separate_text split: (producer op type, consumer op type) pairs.
    std::vector<std::pair<std::string, std::string>> vector_separate;
    /// The machine kind `device_sets` belong to ("gpu"); a machine of another kind runs without them.
    std::string device_kind;
    /// Machine config keys this software stack changes on a machine of `device_kind`, as KEY=VALUE
    /// assignments applied before the user's --set (a library's measured GEMM efficiency):
    /// device.sets split at commas.
    std::vector<std::string> device_sets;
    std::string device_sets_text;              ///< device.sets as written
    ServingEngine serving;                     ///< the serving section

    /// Whether blas.ops go to the BLAS in a run at `precision` ("fp32", ...).
    bool blas_at(const std::string& precision) const {
        return (!blas_ops.empty() || blas_conv_max_input_elems > 0) &&
               (blas_precisions.empty() || std::find(blas_precisions.begin(), blas_precisions.end(), precision) != blas_precisions.end());
    }

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
