#include "workloads/training/training_step.h"

#include <algorithm>
#include <map>

#include "sim/common/error.h"
#include "workloads/training/grad_rules.h"

namespace archsim {

const char* to_string(TrainingPhase p) {
    switch (p) {
        case TrainingPhase::Forward: return "forward";
        case TrainingPhase::Loss: return "loss";
        case TrainingPhase::Backward: return "backward";
        case TrainingPhase::Optimizer: return "optimizer";
    }
    return "forward";
}

TrainingPhase training_phase(const std::string& name) {
    if (name.rfind("backward/", 0) == 0) return TrainingPhase::Backward;
    if (name.rfind("optimizer/", 0) == 0) return TrainingPhase::Optimizer;
    if (name.rfind("loss/", 0) == 0) return TrainingPhase::Loss;
    return TrainingPhase::Forward;
}

namespace {

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
    if (name == "sgd") return {"SGD", 2, 0};
    if (name == "momentum") return {"Momentum", 4, 1};
    if (name == "adam") return {"Adam", 14, 2};
    if (name == "adamw") return {"AdamW", 16, 2};
    throw UserError(where, "unknown optimizer '" + name + "' (sgd, momentum, adam, adamw)");
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

    int32_t add_tensor(Tensor t) {
        m_tensors.push_back(std::move(t));
        return static_cast<int32_t>(m_tensors.size() - 1);
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
        op.stage = 2;
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
};

}  // namespace

TrainingStep make_training_step(const OpGraph& forward, const TrainingOptions& options) {
    const std::string& where = forward.source();
    const OptimizerRule opt = optimizer_rule(options.optimizer, where);
    if (options.loss != "auto" && options.loss != "cross_entropy" && options.loss != "mse")
        throw UserError(where, "unknown loss '" + options.loss + "' (auto, cross_entropy, mse)");
    StepBuilder b(forward);
    TrainingStep step{OpGraph("", "", {}, {}), "", options.optimizer, 0, 0, 0, 0, 0, {}};

    // the output the loss reads: the largest float output that depends on a weight
    int32_t out = -1;
    for (const int32_t i : forward.topo_order())
        for (const int32_t t : forward.ops()[static_cast<size_t>(i)].outputs)
            if (t >= 0 && forward.consumer_count(t) == 0 && b.needs_grad(t) &&
                (out < 0 || forward.tensors()[static_cast<size_t>(t)].elems() > forward.tensors()[static_cast<size_t>(out)].elems()))
                out = t;
    if (out < 0) throw UserError(where, "no output depends on a trained weight: nothing to train");
    for (const Tensor& t : forward.tensors())
        if (t.role == TensorRole::Weight && t.is_float()) step.params += t.elems();
    for (const Tensor& t : forward.tensors())  // the first model input: [batch, ...], or [batch, sequence] token ids
        if (t.role == TensorRole::Input && !t.shape.empty()) {
            step.samples = t.shape[0];
            step.tokens = (t.onnx_dtype == 6 || t.onnx_dtype == 7) && t.shape.size() == 2 ? t.elems() : 0;  // INT32, INT64
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
    auto loss_op = [&](const std::string& name, std::vector<int32_t> in, std::vector<int32_t> o, int64_t per_elem) {
        Operator op;
        op.name = name;
        op.op_type = ce ? "SoftmaxCrossEntropyLoss" : "MeanSquaredErrorLoss";
        op.stage = 1;
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

    // the optimizer: one update per weight, reading the weight, its gradient and its state and
    // writing them back (new tensors: the graph is single-assignment)
    for (size_t w = 0; w < forward.tensors().size(); ++w) {
        const Tensor& weight = forward.tensors()[w];
        if (weight.role != TensorRole::Weight || !weight.is_float()) continue;
        b.finish_grad(static_cast<int32_t>(w));
        const int32_t g = b.grad(static_cast<int32_t>(w));
        if (g < 0) continue;  // no gradient reaches it (an unused weight, or behind a forward-only operator)
        Operator op;
        op.name = "optimizer/" + weight.name;
        op.op_type = opt.op_type;
        op.inputs = {static_cast<int32_t>(w), g};
        op.outputs = {b.new_tensor("optimizer/" + weight.name + "/updated", weight.shape, weight)};
        for (int s = 0; s < opt.states; ++s) {
            Tensor state;
            state.name = "optimizer/" + weight.name + "/state" + std::to_string(s);
            state.shape = weight.shape;
            state.onnx_dtype = weight.onnx_dtype, state.elem_bytes = weight.elem_bytes;
            state.role = TensorRole::Constant;  // persistent optimizer state, not a parameter
            op.inputs.push_back(b.add_tensor(state));
            op.outputs.push_back(b.new_tensor(state.name + "/updated", weight.shape, weight));
        }
        op.cost.cls = OpClass::Elementwise;
        op.stage = 3;
        op.cost.flops = opt.ops_per_param * weight.elems();
        count_bytes(op, b);
        b.add(std::move(op));
    }
    step.graph = OpGraph(forward.model_name(), forward.source(), std::move(b.m_tensors), std::move(b.m_ops));
    return step;
}

}  // namespace archsim
