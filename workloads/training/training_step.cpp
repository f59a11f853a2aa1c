#include "workloads/training/training_step.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>

#include "sim/base/error.h"
#include "workloads/training/grad_rules.h"

namespace archsim {

const char* to_string(TrainingPhase p) {
    switch (p) {
        case TrainingPhase::Setup: return "setup";
        case TrainingPhase::Forward: return "forward";
        case TrainingPhase::Loss: return "loss";
        case TrainingPhase::Backward: return "backward";
        case TrainingPhase::Recompute: return "recompute";
        case TrainingPhase::Optimizer: return "optimizer";
    }
    return "forward";
}

const std::vector<std::string>& optimizer_names() {
    static const std::vector<std::string> names = {"sgd", "momentum", "adam", "adamw"};
    return names;
}
const std::vector<std::string>& loss_names() {
    static const std::vector<std::string> names = {"auto", "cross_entropy", "mse"};
    return names;
}
const std::vector<std::string>& recompute_names() {
    static const std::vector<std::string> names = {"none", "selective", "full"};
    return names;
}

namespace {

/// Throws UserError(where, "unknown WHAT 'value' (a, b, c)") unless `value` is one of `names`.
void check_name(const std::string& value, const std::vector<std::string>& names, const std::string& what, const std::string& where) {
    if (std::find(names.begin(), names.end(), value) != names.end()) return;
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw UserError(where, "unknown " + what + " '" + value + "' (" + list + ")");
}

/// Vector operations per parameter of one optimizer update, and the state tensors it keeps
/// (each the parameter's size): SGD w -= lr g (2, none); momentum v = mu v + g, w -= lr v (4,
/// one); Adam m and v moving averages, bias corrections, w -= lr m / (sqrt(v) + eps) (14, two:
/// Kingma and Ba, ICLR 2015, algorithm 1); AdamW adds the decoupled decay w -= lr wd w (16, two:
/// Loshchilov and Hutter, ICLR 2019).
struct OptimizerRule {
    const char* op_type;  ///< of its update operators
    int64_t ops_per_param;
    int states;
};
OptimizerRule optimizer_rule(const std::string& name, const std::string& where) {
    check_name(name, optimizer_names(), "optimizer", where);
    if (name == "sgd") return {"SGD", 2, 0};
    if (name == "momentum") return {"Momentum", 4, 1};
    if (name == "adam") return {"Adam", 14, 2};
    return {"AdamW", 16, 2};
}

/// The training graph as it grows: the forward tensors and operators first, then the rest.
class StepBuilder final : public GradBuilder {
public:
    explicit StepBuilder(const OpGraph& fwd) : m_tensors(fwd.tensors()), m_ops(fwd.ops()), m_needs(fwd.tensors().size(), 0) {
        // requires_grad: a weight, or an output of an operator reading a tensor that has it
        for (size_t t = 0; t < m_tensors.size(); ++t) m_needs[t] = m_tensors[t].role == TensorRole::Weight && m_tensors[t].is_float();
        for (const int32_t i : fwd.topo_order()) {
            const Operator& op = fwd.ops()[static_cast<size_t>(i)];
            bool any = false;
            for (const int32_t t : op.inputs) any = any || (t >= 0 && m_needs[static_cast<size_t>(t)]);
            for (const int32_t t : op.outputs)
                if (t >= 0) m_needs[static_cast<size_t>(t)] = any && m_tensors[static_cast<size_t>(t)].is_float();
        }
        m_grad.assign(m_tensors.size(), -1);
        m_parts.resize(m_tensors.size());
        for (size_t t = 0; t < m_tensors.size(); ++t) {
            const TensorRole r = m_tensors[t].role;
            m_category.push_back(r == TensorRole::Weight || r == TensorRole::Constant ? MemoryCategory::Weights
                                                                                       : MemoryCategory::Activations);
            m_storage.push_back(static_cast<int32_t>(t));
        }
        // sequence parallelism's gathered tokens are not kept for the backward: Megatron-LM
        // saves the rank's shard and gathers it again there (Korthikanti et al. 2023, section
        // 4.2.2; the gather is the job's to price): the gathered tensor, and the views of it (a
        // MoE layer's rows), live in the shard's buffer
        std::vector<uint8_t> gathered(m_tensors.size(), 0);
        for (const int32_t i : fwd.topo_order()) {
            const Operator& op = m_ops[static_cast<size_t>(i)];
            if (op.inputs.empty() || op.inputs[0] < 0 || op.outputs.empty() || op.outputs[0] < 0) continue;
            const size_t in = static_cast<size_t>(op.inputs[0]), out = static_cast<size_t>(op.outputs[0]);
            const bool gather = op.domain == kArchsimDomain && op.op_type == "SequenceGather";
            if (gather || (gathered[in] && op.cost.cls == OpClass::ShapeOnly && op.domain.empty() && m_tensors[out].elems() == m_tensors[in].elems())) {
                m_storage[out] = m_storage[in];
                gathered[out] = 1;
            }
        }
        // in training, batch normalization computes its batch's statistics (mean, variance) as
        // layer normalization does, 8 operations per element, instead of applying stored ones (2)
        for (Operator& op : m_ops)
            if (op.op_type == "BatchNormalization" && !op.inputs.empty() && op.inputs[0] >= 0)
                op.cost.flops = 8 * m_tensors[static_cast<size_t>(op.inputs[0])].elems();
    }

