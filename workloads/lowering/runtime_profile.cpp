#include "workloads/lowering/runtime_profile.h"

#include <algorithm>
#include <filesystem>

#include "sim/base/precision.h"
#include "sim/base/error.h"

namespace archsim {

namespace fs = std::filesystem;

const ParamBinder<RuntimeProfile>& runtime_params() {
    static const ParamBinder<RuntimeProfile> b = [] {
        ParamBinder<RuntimeProfile> b;
        using R = RuntimeProfile;
        b.string("doc", [](R& r) -> std::string& { return r.doc; }, "", {}, "One line: the runtime and version the profile stands for");
        b.boolean("keep_graph", [](R& r) -> bool& { return r.keep_graph; }, false,
                  "Run the graph as imported, each operator its own kernel, the machine's own epilogue rule "
                  "(fusion.elementwise) deciding what fuses; false: the kernels are exactly what the passes below make");
        b.boolean("passes.epilogues", [](R& r) -> bool& { return r.epilogues; }, false,
                  "A contraction takes the elementwise operators consuming its output into its epilogue");
        b.string("passes.epilogue_ops", [](R& r) -> std::string& { return r.epilogue_ops_text; }, "", {},
                 "Comma-separated op types an epilogue takes (oneDNN post-ops, cuDNN/TensorRT epilogues); empty = every "
                 "elementwise operator");
        b.boolean("passes.vector_regions", [](R& r) -> bool& { return r.vector_regions; }, false,
                  "Connected elementwise and reduction operators run as one kernel (loop and input fusion)");
        b.string("passes.vector_separate", [](R& r) -> std::string& { return r.vector_separate_text; }, "", {},
                 "Comma-separated PRODUCER>CONSUMER op-type pairs the vector-region pass does not join: a consumer of that "
                 "type reading a producer of that type starts a kernel of its own (a framework module run apart, such as "
                 "Megatron-LM's attention dropout after its fused softmax: \"Softmax>Dropout\")");
        b.boolean("passes.attention", [](R& r) -> bool& { return r.attention; }, false,
                  "Q K^T, scale, mask, softmax and P V run as one fused attention kernel whose scores never leave the chip "
                  "(FlashAttention); a machine without a fused-attention model refuses such a kernel");
        b.boolean("passes.projections", [](R& r) -> bool& { return r.projections; }, false,
                  "Contractions of one input with different weights and the same shape (Q, K and V projections; a "
                  "SwiGLU's gate and up) run as one GEMM over the concatenated weights (horizontal fusion)");
        b.boolean("passes.activations", [](R& r) -> bool& { return r.activations; }, false,
                  "Elementwise operators computing a unary function of one tensor (SiLU as x * sigmoid(x), GELU's erf "
                  "and tanh forms, HardSwish) run as one kernel: the framework's native activation");
        b.boolean("passes.layouts", [](R& r) -> bool& { return r.layouts; }, false,
                  "Transpose, Slice, Split and Expand feeding a GEMM operand, or an elementwise or reduction kernel, are "
                  "read in place by that kernel (other strides or an offset): no copy kernel, no extra bytes");
        b.string("library.ops", [](R& r) -> std::string& { return r.library_ops_text; }, "", {},
                 "Comma-separated op types the runtime's fast library runs on tensors in its own blocked layout "
                 "(PyTorch's oneDNN path: nChw16c); a kernel is the library's when all its computing operators are");
        b.boolean("library.conversions", [](R& r) -> bool& { return r.conversions; }, false,
                  "Copy every activation that crosses between a library kernel and any other kernel into the other "
                  "layout (PyTorch's to_mkldnn / to_dense), one Reorder kernel per tensor and direction");
        b.string("library.entry_ops", [](R& r) -> std::string& { return r.library_entry_ops_text; }, "", {},
                 "Comma-separated op types that start a region of the library's layout; a kernel of another library.ops "
                 "type runs in the library only when every activation it reads is in that layout already (PyTorch's "
                 "frozen graph: MKLDNN groups start at a convolution and grow into its consumers); empty = every "
                 "library.ops kernel is the library's wherever it is");
        b.string("reference.ops", [](R& r) -> std::string& { return r.reference_ops_text; }, "", {},
                 "Comma-separated op types that, when not the library's, run the framework's scalar reference kernel "
                 "(ATen's max_pool2d_with_indices on NCHW tensors), at core.reference_cycles_per_op per operation");
        b.string("blas.ops", [](R& r) -> std::string& { return r.blas_ops_text; }, "", {},
                 "Comma-separated op types the runtime hands to the system BLAS instead of its fast library (PyTorch's "
                 "Linear: aten::mm / addmm -> sgemm); a kernel goes there when its contraction is of a listed type and "
                 "it is not a library kernel. The BLAS packs its weight operand at every call");
        at_most(at_least(b.integer("blas.threads", [](R& r) -> int64_t& { return r.blas_threads; }, 0, "threads",
                                   "Threads the BLAS runs on (OPENBLAS_NUM_THREADS; tools/torch_latency.py runs with 1 so "
                                   "that OpenBLAS's threads do not fight PyTorch's); 0 = every core"),
                         0),
                1024);
        b.string("device.kind", [](R& r) -> std::string& { return r.device_kind; }, "", {},
                 "The machine kind device.sets belong to (gpu, cpu, tpu, kpu); a machine of another kind runs without them");
        b.string("device.sets", [](R& r) -> std::string& { return r.device_sets_text; }, "", {},
                 "Comma-separated KEY=VALUE machine config keys this software stack changes on a device.kind machine, "
                 "applied before the user's --set (a GEMM library's measured main-loop efficiency: "
                 "sm.mma_efficiency=0.7536); each must be a key of that kind");
        at_least(b.integer("blas.conv_max_input_elems", [](R& r) -> int64_t& { return r.blas_conv_max_input_elems; }, 0,
                           "elements",
                           "A batch-1, ungrouped convolution whose kernel is not larger than 3 in both dims and whose input "
                           "has at most this many elements runs as im2col + BLAS GEMM instead of in the fast library "
                           "(PyTorch 1.13 eager: 20480, ConvParams::use_mkldnn in aten/src/ATen/native/Convolution.cpp); "
                           "0 = none"),
                 0);
        b.string("blas.precisions", [](R& r) -> std::string& { return r.blas_precisions_text; }, "", {},
                 "Comma-separated run precisions (fp32, bf16, fp16, int8) at which blas.ops go to the BLAS; empty = every "
                 "precision (PyTorch 1.13 sends fp32 matmuls to the BLAS and bf16 ones to oneDNN)");
        // the serving engine (an inference job with a serving block: docs/serving.md); the defaults
        // are TensorRT-LLM's (configs/runtimes/tensorrt-llm.toml cites them)
        b.string("serving.policy", [](R& r) -> std::string& { return r.serving.policy; }, "continuous", {"continuous", "static"},
                 "How requests are batched: continuous (iteration-level: a request joins or leaves the batch at any "
                 "iteration, as Orca, vLLM and TensorRT-LLM's in-flight batching do) or static (a batch runs to its last token)");
        b.string("serving.scheduler", [](R& r) -> std::string& { return r.serving.scheduler; }, "guaranteed_no_evict",
                 {"guaranteed_no_evict", "max_utilization"},
                 "guaranteed_no_evict: a request is admitted only when KV blocks for its prompt and whole output are free and "
                 "is never preempted; max_utilization: blocks are taken as tokens come and the newest request is preempted "
                 "(its KV dropped and recomputed) when none is left, as vLLM does");
        at_least(b.integer("serving.max_batch", [](R& r) -> int64_t& { return r.serving.max_batch; }, 2048, "sequences",
                           "Sequences in flight at most (TensorRT-LLM max_batch_size: 2048 since 0.14, its release notes; vLLM "
                           "max_num_seqs)"), 1);
        at_least(b.integer("serving.max_num_tokens", [](R& r) -> int64_t& { return r.serving.max_num_tokens; }, 8192, "tokens",
                           "Tokens one iteration runs at most: prefill tokens plus one per decoding sequence (TensorRT-LLM "
                           "max_num_tokens: 8192 since 0.11, its release notes; vLLM max_num_batched_tokens); 0 = no budget"), 0);
        at_least(b.integer("serving.kv_block_tokens", [](R& r) -> int64_t& { return r.serving.kv_block_tokens; }, 64, "tokens",
                           "Tokens per KV-cache block (TensorRT-LLM tokens_per_block, vLLM block_size)"), 1);
        b.boolean("serving.chunked_prefill", [](R& r) -> bool& { return r.serving.chunked_prefill; }, false,
                  "A prompt may be split over iterations to fill the token budget (Sarathi-Serve; TensorRT-LLM chunked context)");
        b.boolean("serving.mixed_batches", [](R& r) -> bool& { return r.serving.mixed_batches; }, true,
                  "Prefills and decodes share an iteration (TensorRT-LLM in-flight batching); false: an iteration with a "
                  "prefill runs no decode (vLLM's scheduler without chunked prefill)");
        at_most(above(b.real("serving.kv_cache_fraction", [](R& r) -> double& { return r.serving.kv_cache_fraction; }, 0.9, "1",
                             "Share of the device memory left after the weights that the KV cache takes (TensorRT-LLM "
                             "free_gpu_memory_fraction; vLLM's gpu_memory_utilization is of the whole memory)"),
                        0),
                1);
        at_least(b.real("serving.iteration_overhead_us", [](R& r) -> double& { return r.serving.iteration_overhead_us; }, 0.0, "us",
                        "The engine's own time per iteration beyond the device's kernels (scheduling, sampling, detokenizing); "
                        "0 = none"),
                 0);
        b.string("serving.preemption", [](R& r) -> std::string& { return r.serving.preemption; }, "recompute", {"recompute", "swap"},
                 "What a preempted request (max_utilization) loses: recompute (its KV dropped, its prompt and tokens "
                 "prefilled again) or swap (its KV blocks copied to host memory over the node's host link and back "
                 "before any new request is admitted; vLLM's preemption_mode)");
        at_least(b.real("serving.swap_space_gib", [](R& r) -> double& { return r.serving.swap_space_gib; }, 4.0, "GiB",
                        "Host memory per device for swapped KV blocks (vLLM swap_space: 4 GiB); a swap that does not fit "
                        "recomputes"),
                 0);
        return b;
    }();
    return b;
}

std::vector<std::string> runtime_names(const std::string& runtimes_dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(runtimes_dir, ec))
        if (e.path().extension() == ".toml") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

namespace {

/// "A, B ,C" -> {"A", "B", "C"}: a comma-separated list with the blanks around items dropped.
std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    for (size_t at = 0; at < text.size();) {
        size_t end = text.find(',', at);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(at, end - at);
        item.erase(0, item.find_first_not_of(' '));
        item.erase(item.find_last_not_of(' ') + 1);
        if (!item.empty()) out.push_back(item);
        at = end + 1;
    }
    return out;
}

}  // namespace

