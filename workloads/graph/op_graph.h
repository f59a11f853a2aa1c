#pragma once
// The operator graph every machine model maps: operators as vertices, tensors as edges.
// Built by the ONNX importer or the SCALE-Sim topology reader; read-only afterwards.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace archsim {

/// What a tensor is to the workload: a value computed at run time, a trained parameter, a
/// constant (folded shape data, masks), or a model input.
enum class TensorRole : uint8_t { Activation, Weight, Constant, Input };

/// One tensor: static shape, element size, role.
struct Tensor {
    std::string name;
    std::vector<int64_t> shape;   ///< static dims; rank 0 = scalar
    int32_t onnx_dtype = 1;       ///< onnx::TensorProto_DataType value (1 = FLOAT)
    int64_t elem_bytes = 4;       ///< bytes per element in the model's own dtype
    TensorRole role = TensorRole::Activation;
    /// A constant causal attention mask (workloads/onnx/causal_mask.h): an attention block that
    /// applies it is causal, and a fused kernel skips the masked score blocks.
    bool causal_mask = false;
    /// Stored in its own dtype whatever the run's operand precision: the fp32 master weights and
    /// moments a mixed-precision optimizer keeps (workloads/training/training_step.h).
    bool keeps_dtype = false;
    /// One of the model's declared outputs (the ONNX graph's outputs): a training step's loss
    /// reads one, not an unconsumed side output such as an LSTM's final state.
    bool model_output = false;

    /// Product of the dims (1 for a scalar).
    int64_t elems() const;
    /// elems() * elem_bytes.
    int64_t bytes() const { return elems() * elem_bytes; }
    /// Bytes in a run whose float operands take `float_bytes` each: a float tensor that does not
    /// keep its dtype takes elems() * float_bytes; integer, bool and keeps_dtype tensors bytes().
    int64_t bytes_at(int64_t float_bytes) const { return is_float() && !keeps_dtype ? elems() * float_bytes : bytes(); }
    /// A floating-point tensor (ONNX FLOAT, FLOAT16, DOUBLE, BFLOAT16).
    bool is_float() const { return onnx_dtype == 1 || onnx_dtype == 10 || onnx_dtype == 11 || onnx_dtype == 16; }
};

/// How an operator uses a machine: a contraction maps to a MAC array; the others run on a
/// vector unit or move data; shape-only operators are views and cost nothing.
enum class OpClass : uint8_t {
    Contraction,   ///< Conv, ConvTranspose, Gemm, MatMul, LSTM/GRU gate matmuls
    Elementwise,   ///< Add, Relu, Sigmoid, Erf, ... (one pass over the output)
    Reduction,     ///< ReduceMean, Softmax, GlobalAveragePool, normalizations
    Pooling,       ///< MaxPool/AveragePool: a window per output element
    DataMovement,  ///< Transpose, Concat, Slice, Gather, Split, Pad: a copy
    ShapeOnly,     ///< Reshape, Flatten, Squeeze, Identity: a view, no data moves
    Unsupported    ///< imported with --allow-unsupported: zero cost, listed in reports
};

/// Name of an OpClass ("contraction", "elementwise", ...).
const char* to_string(OpClass c);

/// archsim's own ONNX operator domain: SequenceGather and SequenceScatter, the points where
/// sequence parallelism gathers a tensor's tokens from the tensor-parallel ranks or scatters
/// them back (views on one device; the llm generator writes them, op_handlers_more.cpp prices them).
inline constexpr const char* kArchsimDomain = "archsim";

/// One operand of a GEMM view: where it is read from and how.
struct GemmOperand {
    /// Index into OpGraph::tensors(); -1 when the operand is not in memory (an on-chip value such
    /// as the recurrent hidden state of an LSTM/GRU step).
    int32_t tensor = -1;
    /// True when a direct kernel reads the operand where it lies instead of a packed or im2col
    /// copy (a convolution's input: implicit im2col maps the kh x kw taps onto the input's lines).
    bool in_place = false;
};

/// The GEMM view of a contraction: `repeat` x `batch` x `groups` independent products of an
/// (m x k) by (k x n) matrix. `repeat` > 1 marks steps that must run one after another (the
/// recurrent matmuls of an LSTM/GRU); `batch` and `groups` are independent.
/// For a convolution (im2col): m = N*Ho*Wo, n = Cout/groups, k = Cin/groups*kh*kw.
struct GemmView {
    int64_t repeat = 1;
    int64_t batch = 1;
    int64_t groups = 1;
    int64_t m = 0, n = 0, k = 0;
    /// Distinct A-operand (ifmap) elements per group and batch entry: for a convolution the
    /// ifmap, smaller than the im2col matrix m*k; for a plain GEMM m*k.
    int64_t a_unique_elems = 0;
    /// The share of the m x k A matrix that is distinct data (a_unique_elems / (m k), at most 1;
    /// 1 when not given): what a machine loads of an A panel it reads.
    double a_unique_ratio() const {
        return a_unique_elems > 0 ? std::min(1.0, static_cast<double>(a_unique_elems) / (static_cast<double>(m) * static_cast<double>(k))) : 1.0;
    }
    /// True when B is a trained weight (filter), false when both operands are activations
    /// (attention score and context matmuls).
    bool b_is_weight = true;
    /// The operand tensors, set by the operator handlers: A (m x k), B (k x n) and the output C
    /// (m x n). Machines read these, never the operator's input positions or its op_type.
    GemmOperand a, b, c;

