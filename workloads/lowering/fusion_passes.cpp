#include "workloads/lowering/fusion_passes.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace archsim {

namespace {

const Operator& op_at(const OpGraph& g, int32_t i) { return g.ops()[static_cast<size_t>(i)]; }
const Tensor& tensor_at(const OpGraph& g, int32_t t) { return g.tensors()[static_cast<size_t>(t)]; }

bool is_vector(const Operator& o) { return o.cost.cls == OpClass::Elementwise || o.cost.cls == OpClass::Reduction; }

/// Inputs of `o` computed at run time (activations and model inputs), not weights or constants.
int count_activation_inputs(const OpGraph& g, const Operator& o, int64_t min_elems) {
    int n = 0;
    for (int32_t t : o.inputs)
        if (t >= 0) {
            const Tensor& x = tensor_at(g, t);
            n += (x.role == TensorRole::Activation || x.role == TensorRole::Input) && x.elems() >= min_elems;
        }
    return n;
}

}  // namespace

bool is_layout_view(const Operator& o) {
    return o.cost.cls == OpClass::ShapeOnly || o.op_type == "Transpose" || o.op_type == "Slice" || o.op_type == "Split" ||
           o.op_type == "Expand";
}

namespace {

/// The backward of one attention block in a training step (workloads/training/grad_rules.h):
/// the operators of the backward stage that read the block's score-sized tensors (the saved
/// softmax output and its dropout), closed over the score-sized gradients between them: the
/// gradient GEMM of P V for P (dP = dO V^T) and for V (dV = P^T dO), the dropout's, softmax's
/// and scale's gradients, and the two GEMMs that take the score gradient dS to dQ and dK. Empty
/// when the backward does not have that shape (then the forward stays unfused: its scores are
/// saved for the operators that read them).
std::vector<int32_t> attention_backward(const FusionGroups& groups, const std::vector<int32_t>& later, int64_t scores) {
    const OpGraph& g = groups.graph();
    // in the backward pass's fusion stage (a recomputed forward operator runs inside it too)
    auto in_backward = [](const Operator& op) { return fusion_stage(op.phase) == fusion_stage(TrainingPhase::Backward); };
    std::vector<int32_t> block;
    auto in_block = [&](int32_t o) { return std::find(block.begin(), block.end(), o) != block.end(); };
    std::vector<int32_t> todo = later;
    while (!todo.empty()) {
        const int32_t o = todo.back();
        todo.pop_back();
        if (in_block(o)) continue;
        const Operator& op = op_at(g, o);
        const bool contraction = op.cost.cls == OpClass::Contraction && op.cost.gemms.size() == 1 && !op.cost.gemms[0].b_is_weight;
        if (!in_backward(op) || !groups.alone(o) || !(contraction || is_vector(op) || is_layout_view(op))) return {};
        block.push_back(o);
        if (block.size() > 16) return {};
        // the score-sized gradients it reads from the backward and writes: their operators too
        for (int32_t t : op.inputs) {
            const int32_t p = t >= 0 ? g.producer(t) : -1;
            if (p >= 0 && in_backward(op_at(g, p)) && tensor_at(g, t).elems() == scores) todo.push_back(p);
        }
        for (int32_t t : op.outputs)
            if (t >= 0 && tensor_at(g, t).elems() == scores)
                for (int32_t c : groups.consumers(t)) todo.push_back(c);
    }
    int contractions = 0;
    for (int32_t o : block) contractions += op_at(g, o).cost.cls == OpClass::Contraction;
    if (contractions != 4) return {};
    std::sort(block.begin(), block.end(), [&](int32_t a, int32_t b) { return groups.position(a) < groups.position(b); });
    return block;
}

}  // namespace

