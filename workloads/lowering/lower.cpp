#include "workloads/lowering/lower.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "workloads/lowering/fusion_passes.h"
#include "workloads/lowering/layout_conversions.h"

namespace archsim {

namespace {

/// A GEMM operand produced inside the kernel (a folded view or transpose) read where it really
/// lies: follow each member's first input back to a tensor from outside.
GemmOperand through_folds(const OpGraph& g, const FusionGroups& groups, int32_t group, GemmOperand x) {
    while (x.tensor >= 0) {
        const int32_t p = g.producer(x.tensor);
        if (p < 0 || groups.group_of(p) != group) break;
        const Operator& op = g.ops()[static_cast<size_t>(p)];
        if (op.inputs.empty() || op.inputs[0] < 0) break;
        x.tensor = op.inputs[0];
    }
    return x;
}

/// PyTorch's rule (1.13, aten/src/ATen/native/Convolution.cpp, ConvParams::use_mkldnn, run on more
/// than one thread) for a convolution it leaves to its native im2col + BLAS GEMM path
/// (thnn_conv2d) instead of oneDNN: batch 1, ungrouped, a kernel not larger than 3 in both dims
/// and an input of at most `max_input_elems` elements (20480 there).
bool native_conv(const OpGraph& g, const Operator& conv, int64_t max_input_elems) {
    if (max_input_elems <= 0 || conv.op_type != "Conv" || conv.inputs.size() < 2 || conv.inputs[0] < 0 || conv.inputs[1] < 0)
        return false;
    const Tensor& x = g.tensors()[static_cast<size_t>(conv.inputs[0])];
    const Tensor& w = g.tensors()[static_cast<size_t>(conv.inputs[1])];
    if (x.shape.size() != 4 || w.shape.size() != 4) return false;
    const int64_t groups = conv.cost.gemms.empty() ? 1 : conv.cost.gemms[0].groups;
    return x.shape[0] == 1 && groups == 1 && !(w.shape[2] > 3 && w.shape[3] > 3) && x.elems() <= max_input_elems;
}

/// Completes backward attention kernel `k` (group `grp`, its four gradient GEMMs `contractions`)
/// of the forward block `f` as FlashAttention-2's backward (AttentionView::backward): it reads Q,
/// K, V, the forward's output O and its gradient dO, recomputes S = Q K^T (its MACs and the
/// forward's softmax operations per score added: hardware FLOPs beyond the model's) and
/// rowsum(dO O) (2 operations per element of O), and writes dQ, dK and dV.
void attention_backward(const OpGraph& graph, const FusionGroups& groups, int32_t grp, AttentionView f,
                        const std::vector<int32_t>& contractions, Operator& k) {
    auto member_op = [&](int32_t m) -> const Operator& { return graph.ops()[static_cast<size_t>(m)]; };
    auto reads_forward = [&](int32_t m) {  // a GEMM with a score-sized operand made outside this kernel (P, saved)
        for (const GemmOperand& x : {member_op(m).cost.gemms.at(0).a, member_op(m).cost.gemms.at(0).b}) {
            const int32_t p = x.tensor >= 0 ? graph.producer(x.tensor) : -1;
            if (p >= 0 && groups.group_of(p) != grp && graph.tensors()[static_cast<size_t>(x.tensor)].elems() == f.batch * f.q_len * f.kv_len)
                return true;
        }
        return false;
    };
    auto key_of = [&](const GemmOperand& x) { return through_folds(graph, groups, grp, x).tensor; };
    AttentionView a = f;
    a.backward = true;
    for (int32_t m : contractions) {
        const GemmView& v = member_op(m).cost.gemms.at(0);
        const int32_t out = member_op(m).outputs.empty() ? -1 : member_op(m).outputs[0];
        const bool score_out = out >= 0 && graph.tensors()[static_cast<size_t>(out)].elems() == f.batch * f.q_len * f.kv_len;
        if (reads_forward(m)) {  // dV = P^T dO
            a.dv.tensor = out;
            a.d_out.tensor = graph.tensors()[static_cast<size_t>(v.a.tensor)].elems() == f.batch * f.q_len * f.kv_len ? key_of(v.b) : key_of(v.a);
        } else if (!score_out) {  // dS K or dS^T Q: which by the other operand
            const int32_t other = graph.tensors()[static_cast<size_t>(v.a.tensor)].elems() == f.batch * f.q_len * f.kv_len ? key_of(v.b) : key_of(v.a);
            (other == f.k.tensor ? a.dq : a.dk).tensor = out;
        }
    }
    if (std::find(k.inputs.begin(), k.inputs.end(), f.out.tensor) == k.inputs.end() && f.out.tensor >= 0) {
        k.inputs.push_back(f.out.tensor);  // O, for rowsum(dO O)
        if (!k.cost.read_elems.empty()) k.cost.read_elems.push_back(-1);
        k.cost.bytes_read += graph.tensors()[static_cast<size_t>(f.out.tensor)].bytes();
    }
    const int64_t scores = a.batch * a.q_len * a.kv_len;
    const int64_t recompute_macs = scores * a.head_dim;
    const int64_t dot = 2 * a.batch * a.q_len * a.v_dim;  // rowsum(dO O)
    k.cost.macs += recompute_macs;
    k.cost.flops += 2 * recompute_macs + static_cast<int64_t>(std::llround(f.ops_per_score * static_cast<double>(scores))) + dot;
    a.ops_per_score = scores > 0 ? static_cast<double>(k.cost.flops - 2 * k.cost.macs) / static_cast<double>(scores) : 0;
    GemmView g;
    g.batch = a.batch;
    g.b_is_weight = false;
    auto product = [&](int64_t m, int64_t n, int64_t kk, GemmOperand x, GemmOperand y, GemmOperand z) {
        GemmView v = g;
        v.m = m, v.n = n, v.k = kk, v.a = x, v.b = y, v.c = z;
        v.a_unique_elems = m * kk;
        return v;
    };
    const GemmOperand chip{};
    k.cost.gemms = {product(a.q_len, a.kv_len, a.head_dim, a.q, a.k, chip),        // S = Q K^T
                    product(a.kv_len, a.v_dim, a.q_len, chip, a.d_out, a.dv),      // dV = P^T dO
                    product(a.q_len, a.kv_len, a.v_dim, a.d_out, a.v, chip),       // dP = dO V^T
                    product(a.q_len, a.head_dim, a.kv_len, chip, a.k, a.dq),       // dQ = dS K
                    product(a.kv_len, a.head_dim, a.q_len, chip, a.q, a.dk)};      // dK = dS^T Q
    k.cost.attention = {a};
}

}  // namespace

OpGraph build_kernels(const OpGraph& graph, const FusionGroups& groups, const std::string& runtime,
                      std::vector<int32_t>* kernel_groups) {
    std::set<int32_t> seen;  ///< groups already made kernels
    std::vector<Operator> kernels;
    std::map<int32_t, KernelPattern> pattern;  ///< by group
    for (int32_t op : graph.topo_order())
        if (!pattern.count(groups.group_of(op))) pattern[groups.group_of(op)] = kernel_pattern(graph, groups.members(op));
    auto group_pattern = [&](int32_t op) -> const KernelPattern& { return pattern.at(groups.group_of(op)); };
    // a fused attention block's forward view (fuse_attention): Q K^T, then P V, its operands where they lie
    struct Forward {
        AttentionView a;
        GemmView qk, pv;
    };
    auto forward_view = [&](int32_t grp) {
        std::vector<int32_t> contractions;
        for (int32_t m : groups.members(grp))
            if (graph.ops()[static_cast<size_t>(m)].cost.cls == OpClass::Contraction) contractions.push_back(m);
        Forward f;
        f.qk = graph.ops()[static_cast<size_t>(contractions.at(0))].cost.gemms.at(0);
        f.pv = graph.ops()[static_cast<size_t>(contractions.at(1))].cost.gemms.at(0);
        AttentionView& a = f.a;
        a.batch = f.qk.repeat * f.qk.batch * f.qk.groups;
        a.q_len = f.qk.m, a.head_dim = f.qk.k, a.kv_len = f.qk.n, a.v_dim = f.pv.n;
        a.q = through_folds(graph, groups, grp, f.qk.a);
        a.k = through_folds(graph, groups, grp, f.qk.b);
        a.v = through_folds(graph, groups, grp, f.pv.b);
        a.out = f.pv.c;
        int64_t other_ops = 0;  // the softmax's, scale's, mask's and dropout's
        for (int32_t m : groups.members(grp)) {
            const Operator& o = graph.ops()[static_cast<size_t>(m)];
            other_ops += o.cost.flops - 2 * o.cost.macs;
            for (int32_t t : o.inputs) a.causal = a.causal || (t >= 0 && graph.tensors()[static_cast<size_t>(t)].causal_mask);
        }
        const double score_elems = static_cast<double>(a.batch * a.q_len * a.kv_len);
        a.ops_per_score = score_elems > 0 ? static_cast<double>(other_ops) / score_elems : 0;
        return f;
    };
    for (int32_t op : graph.topo_order()) {
        const int32_t grp = groups.group_of(op);
        if (!seen.insert(grp).second) continue;
        if (kernel_groups) kernel_groups->push_back(grp);
        const std::vector<int32_t> members = groups.members(op);
        const bool forward_attention = group_pattern(op).kind == KernelKind::Attention,
                   backward_attention = group_pattern(op).kind == KernelKind::AttentionGrad;
        // a tensor the forward attention kernel keeps on chip and its backward kernel recomputes
        // (the scores, the probabilities, the dropout mask): neither writes nor reads it
        auto recomputed = [&](int32_t t) {
            const int32_t p = t >= 0 ? graph.producer(t) : -1;
            if (p < 0 || group_pattern(p).kind != KernelKind::Attention || graph.consumer_count(t) == 0) return false;
            for (int32_t c : groups.consumers(t))
                if (groups.group_of(c) != groups.group_of(p) && group_pattern(c).kind != KernelKind::AttentionGrad) return false;
            return true;
        };
        int32_t forward_group = -1;  // a backward attention kernel's forward
        Operator k;
        for (int32_t m : members) k.members.push_back(graph.ops()[static_cast<size_t>(m)].name);
        // named after its contraction, else its first operator that computes (not a folded view)
        int32_t anchor = members.front(), contraction = -1;
        for (int32_t m : members)
            if (!is_layout_view(graph.ops()[static_cast<size_t>(m)])) {
                anchor = m;
                break;
            }
        std::vector<int32_t> contractions;
        for (int32_t m : members)
            if (graph.ops()[static_cast<size_t>(m)].cost.cls == OpClass::Contraction) {
                if (contraction < 0) anchor = contraction = m;
                contractions.push_back(m);
            }
        const Operator& a = graph.ops()[static_cast<size_t>(anchor)];
        k.name = a.name;
        k.phase = a.phase;
        k.domain = a.domain;
        k.opset = a.opset;
        k.op_type = group_pattern(op).name;
        auto inside = [&](int32_t t) { return t >= 0 && graph.producer(t) >= 0 && groups.group_of(graph.producer(t)) == grp; };
        for (int32_t m : members) {
            const Operator& o = graph.ops()[static_cast<size_t>(m)];
            for (int32_t t : o.inputs) {
                if (t < 0 || inside(t) || std::find(k.inputs.begin(), k.inputs.end(), t) != k.inputs.end()) continue;
                if (backward_attention && recomputed(t)) {
                    forward_group = groups.group_of(graph.producer(t));
                    continue;
                }
                k.inputs.push_back(t);
            }
            for (int32_t t : o.outputs) {
                if (t < 0 || (forward_attention && recomputed(t))) continue;
                bool read_outside = graph.consumer_count(t) == 0;  // a model output
                for (int32_t c : groups.consumers(t)) read_outside = read_outside || groups.group_of(c) != grp;
                if (read_outside) k.outputs.push_back(t);
            }
            k.cost.macs += o.cost.macs;
            k.cost.flops += o.cost.flops;
        }
        // the kernel's class: what the machine runs it as
        OpClass cls = OpClass::ShapeOnly;
        auto rank = [](OpClass c) {
            switch (c) {
                case OpClass::Contraction: return 6;
                case OpClass::Reduction: return 5;
                case OpClass::Pooling: return 4;
                case OpClass::Elementwise: return 3;
                case OpClass::DataMovement: return 2;
                case OpClass::Unsupported: return 1;
                default: return 0;
            }
        };
        for (int32_t m : members) {
            const OpClass c = graph.ops()[static_cast<size_t>(m)].cost.cls;
            if (rank(c) > rank(cls)) cls = c;
        }
        k.cost.cls = cls;
        // what the kernel reads of each input: all of it, unless every member reading it reads
        // only part (a Gather's table, slices of a fused QKV tensor: their parts taken as disjoint)
        bool partial = false;
        for (int32_t t : k.inputs) {
            const Tensor& x = graph.tensors()[static_cast<size_t>(t)];
            int64_t read = -1;
            bool whole = false;
            for (int32_t m : members) {
                const Operator& o = graph.ops()[static_cast<size_t>(m)];
                for (size_t i = 0; i < o.inputs.size(); ++i) {
                    if (o.inputs[i] != t) continue;
                    const int64_t r = i < o.cost.read_elems.size() ? o.cost.read_elems[i] : -1;
                    if (r < 0) whole = true;
                    else read = std::min(x.elems(), std::max<int64_t>(read, 0) + r);
                }
            }
            if (whole) read = -1;
            partial = partial || read >= 0;
            k.cost.read_elems.push_back(read);
            k.cost.bytes_read += read >= 0 ? read * x.elem_bytes : x.bytes();
            if (x.role == TensorRole::Weight) k.cost.params += x.elems();
        }
        if (!partial) k.cost.read_elems.clear();
        for (int32_t t : k.outputs) k.cost.bytes_written += graph.tensors()[static_cast<size_t>(t)].bytes();
        const bool attention = contractions.size() == 2 && forward_attention;
        if (backward_attention && contractions.size() == 4 && forward_group >= 0) {
            attention_backward(graph, groups, grp, forward_view(forward_group).a, contractions, k);
            kernels.push_back(std::move(k));
            continue;
        }
        if (contractions.size() > 1 && !attention) {  // merged projections (merge_projections): one GEMM, N concatenated
            GemmView merged = graph.ops()[static_cast<size_t>(contractions[0])].cost.gemms.at(0);
            for (size_t i = 1; i < contractions.size(); ++i) merged.n += graph.ops()[static_cast<size_t>(contractions[i])].cost.gemms.at(0).n;
            merged.a = through_folds(graph, groups, grp, merged.a);
            k.cost.gemms = {merged};
        } else if (attention) {  // a fused attention block (fuse_attention): Q K^T, then P V
            const Forward f = forward_view(grp);
            const AttentionView a = f.a;
            GemmView s = f.qk, o = f.pv;  // the scores stay on chip
            s.a = a.q, s.b = a.k, s.c = GemmOperand{};
            o.a = GemmOperand{}, o.b = a.v;
            k.cost.gemms = {s, o};
            k.cost.attention = {a};
        } else if (contraction >= 0) {
            const Operator& c = graph.ops()[static_cast<size_t>(contraction)];
            k.cost.gemms = c.cost.gemms;
            // C: where the epilogue's last operator writes (the contraction's own output when
            // it is read outside the kernel)
            int32_t c_out = c.outputs.empty() ? -1 : c.outputs[0];
            while (c_out >= 0 && std::find(k.outputs.begin(), k.outputs.end(), c_out) == k.outputs.end()) {
                int32_t next = -1;
                for (int32_t cons : groups.consumers(c_out))
                    if (groups.group_of(cons) == grp) next = cons;  // the last one in topological order
                if (next < 0 || graph.ops()[static_cast<size_t>(next)].outputs.empty()) break;
                c_out = graph.ops()[static_cast<size_t>(next)].outputs[0];
            }
            for (auto& gv : k.cost.gemms) {
                gv.a = through_folds(graph, groups, grp, gv.a);
                gv.b = through_folds(graph, groups, grp, gv.b);
                if (gv.c.tensor >= 0) gv.c.tensor = c_out;
            }
        }
        kernels.push_back(std::move(k));
    }
    return OpGraph(graph.model_name(), graph.source(), graph.tensors(), std::move(kernels), runtime);
}

OpGraph lower(const OpGraph& graph, const RuntimeProfile& runtime, const std::string& precision) {
    FusionGroups groups(graph);
    if (runtime.attention) fuse_attention(groups);
    if (runtime.projections) merge_projections(groups);
    if (runtime.epilogues) fuse_epilogues(groups, runtime.epilogue_ops);
    if (runtime.activations) fuse_activations(groups);
    if (runtime.vector_regions) fuse_vector_regions(groups, runtime.vector_separate);
    if (runtime.layouts) fold_layouts(groups);
    std::vector<int32_t> kernel_groups;
    OpGraph plan = build_kernels(graph, groups, runtime.name, &kernel_groups);
    const bool to_blas = runtime.blas_at(precision);
    if (!runtime.conversions && !to_blas && runtime.reference_ops.empty()) return plan;
    auto in = [](const std::vector<std::string>& list, const std::string& type) {
        return std::find(list.begin(), list.end(), type) != list.end();
    };
    // a library kernel: its pattern (HardSwish, ...) is listed, or every operator in it that
    // computes is; with library.entry_ops, a kernel of another listed type joins only when every
    // activation it reads is in the library's layout already (PyTorch's MKLDNN groups start at a
    // convolution and grow into consumers). A BLAS kernel: not the library's, and its contraction
    // is of a blas.ops type or a convolution the framework leaves to its native im2col + GEMM path
    // (native_conv). A reference kernel: not the library's, its operators of reference.ops types
    // (and views), at least one of them (a lone Transpose or Slice copy is not one).
    std::vector<bool> in_library;
    std::vector<Operator> kernels = plan.ops();
    // whether tensor t is in the library's layout: made by a library kernel, through views
    std::function<bool(int32_t)> blocked = [&](int32_t t) {
        const int32_t p = t >= 0 ? plan.producer(t) : -1;
        if (p < 0 || static_cast<size_t>(p) >= in_library.size()) return false;
        const Operator& k = plan.ops()[static_cast<size_t>(p)];
        if (k.cost.cls == OpClass::ShapeOnly) return !k.inputs.empty() && blocked(k.inputs[0]);
        return static_cast<bool>(in_library[static_cast<size_t>(p)]);
    };
    for (size_t k = 0; k < kernel_groups.size(); ++k) {
        bool all = true, blas = false, native = false, entry = runtime.library_entry_ops.empty();
        bool reference = true, any_reference = false;  // every member a view or listed, one listed
        for (int32_t m : groups.members(kernel_groups[k])) {
            const Operator& o = graph.ops()[static_cast<size_t>(m)];
            all = all && (is_layout_view(o) || in(runtime.library_ops, o.op_type));
            entry = entry || in(runtime.library_entry_ops, o.op_type);
            const bool listed = in(runtime.reference_ops, o.op_type);
            reference = reference && (is_layout_view(o) || listed);
            any_reference = any_reference || listed;
            blas = blas || (to_blas && o.cost.cls == OpClass::Contraction && in(runtime.blas_ops, o.op_type));
            native = native || (to_blas && native_conv(graph, o, runtime.blas_conv_max_input_elems));
        }
        const Operator& kern = plan.ops()[k];
        bool library = !native && (all || in(runtime.library_ops, kern.op_type));
        if (library && !entry && kern.cost.cls != OpClass::ShapeOnly)
            for (int32_t t : kern.inputs)
                if (t >= 0 && !blocked(t) && (plan.tensors()[static_cast<size_t>(t)].role == TensorRole::Activation ||
                                               plan.tensors()[static_cast<size_t>(t)].role == TensorRole::Input))
                    library = false;
        in_library.push_back(library);
        if ((blas || native) && !library) {
            kernels[k].path = KernelPath::Blas;
            kernels[k].threads = static_cast<int32_t>(runtime.blas_threads);
        } else if (reference && any_reference && !library) {
            kernels[k].path = KernelPath::Reference;
        }
    }
    OpGraph placed(plan.model_name(), plan.source(), plan.tensors(), std::move(kernels), runtime.name);
    if (!runtime.conversions) return placed;
    return insert_layout_conversions(placed, in_library);
}

}  // namespace archsim