    /// repeat * batch * groups * m * n * k.
    int64_t macs() const { return repeat * batch * groups * m * n * k; }
};

/// A fused attention kernel: O = softmax(Q K^T, scaled and masked) V for `batch` independent
/// (query, key/value) sets (batch x heads), the score matrix never stored (FlashAttention). Q is
/// q_len x head_dim, K kv_len x head_dim, V kv_len x v_dim, O q_len x v_dim.
struct AttentionView {
    int64_t batch = 0;
    int64_t q_len = 0, kv_len = 0, head_dim = 0, v_dim = 0;
    GemmOperand q, k, v, out;
    /// Vector operations per score element (scale, mask, the softmax's max, exp, sum and rescale).
    double ops_per_score = 0;
    /// Query i sees only key positions j <= i + (kv_len - q_len) (a causal mask in the block).
    bool causal = false;
    /// The block's backward in a training step (FlashAttention-2's backward, Dao 2023, algorithm
    /// 2): from Q, K, V, O and the output's gradient `d_out` it recomputes S = Q K^T and P, and
    /// computes dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dO O)), dQ = dS K and dK = dS^T Q,
    /// writing `dq`, `dk` and `dv`: OpCost::gemms holds those five products in that order (the
    /// score-sized operands on chip), `ops_per_score` the softmax recomputation and the
    /// elementwise gradients per score. The forward kernel's softmax statistics (one value per
    /// query row) are its only saved state besides Q, K, V and O.
    bool backward = false;
    GemmOperand d_out, dq, dk, dv;
};

/// Cost of one operator, independent of any machine.
struct OpCost {
    OpClass cls = OpClass::Elementwise;
    int64_t macs = 0;           ///< multiply-accumulates of the contractions (1 MAC = 2 FLOPs)
    int64_t flops = 0;          ///< 2*macs plus the other arithmetic (bias, activation, ...)
    int64_t bytes_read = 0;     ///< every input tensor once, model dtype
    int64_t bytes_written = 0;  ///< every output tensor once, model dtype
    int64_t params = 0;         ///< elements of the Weight-role inputs
    std::vector<GemmView> gemms;  ///< contractions only (a fused attention kernel: Q K^T and P V)
    std::vector<AttentionView> attention;  ///< a fused attention kernel; empty otherwise
    /// Elements each input (parallel to Operator::inputs) supplies when that is less than the
    /// whole tensor: a Gather's table gives only the rows it looks up. Empty, or -1 for an
    /// input: the whole tensor. bytes_read already counts only these.
    std::vector<int64_t> read_elems;

    /// flops / (bytes_read + bytes_written), 0 when nothing moves.
    double arithmetic_intensity() const;
    /// Whether tensor `t` is the A or B operand of one of the GEMM views.
    bool is_gemm_operand(int32_t t) const;
    /// The arithmetic beyond the contractions' 2 FLOPs per MAC (a fused kernel's epilogue, an
    /// attention kernel's scale, mask and softmax): max(0, flops - 2 macs) operations.
    int64_t non_mac_flops() const { return flops > 2 * macs ? flops - 2 * macs : 0; }
};

/// The code a runtime runs a kernel with, where it is not the machine's own fast path.
enum class KernelPath : uint8_t {
    Machine,    ///< the machine's fast library (oneDNN on the CPU) or its own kernels
    /// The system BLAS (PyTorch's fp32 aten::mm / addmm -> sgemm): a GotoBLAS-style driver that
    /// packs both operands, weights included, at every call (Goto and van de Geijn, ACM TOMS
    /// 34(3), 2008)
    Blas,
    /// The framework's scalar reference kernel (ATen's max_pool2d_with_indices on NCHW tensors):
    /// one operation per cost.flops at a measured cost per operation, no SIMD
    Reference,
};

/// The part of a training step an operator belongs to: a framework runs the setup, then the
/// forward pass, the loss, the backward pass (recomputing forward operators inside it when asked)
/// and the optimizer after the whole backward. Inference graphs are all Forward.
enum class TrainingPhase : uint8_t { Setup, Forward, Loss, Backward, Recompute, Optimizer };