void fuse_attention(FusionGroups& groups) {
    const OpGraph& g = groups.graph();
    auto activation_product = [&](const Operator& o) {
        return o.cost.cls == OpClass::Contraction && o.cost.gemms.size() == 1 && !o.cost.gemms[0].b_is_weight;
    };
    // the one operator of `stage` that reads t (once); readers of a later stage (a training
    // step's backward reading a saved tensor) go to `later`
    auto sole_consumer = [&](int32_t t, uint8_t stage, std::vector<int32_t>& later) -> int32_t {
        int32_t one = -1, reads = 0;
        for (int32_t c : groups.consumers(t)) {
            if (fusion_stage(op_at(g, c).phase) != stage) {
                later.push_back(c);
                continue;
            }
            one = c;
            for (int32_t in : op_at(g, c).inputs) reads += in == t;
        }
        return reads == 1 ? one : -1;
    };
    for (int32_t s : g.topo_order()) {
        const Operator& qk = op_at(g, s);
        if (!activation_product(qk) || !groups.alone(s) || qk.outputs.empty() || qk.outputs[0] < 0) continue;
        // Q K^T -> [scale, mask: elementwise of the score size] -> Softmax -> [dropout] -> P V
        std::vector<int32_t> block = {s}, later;
        const int64_t scores = tensor_at(g, qk.outputs[0]).elems();
        auto score_sized = [&](int32_t o) {
            return o >= 0 && op_at(g, o).cost.cls == OpClass::Elementwise && !op_at(g, o).outputs.empty() &&
                   tensor_at(g, op_at(g, o).outputs[0]).elems() == scores;
        };
        int32_t t = qk.outputs[0], next = sole_consumer(t, fusion_stage(qk.phase), later);
        while (score_sized(next)) {
            block.push_back(next);
            t = op_at(g, next).outputs[0];
            next = sole_consumer(t, fusion_stage(qk.phase), later);
        }
        if (next < 0 || op_at(g, next).op_type != "Softmax") continue;
        block.push_back(next);
        t = op_at(g, next).outputs[0];
        int32_t pv = sole_consumer(t, fusion_stage(qk.phase), later);
        while (score_sized(pv)) {  // a dropout on the probabilities (training)
            block.push_back(pv);
            for (size_t o = 1; o < op_at(g, pv).outputs.size(); ++o)  // its mask: read by the backward only
                if (op_at(g, pv).outputs[o] >= 0)
                    for (int32_t c : groups.consumers(op_at(g, pv).outputs[o])) later.push_back(c);
            t = op_at(g, pv).outputs[0];
            pv = sole_consumer(t, fusion_stage(qk.phase), later);
        }
        if (pv < 0 || !activation_product(op_at(g, pv)) || op_at(g, pv).cost.gemms[0].a.tensor != t) continue;
        block.push_back(pv);
        // in a training step the backward reads the saved scores: fused only with a backward of
        // the block's shape, which recomputes them (FlashAttention's backward)
        std::vector<int32_t> backward;
        if (!later.empty()) {
            backward = attention_backward(groups, later, scores);
            if (backward.empty()) continue;
        }
        // a scale applied to Q or K on the way in (Div by sqrt(d)) when only this block reads it
        for (const GemmOperand& x : {qk.cost.gemms[0].a, qk.cost.gemms[0].b}) {
            const int32_t p = x.tensor >= 0 ? g.producer(x.tensor) : -1;
            if (p >= 0 && op_at(g, p).cost.cls == OpClass::Elementwise && groups.alone(p) && g.consumer_count(x.tensor) == 1 &&
                count_activation_inputs(g, op_at(g, p), 2) == 1)
                block.push_back(p);
        }
        bool whole = true;
        for (size_t i = 1; i < block.size() && whole; ++i)  // a block refused part-way stays as far as it got: still convex, still correct
            whole = groups.try_merge(s, block[i], 2);
        // the backward kernel recomputes what the forward kernel keeps on chip: only after a whole forward
        for (size_t i = 1; i < backward.size() && whole; ++i) whole = groups.try_merge(backward[0], backward[i], 4);
    }
}