    const Tensor& tensor(int32_t t) const override { return m_tensors.at(static_cast<size_t>(t)); }
    bool needs_grad(int32_t t) const override { return t >= 0 && static_cast<size_t>(t) < m_needs.size() && m_needs[static_cast<size_t>(t)]; }
    int32_t grad(int32_t t) const override {
        return t >= 0 && static_cast<size_t>(t) < m_grad.size() ? m_grad[static_cast<size_t>(t)] : -1;
    }
    int32_t new_tensor(const std::string& name, const std::vector<int64_t>& shape, const Tensor& like) override {
        Tensor t;
        t.name = name;
        t.shape = shape;
        t.onnx_dtype = like.onnx_dtype;
        t.elem_bytes = like.elem_bytes;
        t.role = TensorRole::Activation;
        return add_tensor(std::move(t));
    }
    void add(Operator op) override { m_ops.push_back(std::move(op)); }
    void contribute(int32_t t, int32_t g) override { m_parts.at(static_cast<size_t>(t)).push_back(g); }

    /// Adds tensor `t` holding `category`, in its own buffer.
    int32_t add_tensor(Tensor t, MemoryCategory category = MemoryCategory::Activations) {
        m_tensors.push_back(std::move(t));
        m_category.push_back(category);
        m_storage.push_back(static_cast<int32_t>(m_tensors.size() - 1));
        return static_cast<int32_t>(m_tensors.size() - 1);
    }
    /// Tensor `t` is written into `into`'s buffer (an in-place update).
    void alias(int32_t t, int32_t into) {
        m_storage[static_cast<size_t>(t)] = m_storage[static_cast<size_t>(into)];
        m_category[static_cast<size_t>(t)] = m_category[static_cast<size_t>(into)];
    }
    /// Sums the parts of tensor `t`'s gradient (one Add when there are several) into its gradient.
    void finish_grad(int32_t t) {
        std::vector<int32_t>& parts = m_parts[static_cast<size_t>(t)];
        if (parts.empty()) return;
        if (parts.size() == 1) {
            m_grad[static_cast<size_t>(t)] = parts[0];
            return;
        }
        const Tensor x = m_tensors[static_cast<size_t>(t)];  // a copy: new_tensor() grows m_tensors
        const int32_t sum = new_tensor("grad/" + x.name, x.shape, x);
        Operator op;
        op.name = "backward/" + x.name + "/sum";
        op.op_type = "GradSum";
        op.phase = TrainingPhase::Backward;
        op.inputs = parts;
        op.outputs = {sum};
        op.cost.cls = OpClass::Elementwise;
        op.cost.flops = static_cast<int64_t>(parts.size() - 1) * x.elems();
        count_bytes(op, *this);
        add(std::move(op));
        m_grad[static_cast<size_t>(t)] = sum;
    }
    void seed(int32_t t, int32_t g) { m_grad[static_cast<size_t>(t)] = g; }