/// The fusion stage of a phase: operators of different stages never share a kernel (runtime
/// lowering, a machine's epilogue fusion); a recomputation runs inside the backward pass.
/// Forward 0, loss 1, backward and recompute 2, optimizer 3, setup 4.
constexpr uint8_t fusion_stage(TrainingPhase p) {
    switch (p) {
        case TrainingPhase::Forward: return 0;
        case TrainingPhase::Loss: return 1;
        case TrainingPhase::Backward:
        case TrainingPhase::Recompute: return 2;
        case TrainingPhase::Optimizer: return 3;
        case TrainingPhase::Setup: return 4;
    }
    return 0;
}

/// One operator (an ONNX node that survived constant folding).
struct Operator {
    std::string name;
    std::string op_type;
    std::string domain;          ///< "" = ai.onnx
    int64_t opset = 0;
    std::vector<int32_t> inputs;   ///< tensor indices; -1 for an omitted optional input
    std::vector<int32_t> outputs;  ///< tensor indices
    OpCost cost;
    /// A kernel of an execution plan (workloads/lowering): the names of the source-graph operators
    /// it runs, in topological order; empty for an operator of a graph as imported.
    std::vector<std::string> members;
    /// Which code runs the kernel (workloads/lowering, a runtime's choice). The CPU model prices
    /// the paths; the other machines (GPU, TPU, KPU) and the roofline bound ignore it and `threads`.
    KernelPath path = KernelPath::Machine;
    /// Threads the kernel runs on (a BLAS run with OPENBLAS_NUM_THREADS=1: 1); 0 = every core.
    int32_t threads = 0;
    /// The part of a training step the operator belongs to: set by workloads/training/training_step.h;
    /// Forward throughout an inference graph; a lowered kernel takes its first member's.
    TrainingPhase phase = TrainingPhase::Forward;
};

struct OpGraphTopology;  // Boost.Graph adjacency list, kept out of this header

/// The operator graph: tensors, operators, and their dependency structure (a Boost.Graph
/// adjacency list with operators as vertices and tensors as edges). Construction checks that
/// the graph is acyclic and computes a topological order.
class OpGraph {
public:
    /// Builds the graph; throws UserError(source, ...) naming an operator on a cycle, or a
    /// tensor consumed but never produced (and not an input, weight or constant).
    OpGraph(std::string model_name, std::string source, std::vector<Tensor> tensors, std::vector<Operator> ops);
    /// The same for an execution plan: `runtime` names the runtime whose passes grouped `ops`
    /// into kernels (machines then run each kernel as it is and fuse nothing more).
    OpGraph(std::string model_name, std::string source, std::vector<Tensor> tensors, std::vector<Operator> ops,
            std::string runtime);
    ~OpGraph();
    OpGraph(OpGraph&&) noexcept;
    OpGraph& operator=(OpGraph&&) noexcept;

    const std::string& model_name() const { return m_model_name; }
    const std::string& source() const { return m_source; }
    /// The runtime whose lowering made these operators kernels; "" for a graph as imported (or the
    /// `none` runtime), on which machines apply their own epilogue fusion rules.
    const std::string& runtime() const { return m_runtime; }
    const std::vector<Tensor>& tensors() const { return m_tensors; }
    const std::vector<Operator>& ops() const { return m_ops; }
    /// Operator indices in a dependency-respecting order (stable: file order where free).
    const std::vector<int32_t>& topo_order() const { return m_topo; }
    /// Indices of the operators that produce an input of `op` (graph edges into the vertex).
    std::vector<int32_t> predecessors(int32_t op) const;
    /// The operator that produces `tensor`, or -1 (an input, weight or constant).
    int32_t producer(int32_t tensor) const { return m_producer[static_cast<size_t>(tensor)]; }
    /// How many operator inputs read `tensor` (0 for a model output nothing consumes).
    int32_t consumer_count(int32_t tensor) const { return m_consumers[static_cast<size_t>(tensor)]; }
    /// Number of tensor edges (producer -> consumer pairs) in the graph.
    size_t edge_count() const;

    /// Sum of a cost field over all operators.
    int64_t total_macs() const;
    int64_t total_flops() const;
    /// Elements of all Weight-role tensors (each counted once).
    int64_t total_params() const;

private:
    std::string m_model_name;
    std::string m_source;
    std::string m_runtime;
    std::vector<Tensor> m_tensors;
    std::vector<Operator> m_ops;
    std::vector<int32_t> m_topo;
    std::vector<int32_t> m_producer;   ///< by tensor
    std::vector<int32_t> m_consumers;  ///< by tensor
    std::unique_ptr<OpGraphTopology> m_topology;
};

/// Formats a shape as "1x3x224x224" ("scalar" for rank 0).
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace archsim