void merge_projections(FusionGroups& groups) {
    const OpGraph& g = groups.graph();
    for (size_t t = 0; t < g.tensors().size(); ++t) {
        // contractions of this activation with weights, by (m, k, batch): Q, K and V of one input
        std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<int32_t>> by_shape;
        for (int32_t c : groups.consumers(static_cast<int32_t>(t))) {
            const Operator& op = op_at(g, c);
            if (op.cost.cls != OpClass::Contraction || op.cost.gemms.size() != 1 || !groups.alone(c)) continue;
            const GemmView& v = op.cost.gemms[0];
            if (!v.b_is_weight || v.a.tensor != static_cast<int32_t>(t) || v.repeat != 1 || v.groups != 1) continue;
            by_shape[{v.m, v.k, v.batch}].push_back(c);
        }
        for (const auto& [shape, ops] : by_shape)
            for (size_t i = 1; i < ops.size(); ++i) groups.try_merge(ops[0], ops[i], static_cast<int>(ops.size()));
    }
}

void fuse_epilogues(FusionGroups& groups, const std::vector<std::string>& allowed_op_types) {
    const OpGraph& g = groups.graph();
    for (int32_t c : g.topo_order()) {
        const Operator& op = op_at(g, c);
        if (op.cost.cls != OpClass::Contraction || op.outputs.empty() || op.outputs[0] < 0) continue;
        const int64_t out_elems = tensor_at(g, op.outputs[0]).elems();
        // grow until nothing joins: an operator refused because another of its inputs was still
        // outside (the erf of a GELU) joins once that input's producer has
        for (bool grew = true; grew;) {
            grew = false;
            for (int32_t m : groups.members(c))
                for (int32_t s : groups.successors(m)) {
                    if (groups.group_of(s) == groups.group_of(c) || !groups.alone(s)) continue;
                    const Operator& e = op_at(g, s);
                    if (e.cost.cls != OpClass::Elementwise || e.outputs.empty() || e.outputs[0] < 0) continue;
                    if (!allowed_op_types.empty() &&
                        std::find(allowed_op_types.begin(), allowed_op_types.end(), e.op_type) == allowed_op_types.end())
                        continue;
                    if (tensor_at(g, e.outputs[0]).elems() != out_elems) continue;  // an epilogue works per output element
                    // a value only reductions read is their prologue (RMSNorm's x^2), not an epilogue
                    bool only_reductions = g.consumer_count(e.outputs[0]) > 0;
                    for (int32_t r : groups.consumers(e.outputs[0])) only_reductions = only_reductions && op_at(g, r).cost.cls == OpClass::Reduction;
                    if (only_reductions) continue;
                    grew = groups.try_merge(c, s) || grew;
                }
        }
    }
}

void fuse_vector_regions(FusionGroups& groups, const std::vector<std::pair<std::string, std::string>>& separate) {
    const OpGraph& g = groups.graph();
    for (int32_t e : g.topo_order()) {
        if (!is_vector(op_at(g, e)) || groups.has_contraction(e)) continue;
        for (int32_t t : op_at(g, e).inputs) {
            if (t < 0) continue;
            const int32_t p = g.producer(t);
            if (p < 0 || !is_vector(op_at(g, p)) || groups.has_contraction(p)) continue;
            const std::pair<std::string, std::string> edge{op_at(g, p).op_type, op_at(g, e).op_type};
            if (std::find(separate.begin(), separate.end(), edge) != separate.end()) continue;
            groups.try_merge(p, e);
        }
    }
}

void fuse_activations(FusionGroups& groups) {
    const OpGraph& g = groups.graph();
    // by operator: the one tensor the unary function its group computes is of (-1: none)
    std::vector<int32_t> source(g.ops().size(), -1);
    for (int32_t e : g.topo_order()) {
        const Operator& op = op_at(g, e);
        if (op.cost.cls != OpClass::Elementwise || op.outputs.size() != 1 || op.outputs[0] < 0 || !groups.alone(e)) continue;
        const int64_t elems = tensor_at(g, op.outputs[0]).elems();
        int32_t x = -1;
        bool unary = true;
        std::vector<int32_t> join;  // producers of this function of x, already grouped
        for (int32_t t : op.inputs) {
            if (t < 0) continue;
            const Tensor& in = tensor_at(g, t);
            if ((in.role != TensorRole::Activation && in.role != TensorRole::Input) || in.elems() <= 1) continue;  // constants
            const int32_t p = g.producer(t);
            const int32_t from = p >= 0 && source[static_cast<size_t>(p)] >= 0 ? source[static_cast<size_t>(p)] : t;
            if (p >= 0 && source[static_cast<size_t>(p)] >= 0) join.push_back(p);
            unary = unary && (x < 0 || x == from) && in.elems() == elems;
            x = from;
        }
        if (!unary || x < 0 || tensor_at(g, x).elems() != elems) continue;
        bool joined = join.empty();
        for (int32_t p : join) joined = groups.try_merge(p, e) || joined;
        if (joined) source[static_cast<size_t>(e)] = x;
    }
}