    std::vector<Tensor> m_tensors;
    std::vector<Operator> m_ops;
    std::vector<uint8_t> m_needs;
    std::vector<int32_t> m_grad;
    std::vector<std::vector<int32_t>> m_parts;
    std::vector<MemoryCategory> m_category;
    std::vector<int32_t> m_storage;
};

/// A tensor's copy for a recomputation or a later microbatch: `name`, role Activation (an input
/// keeps its role), the same shape and dtype.
Tensor copy_of(const Tensor& t, const std::string& name) {
    Tensor c = t;
    c.name = name;
    if (c.role != TensorRole::Input) c.role = TensorRole::Activation;
    return c;
}

/// The forward operators a recomputation runs again, in groups: each group's copies run just
/// before the first backward operator reading one of its outputs, except `kept` (a segment's
/// checkpoint, read in its original).
struct RecomputeGroup {
    std::vector<int32_t> ops;  ///< forward operator indices, in forward order
    int32_t kept = -1;
};

/// Whether forward tensor `t` is produced by a forward operator (an activation, not an input,
/// weight or constant).
bool computed(const OpGraph& g, int32_t t) { return t >= 0 && g.producer(t) >= 0; }

/// Whether `t` can be one side of a residual sum: computed, or a model input (a pipeline stage's
/// incoming hidden states).
bool residual_side(const OpGraph& g, int32_t t) {
    return computed(g, t) || (t >= 0 && g.tensors()[static_cast<size_t>(t)].role == TensorRole::Input);
}

/// Whether `op` is a residual sum: an Add or Sum of two residual sides.
bool is_residual_sum(const OpGraph& g, const Operator& op) {
    if (op.op_type != "Add" && op.op_type != "Sum") return false;
    int sides = 0;
    for (const int32_t x : op.inputs) sides += residual_side(g, x);
    return sides >= 2;
}

/// Full recomputation's segments (Chen et al., 2016): the forward order is cut where exactly one
/// computed tensor crosses; the cuts after a residual sum (an Add or Sum of two computed tensors,
/// or of a model input and a computed tensor:
/// a transformer sublayer's or a residual block's output) are the checkpoints, or, in a network
/// without residual sums, about sqrt(cuts) cuts evenly spaced. Every segment but the last (which
/// runs straight into the loss and its own backward) is recomputed; when the forward itself ends
/// in a residual sum (a pipeline stage's layers), that last segment is recomputed too, as
/// Megatron-LM's uniform checkpointing does.
std::vector<RecomputeGroup> full_segments(const OpGraph& g) {
    const std::vector<int32_t>& order = g.topo_order();
    const size_t n = order.size();
    std::vector<int64_t> pos(g.ops().size(), 0);
    for (size_t p = 0; p < n; ++p) pos[static_cast<size_t>(order[p])] = static_cast<int64_t>(p);
    std::vector<int64_t> last(g.tensors().size(), -1);
    for (size_t p = 0; p < n; ++p)
        for (const int32_t t : g.ops()[static_cast<size_t>(order[p])].inputs)
            if (t >= 0) last[static_cast<size_t>(t)] = static_cast<int64_t>(p);
    // crossing[p]: computed tensors made at or before p and read after it; id_sum: their indices summed
    std::vector<int64_t> crossing(n + 1, 0), id_sum(n + 1, 0);
    for (size_t t = 0; t < g.tensors().size(); ++t) {
        if (!computed(g, static_cast<int32_t>(t))) continue;
        const int64_t a = pos[static_cast<size_t>(g.producer(static_cast<int32_t>(t)))], u = last[t];
        if (u <= a) continue;
        crossing[static_cast<size_t>(a)] += 1, crossing[static_cast<size_t>(u)] -= 1;
        id_sum[static_cast<size_t>(a)] += static_cast<int64_t>(t), id_sum[static_cast<size_t>(u)] -= static_cast<int64_t>(t);
    }
    std::vector<size_t> residual, cuts;
    int64_t c = 0, ids = 0;
    for (size_t p = 0; p + 1 < n; ++p) {
        c += crossing[p], ids += id_sum[p];
        if (c != 1) continue;
        const int32_t t = static_cast<int32_t>(ids);
        const Operator& op = g.ops()[static_cast<size_t>(order[p])];
        if (g.producer(t) != order[p]) continue;  // the crossing tensor was made earlier: no new cut
        cuts.push_back(p);
        if (is_residual_sum(g, op)) residual.push_back(p);
    }
    std::vector<size_t> chosen = residual;
    if (chosen.empty() && !cuts.empty()) {
        const size_t k = std::max<size_t>(1, static_cast<size_t>(std::lround(std::sqrt(static_cast<double>(cuts.size())))));
        const size_t step = (cuts.size() + k - 1) / k;
        for (size_t i = step - 1; i < cuts.size(); i += step) chosen.push_back(cuts[i]);
    }
    std::vector<RecomputeGroup> groups;
    size_t begin = 0;
    for (const size_t p : chosen) {
        RecomputeGroup grp;
        for (size_t q = begin; q <= p; ++q) grp.ops.push_back(order[q]);
        int32_t kept = -1;
        for (const int32_t t : g.ops()[static_cast<size_t>(order[p])].outputs)
            if (t >= 0 && last[static_cast<size_t>(t)] > static_cast<int64_t>(p)) kept = t;
        grp.kept = kept;
        groups.push_back(std::move(grp));
        begin = p + 1;
    }
    // A forward that ends in a residual sum (a pipeline stage's chunk of layers) recomputes its
    // last sublayer too: Megatron-LM's uniform checkpointing recomputes every layer of a stage.
    if (!residual.empty() && begin < n && is_residual_sum(g, g.ops()[static_cast<size_t>(order[n - 1])])) {
        RecomputeGroup grp;
        for (size_t q = begin; q < n; ++q) grp.ops.push_back(order[q]);
        groups.push_back(std::move(grp));
    }
    return groups;
}

/// Selective recomputation (Korthikanti et al., 2023, section 4.2): the attention core. A
/// matmul of two computed tensors (no weight) whose output is larger than its operands (the
/// scores Q K^T) starts a chain; operators without a weight reading only the chain's outputs
/// (scale, mask, softmax, dropout, views) extend it. Each connected chain is one group.
std::vector<RecomputeGroup> selective_groups(const OpGraph& g) {
    std::vector<int32_t> mark(g.ops().size(), -1);  // group per operator
    std::vector<RecomputeGroup> groups;
    for (const int32_t i : g.topo_order()) {
        const Operator& op = g.ops()[static_cast<size_t>(i)];
        bool weight = false;
        for (const int32_t t : op.inputs) weight = weight || (t >= 0 && g.tensors()[static_cast<size_t>(t)].role == TensorRole::Weight);
        if (weight) continue;
        int32_t group = -1;
        if (op.cost.cls == OpClass::Contraction) {
            int64_t in = 0, out = 0;
            bool activations = !op.cost.gemms.empty();
            for (const GemmView& v : op.cost.gemms) activations = activations && !v.b_is_weight && computed(g, v.a.tensor) && computed(g, v.b.tensor);
            for (const int32_t t : op.inputs) in += t >= 0 ? g.tensors()[static_cast<size_t>(t)].elems() : 0;
            for (const int32_t t : op.outputs) out += t >= 0 ? g.tensors()[static_cast<size_t>(t)].elems() : 0;
            if (!activations || out <= in) continue;
            group = static_cast<int32_t>(groups.size());
            groups.emplace_back();
        } else {
            bool any = false, all = true;
            for (const int32_t t : op.inputs) {
                if (!computed(g, t)) continue;
                const int32_t m = mark[static_cast<size_t>(g.producer(t))];
                any = true;
                all = all && m >= 0;
                if (m >= 0) group = group < 0 ? m : std::min(group, m);
            }
            if (!any || !all) continue;
        }
        mark[static_cast<size_t>(i)] = group;
        groups[static_cast<size_t>(group)].ops.push_back(i);
    }
    return groups;
}

/// Inserts the recomputation of `groups` into `b`'s operators: forward operators [0, n_forward),
/// the others after. Returns the MACs recomputed.
int64_t insert_recompute(StepBuilder& b, const OpGraph& forward, const std::vector<RecomputeGroup>& groups) {
    const size_t n_forward = forward.ops().size(), n_ops = b.m_ops.size();
    std::vector<std::vector<Operator>> before(n_ops);  // copies to run before operator j
    int64_t macs = 0;
    for (const RecomputeGroup& grp : groups) {
        std::map<int32_t, int32_t> copy;  // forward tensor -> its recomputed copy
        std::set<int32_t> outs;
        for (const int32_t i : grp.ops)
            for (const int32_t t : forward.ops()[static_cast<size_t>(i)].outputs)
                if (t >= 0 && t != grp.kept) outs.insert(t);
        size_t first = n_ops;
        for (size_t j = n_forward; j < n_ops && first == n_ops; ++j)
            for (const int32_t t : b.m_ops[j].inputs)
                if (outs.count(t)) first = j;
        if (first == n_ops) continue;  // the backward pass reads nothing the group makes
        for (const int32_t i : grp.ops) {
            Operator op = b.m_ops[static_cast<size_t>(i)];  // the forward operator as the step runs it
            op.name = "recompute/" + op.name;
            op.phase = TrainingPhase::Recompute;
            for (int32_t& t : op.inputs)
                if (copy.count(t)) t = copy[t];
            for (int32_t& t : op.outputs) {
                if (t < 0) continue;
                const int32_t c = b.add_tensor(copy_of(b.tensor(t), "recompute/" + b.tensor(t).name));
                copy[t] = c, t = c;
            }
            macs += op.cost.macs;
            before[first].push_back(std::move(op));
        }
        for (size_t j = first; j < n_ops; ++j)
            for (int32_t& t : b.m_ops[j].inputs)
                if (outs.count(t)) t = copy[t];
    }
    std::vector<Operator> ops(std::make_move_iterator(b.m_ops.begin()), std::make_move_iterator(b.m_ops.begin() + static_cast<std::ptrdiff_t>(n_forward)));
    for (size_t j = n_forward; j < n_ops; ++j) {
        for (Operator& op : before[j]) ops.push_back(std::move(op));
        ops.push_back(std::move(b.m_ops[j]));
    }
    b.m_ops = std::move(ops);
    return macs;
}

/// Runs the operators of `b` (one microbatch's forward, loss and backward) `n` times: each later
/// microbatch reads its own inputs and writes its own values (copies suffixed "#mb<k>"), then
/// adds its weight gradients into the first microbatch's in place (one add per element).
void replicate_microbatches(StepBuilder& b, const std::vector<int32_t>& weights, int64_t n) {
    const size_t n_ops = b.m_ops.size(), n_tensors = b.m_tensors.size();
    std::vector<int32_t> first;  // each weight's gradient in the first microbatch
    for (const int32_t w : weights) first.push_back(b.grad(w));
    std::vector<uint8_t> per_mb(n_tensors, 0);  // inputs and every computed value
    for (size_t t = 0; t < n_tensors; ++t) per_mb[t] = b.m_tensors[t].role == TensorRole::Input;
    for (size_t j = 0; j < n_ops; ++j)
        for (const int32_t t : b.m_ops[j].outputs)
            if (t >= 0) per_mb[static_cast<size_t>(t)] = 1;
    for (int64_t k = 2; k <= n; ++k) {
        const std::string tag = "#mb" + std::to_string(k);
        std::vector<int32_t> map(n_tensors, -1);
        for (size_t t = 0; t < n_tensors; ++t)
            if (per_mb[t]) map[t] = b.add_tensor(copy_of(b.m_tensors[t], b.m_tensors[t].name + tag));
        for (size_t t = 0; t < n_tensors; ++t) {  // in-place writes stay in place, in the microbatch's own buffers
            const size_t into = static_cast<size_t>(b.m_storage[t]);
            if (per_mb[t] && into != t && per_mb[into]) b.alias(map[t], map[into]);
        }
        for (size_t j = 0; j < n_ops; ++j) {
            Operator op = b.m_ops[j];
            op.name += tag;
            for (int32_t& t : op.inputs)
                if (t >= 0 && map[static_cast<size_t>(t)] >= 0) t = map[static_cast<size_t>(t)];
            for (int32_t& t : op.outputs)
                if (t >= 0 && map[static_cast<size_t>(t)] >= 0) t = map[static_cast<size_t>(t)];
            b.add(std::move(op));
        }
        for (size_t i = 0; i < weights.size(); ++i) {
            const int32_t w = weights[i], acc = b.grad(w);
            const int32_t mine = map[static_cast<size_t>(first[i])];
            const Tensor x = b.tensor(acc);
            Operator op;
            op.name = "backward/" + b.tensor(w).name + "/accumulate" + tag;
            op.op_type = "GradAccumulate";
            op.phase = TrainingPhase::Backward;
            op.inputs = {acc, mine};
            op.outputs = {b.add_tensor(copy_of(x, "grad/" + b.tensor(w).name + "/accumulated" + tag))};
            b.alias(op.outputs[0], acc);
            op.cost.cls = OpClass::Elementwise;
            op.cost.flops = x.elems();
            count_bytes(op, b);
            const int32_t sum = op.outputs[0];
            b.add(std::move(op));
            b.seed(w, sum);
        }
    }
}


/// An optimizer state tensor and the parameter it starts as a copy of (-1: it starts at zero).
struct StateInit {
    int32_t state = -1;
    int32_t from = -1;
};

/// The setup operators (TrainingOptions::setup), stage 4, in this order: each parameter in
/// `params` drawn by its initializer, "RandomUniform", 2 operations per element (PyTorch's
/// default init of Linear and Conv, kaiming_uniform_: a uniform draw scaled and shifted, x (b - a)
/// + a; the generator's integer work is not floating point); each state of `states` zeroed
/// ("ConstantOfShape", no arithmetic) or, for an fp32 master weight, converted from its parameter
/// ("Cast", 1 per element); every model input and label tensor no operator writes, drawn
/// ("RandomNormal" for floats, 6 per element: Box-Muller's log, square root, cosine and scale per
/// pair of draws, then x std + mean, as torch.randn; "RandomUniform" for integer ids and labels,
/// no floating-point operations). Each writes its tensor, so the step's operators depend on it.
std::vector<Operator> setup_operators(StepBuilder& b, const std::vector<int32_t>& params, const std::vector<StateInit>& states) {
    std::vector<Operator> ops;
    auto add = [&](int32_t t, const char* type, int64_t flops_per_elem, std::vector<int32_t> inputs) {
        Operator op;
        op.name = "setup/" + b.tensor(t).name;
        op.op_type = type;
        op.phase = TrainingPhase::Setup;
        op.inputs = std::move(inputs);
        op.outputs = {t};
        op.cost.cls = OpClass::Elementwise;
        op.cost.flops = flops_per_elem * b.tensor(t).elems();
        count_bytes(op, b);
        ops.push_back(std::move(op));
    };
    for (const int32_t w : params) add(w, "RandomUniform", 2, {});
    for (const StateInit& s : states) {
        if (s.from >= 0) add(s.state, "Cast", 1, {s.from});
        else add(s.state, "ConstantOfShape", 0, {});
    }
    std::vector<uint8_t> written(b.m_tensors.size(), 0), read(b.m_tensors.size(), 0);
    for (const Operator& op : b.m_ops) {
        for (const int32_t t : op.outputs)
            if (t >= 0) written[static_cast<size_t>(t)] = 1;
        for (const int32_t t : op.inputs)
            if (t >= 0) read[static_cast<size_t>(t)] = 1;
    }
    for (size_t t = 0; t < b.m_tensors.size(); ++t) {
        const Tensor& x = b.m_tensors[t];
        if (x.role != TensorRole::Input || written[t] || !read[t]) continue;
        if (x.is_float()) add(static_cast<int32_t>(t), "RandomNormal", 6, {});
        else add(static_cast<int32_t>(t), "RandomUniform", 0, {});
    }
    return ops;
}

}  // namespace

TrainingStep make_training_step(const OpGraph& forward, const TrainingOptions& options) {
    const std::string& where = forward.source();
    const OptimizerRule opt = optimizer_rule(options.optimizer, where);
    check_name(options.loss, loss_names(), "loss", where);
    check_name(options.recompute, recompute_names(), "recomputation", where);
    if (options.microbatches < 1 || options.microbatches > 4096)
        throw UserError(where, "microbatches must be 1 to 4096, got " + std::to_string(options.microbatches));
    StepBuilder b(forward);
    TrainingStep step{OpGraph("", "", {}, {}), "", options.optimizer, 0, 0, 0, 0, 0, {}};
    step.recompute = options.recompute;
    step.microbatches = options.microbatches;
    step.mixed_precision = options.mixed_precision;
    step.setup = options.setup;

    // the output the loss reads: the largest of the model's declared outputs that depends on a
    // weight, else (a graph without declared outputs) the largest unconsumed one
    int32_t out = -1;
    for (const bool declared : {true, false}) {
        for (const int32_t i : forward.topo_order())
            for (const int32_t t : forward.ops()[static_cast<size_t>(i)].outputs)
                if (t >= 0 && forward.consumer_count(t) == 0 && b.needs_grad(t) && (!declared || forward.tensors()[static_cast<size_t>(t)].model_output) &&
                    (out < 0 || forward.tensors()[static_cast<size_t>(t)].elems() > forward.tensors()[static_cast<size_t>(out)].elems()))
                    out = t;
        if (out >= 0) break;
    }
    if (out < 0) throw UserError(where, "no output depends on a trained weight: nothing to train");
    std::vector<int32_t> weights;  // the trained parameters
    for (size_t t = 0; t < forward.tensors().size(); ++t)
        if (forward.tensors()[t].role == TensorRole::Weight && forward.tensors()[t].is_float()) {
            step.params += forward.tensors()[t].elems();
            weights.push_back(static_cast<int32_t>(t));
        }
    for (const Tensor& t : forward.tensors())  // the first model input: [batch, ...], or [batch, sequence] token ids
        if (t.role == TensorRole::Input && !t.shape.empty()) {
            step.samples = t.shape[0] * options.microbatches;
            step.tokens = (t.onnx_dtype == 6 || t.onnx_dtype == 7) && t.shape.size() == 2 ? t.elems() * options.microbatches : 0;  // INT32, INT64
            break;
        }

    // the loss: cross-entropy over the last dim's classes (labels: one int64 index per row), or
    // the mean squared error against a target of the output's shape
    const Tensor y = forward.tensors()[static_cast<size_t>(out)];
    const int64_t classes = y.shape.empty() ? 1 : y.shape.back();
    step.loss = options.loss != "auto" ? options.loss : (y.shape.size() >= 2 && classes >= 2 ? "cross_entropy" : "mse");
    const bool ce = step.loss == "cross_entropy";
    Tensor labels;
    labels.name = "loss/labels";
    labels.role = TensorRole::Input;
    labels.shape = y.shape;
    if (ce) {
        if (!labels.shape.empty()) labels.shape.pop_back();
        labels.onnx_dtype = 7, labels.elem_bytes = 8;  // INT64 class indices
    } else {
        labels.onnx_dtype = y.onnx_dtype, labels.elem_bytes = y.elem_bytes;
    }
    const int32_t label_t = b.add_tensor(labels);
    Tensor scalar;
    scalar.name = "loss/value";
    scalar.onnx_dtype = y.onnx_dtype, scalar.elem_bytes = y.elem_bytes;
    const int32_t loss_t = b.add_tensor(scalar);
    const int32_t dy = b.new_tensor("grad/" + y.name, y.shape, y);
    // a fused cross-entropy writes its gradient over the logits it no longer needs (Megatron-LM's
    // vocab_parallel_cross_entropy: softmax and gradient in place)
    if (ce) b.alias(dy, out);
    auto loss_op = [&](const std::string& name, std::vector<int32_t> in, std::vector<int32_t> o, int64_t per_elem) {
        Operator op;
        op.name = name;
        op.op_type = ce ? "SoftmaxCrossEntropyLoss" : "MeanSquaredErrorLoss";
        op.phase = TrainingPhase::Loss;
        op.inputs = std::move(in), op.outputs = std::move(o);
        op.cost.cls = OpClass::Reduction;
        op.cost.flops = per_elem * y.elems();
        count_bytes(op, b);
        b.add(std::move(op));
    };
    // cross-entropy: log-softmax and the label's term, 5 per element; its gradient softmax - onehot
    // from the saved row max and sum, 3; MSE: difference, square, sum (3), gradient 2 (y - t) / N (2)
    loss_op("loss/" + y.name, {out, label_t}, {loss_t}, ce ? 5 : 3);
    loss_op("loss/" + y.name + "/grad", {out, label_t}, {dy}, ce ? 3 : 2);
    b.seed(out, dy);

    // backward: the operators in reverse order, each once the gradients of its outputs are summed
    const std::vector<int32_t>& order = forward.topo_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const Operator& op = forward.ops()[static_cast<size_t>(*it)];
        for (const int32_t t : op.outputs)
            if (t >= 0 && t != out) b.finish_grad(t);
        bool reaches = false;  // a gradient reaches one of its outputs and it has an input that takes one
        for (const int32_t t : op.outputs) reaches = reaches || b.grad(t) >= 0;
        bool takes = false;
        for (const int32_t t : op.inputs) takes = takes || b.needs_grad(t);
        if (!reaches || !takes) continue;
        const size_t before = b.m_ops.size();
        if (!add_gradient(op, b)) {
            if (!options.allow_unsupported)
                throw UserError(where, "operator '" + op.name + "' (" + op.op_type + ") has no gradient rule; --allow-unsupported runs it forward only");
            step.no_gradient.push_back(op.name);
        }
        for (size_t i = before; i < b.m_ops.size(); ++i) step.backward_macs += b.m_ops[i].cost.macs;
    }
    for (const Operator& op : forward.ops()) step.forward_macs += op.cost.macs;
    std::vector<int32_t> trained;  // the weights a gradient reaches (not an unused weight, or one behind a forward-only operator)
    for (const int32_t w : weights) {
        b.finish_grad(w);
        if (b.grad(w) < 0) continue;
        trained.push_back(w);
        b.m_category[static_cast<size_t>(b.m_storage[static_cast<size_t>(b.grad(w))])] = MemoryCategory::Gradients;
        b.m_category[static_cast<size_t>(b.grad(w))] = MemoryCategory::Gradients;
    }