RuntimeProfile load_runtime(const std::string& name_or_file, const std::string& runtimes_dir) {
    const bool is_file = fs::path(name_or_file).extension() == ".toml";
    const std::string file = is_file ? name_or_file : (fs::path(runtimes_dir) / (name_or_file + ".toml")).string();
    if (!fs::is_regular_file(file)) {
        std::string known;
        for (const auto& n : runtime_names(runtimes_dir)) known += (known.empty() ? "" : ", ") + n;
        throw UserError("runtime " + name_or_file, is_file ? "no such file" : "unknown runtime (known: " + known + ")");
    }
    ParamSet p(runtime_params().schema());
    p.load_toml_file(file);
    RuntimeProfile r = runtime_params().build(p);
    r.name = fs::path(file).stem().string();
    r.source = file;
    r.epilogue_ops = split_list(r.epilogue_ops_text);
    r.library_ops = split_list(r.library_ops_text);
    r.blas_ops = split_list(r.blas_ops_text);
    r.library_entry_ops = split_list(r.library_entry_ops_text);
    r.reference_ops = split_list(r.reference_ops_text);
    r.blas_precisions = split_list(r.blas_precisions_text);
    for (const auto& pair : split_list(r.vector_separate_text)) {
        const auto gt = pair.find('>');
        if (gt == std::string::npos || gt == 0 || gt + 1 == pair.size())
            throw UserError(file, "passes.vector_separate: '" + pair + "' is not PRODUCER>CONSUMER (two op types)");
        r.vector_separate.push_back({pair.substr(0, gt), pair.substr(gt + 1)});
    }
    r.device_sets = split_list(r.device_sets_text);
    for (const auto& a : r.device_sets)
        if (a.find('=') == std::string::npos || a.front() == '=')
            throw UserError(file, "device.sets: '" + a + "' is not KEY=VALUE");
    if (!r.device_sets.empty() && r.device_kind.empty())
        throw UserError(file, "device.sets: give device.kind, the machine kind the keys belong to");
    for (const auto& p : r.blas_precisions) parse_precision(p, file + ": blas.precisions");
    return r;
}

}  // namespace archsim