void fold_layouts(FusionGroups& groups) {
    const OpGraph& g = groups.graph();
    // from tensor t through alone views to the kernel that reads it in place: a GEMM operand, or
    // an elementwise / reduction kernel (an epilogue, a prologue such as the scale on Q, a
    // normalization) that reads through the index map; -1 when the chain ends elsewhere
    auto walk = [&](int32_t t, std::vector<int32_t>& chain) {
        for (;;) {
            const auto& cons = groups.consumers(t);
            if (cons.size() != 1) return -1;
            const Operator& c = op_at(g, cons[0]);
            if (is_layout_view(c) && c.outputs.size() == 1 && c.outputs[0] >= 0 && groups.alone(cons[0])) {
                chain.push_back(cons[0]);
                t = c.outputs[0];
                continue;
            }
            return (c.cost.cls == OpClass::Contraction && c.cost.is_gemm_operand(t)) || is_vector(c) ? cons[0] : -1;
        }
    };
    for (int32_t tr : g.topo_order()) {
        const Operator& op = op_at(g, tr);
        if (!is_layout_view(op) || op.cost.cls == OpClass::ShapeOnly || !groups.alone(tr) || op.outputs.empty()) continue;
        // every output (a Split's parts: Q, K and V) must end in the same kernel
        std::vector<std::vector<int32_t>> chains;
        int32_t target = -1;
        bool ok = true;
        for (int32_t t : op.outputs) {
            std::vector<int32_t> chain;
            const int32_t to = t >= 0 ? walk(t, chain) : -1;
            ok = ok && to >= 0 && (target < 0 || groups.group_of(to) == groups.group_of(target));
            target = to;
            chains.push_back(std::move(chain));
        }
        if (!ok) continue;
        // views add no contraction: a fused attention kernel takes them too
        bool merged = true;
        for (const auto& chain : chains)
            for (auto it = chain.rbegin(); merged && it != chain.rend(); ++it) merged = groups.try_merge(target, *it, 2);
        if (!merged || !groups.try_merge(target, tr, 2)) continue;
        // and the views in front of it that only it reads (an Unsqueeze before GQA's Expand)
        for (int32_t t = op.inputs.empty() ? -1 : op.inputs[0]; t >= 0;) {
            const int32_t p = g.producer(t);
            if (p < 0 || op_at(g, p).cost.cls != OpClass::ShapeOnly || !groups.alone(p) || groups.consumers(t).size() != 1 ||
                !groups.try_merge(target, p, 2))
                break;
            t = op_at(g, p).inputs.empty() ? -1 : op_at(g, p).inputs[0];
        }
    }
}