    if (options.recompute != "none")
        step.recompute_macs = insert_recompute(b, forward, options.recompute == "full" ? full_segments(forward) : selective_groups(forward));
    if (options.microbatches > 1) {
        replicate_microbatches(b, trained, options.microbatches);
        step.forward_macs *= options.microbatches, step.backward_macs *= options.microbatches;
        step.recompute_macs *= options.microbatches;
    }

    std::vector<StateInit> inits;  // the optimizer state, for the setup
    // the optimizer: one update per weight, reading its gradient and state and writing the
    // weight and state back in place; under mixed precision the update runs on an fp32 master
    // copy (read and written) and writes the weight in the run's precision, and the fp32
    // gradient is unscaled from the loss scale first (2 more operations per parameter)
    for (const int32_t w : trained) {
        const Tensor weight = b.tensor(w);
        Tensor fp32 = weight;  // an fp32 state tensor, whatever the run precision
        fp32.role = TensorRole::Constant;  // persistent optimizer state, not a parameter
        if (options.mixed_precision) fp32.onnx_dtype = 1, fp32.elem_bytes = 4, fp32.keeps_dtype = true;
        Operator op;
        op.name = "optimizer/" + weight.name;
        op.op_type = opt.op_type;
        op.inputs = {w, b.grad(w)};
        op.outputs = {b.new_tensor("optimizer/" + weight.name + "/updated", weight.shape, weight)};
        b.alias(op.outputs[0], w);
        std::vector<std::string> states;
        if (options.mixed_precision) states.push_back("master");
        for (int s = 0; s < opt.states; ++s) states.push_back("state" + std::to_string(s));
        for (const std::string& name : states) {
            fp32.name = "optimizer/" + weight.name + "/" + name;
            const int32_t st = b.add_tensor(fp32, MemoryCategory::OptimizerState);
            inits.push_back({st, name == "master" ? w : -1});
            fp32.name += "/updated";
            const int32_t upd = b.add_tensor(fp32);
            b.alias(upd, st);
            if (name == "master") op.inputs[0] = st;  // the update reads the master copy, not the half weight
            else op.inputs.push_back(st);
            op.outputs.push_back(upd);
        }
        op.cost.cls = OpClass::Elementwise;
        op.phase = TrainingPhase::Optimizer;
        op.cost.flops = (opt.ops_per_param + (options.mixed_precision ? 2 : 0)) * weight.elems();
        count_bytes(op, b);
        b.add(std::move(op));
    }
    if (options.setup) {  // first in the operator list, so first in the schedule
        std::vector<Operator> ops = setup_operators(b, weights, inits);
        ops.insert(ops.end(), std::make_move_iterator(b.m_ops.begin()), std::make_move_iterator(b.m_ops.end()));
        b.m_ops = std::move(ops);
    }
    step.category = std::move(b.m_category);
    step.storage = std::move(b.m_storage);
    step.graph = OpGraph(forward.model_name(), forward.source(), std::move(b.m_tensors), std::move(b.m_ops));
    return step;
}

}  // namespace archsim