namespace {

/// The name of a kernel of several operators, `contractions` of them contractions, that is not a
/// fused attention block (kernel_pattern).
std::string other_pattern_name(const OpGraph& graph, const std::vector<int32_t>& members, int contractions) {
    std::map<std::string, int> n;
    int32_t contraction = -1;
    for (int32_t m : members) {
        ++n[op_at(graph, m).op_type];
        if (op_at(graph, m).cost.cls == OpClass::Contraction) contraction = m;
    }
    auto has = [&](const char* t) { return n.count(t) > 0; };
    const bool gelu = has("Gelu") || ((has("Erf") || has("Tanh")) && has("Mul"));
    const bool silu = has("Sigmoid") && has("Mul");
    if (contractions > 1) return "Merged" + op_at(graph, contraction).op_type + "(" + std::to_string(contractions) + ")";
    if (contraction >= 0) {
        std::string s = op_at(graph, contraction).op_type;
        std::vector<std::string> parts;
        auto add = [&](const std::string& p) {
            if (std::find(parts.begin(), parts.end(), p) == parts.end()) parts.push_back(p);
        };
        const int64_t out_elems = tensor_at(graph, op_at(graph, contraction).outputs[0]).elems();
        for (int32_t m : members) {
            const Operator& o = op_at(graph, m);
            if (m == contraction || is_layout_view(o)) continue;
            if (o.op_type == "Add" || o.op_type == "Sub") {
                // a residual adds a full-size tensor from outside the kernel (an add inside a GELU does not)
                bool outside = false;
                for (int32_t t : o.inputs) {
                    const int32_t p = t >= 0 ? graph.producer(t) : -1;
                    const bool from_outside = p < 0 || std::find(members.begin(), members.end(), p) == members.end();
                    outside = outside || (from_outside && t >= 0 && tensor_at(graph, t).elems() >= out_elems &&
                                          (tensor_at(graph, t).role == TensorRole::Activation || tensor_at(graph, t).role == TensorRole::Input));
                }
                add(outside ? "Residual" : "Bias");
            }
            else if (o.op_type == "BatchNormalization") add("BatchNorm");
            else if (gelu && (o.op_type == "Erf" || o.op_type == "Tanh" || o.op_type == "Gelu")) add("GELU");
            else if (silu && o.op_type == "Sigmoid") add("SiLU");
            else if (o.op_type != "Mul" && o.op_type != "Div") add(o.op_type);
            else if (!gelu && !silu) add("Scale");
        }
        for (const auto& p : parts) s += "+" + p;
        return s;
    }
    // the first operator that computes (folded views ahead of it read in place)
    const Operator& head = op_at(graph, *std::find_if(members.begin(), members.end(), [&](int32_t m) {
        return !is_layout_view(op_at(graph, m)) || m == members.back();
    }));
    if (has("LayerNormalization") || (n["ReduceMean"] >= 2 && has("Sub") && (has("Sqrt") || has("Reciprocal"))))
        return count_activation_inputs(graph, head, 2) >= 2 && head.op_type == "Add"
                   ? "Residual+LayerNorm"
                   : "LayerNorm";
    if (has("SimplifiedLayerNormalization") || has("RMSNormalization") ||
        (n["ReduceMean"] == 1 && !has("Sub") && (has("Sqrt") || has("Reciprocal"))))
        return "RMSNorm";
    if (has("Softmax")) return std::string("Softmax") + (has("Mul") || has("Div") ? "+Scale" : "") + (has("Where") || has("Add") ? "+Mask" : "");
    if (gelu) return "GELU";
    if (silu) return "SiLU";
    if (has("HardSigmoid") && has("Mul") && members.size() == 2) return "HardSwish";
    bool all_elementwise = true;
    for (int32_t m : members) all_elementwise = all_elementwise && op_at(graph, m).cost.cls == OpClass::Elementwise;
    return (all_elementwise ? "Elementwise(" : "Fused(") + std::to_string(members.size()) + ")";
}

}  // namespace

KernelPattern kernel_pattern(const OpGraph& graph, const std::vector<int32_t>& members) {
    if (members.size() == 1) return {KernelKind::Other, op_at(graph, members[0]).op_type};
    int contractions = 0;
    bool softmax = false, softmax_grad = false;
    for (int32_t m : members) {
        const Operator& o = op_at(graph, m);
        contractions += o.cost.cls == OpClass::Contraction;
        softmax = softmax || o.op_type == "Softmax", softmax_grad = softmax_grad || o.op_type == "SoftmaxGrad";
    }
    if (contractions == 2 && softmax) return {KernelKind::Attention, "Attention"};
    if (contractions == 4 && softmax_grad) return {KernelKind::AttentionGrad, "AttentionGrad"};  // fuse_attention's backward kernel
    return {KernelKind::Other, other_pattern_name(graph, members, contractions)};
}

}  // namespace archsim
