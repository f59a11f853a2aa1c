#include "workloads/lowering/layout_conversions.h"

#include <map>
#include <utility>

namespace archsim {

namespace {

/// Points every use of tensor `from` in `k` (inputs, GEMM operands, attention operands) at `to`.
void retarget(Operator& k, int32_t from, int32_t to) {
    for (int32_t& t : k.inputs)
        if (t == from) t = to;
    for (GemmView& g : k.cost.gemms)
        for (GemmOperand* x : {&g.a, &g.b})
            if (x->tensor == from) x->tensor = to;
    for (AttentionView& a : k.cost.attention)
        for (GemmOperand* x : {&a.q, &a.k, &a.v})
            if (x->tensor == from) x->tensor = to;
}

}  // namespace

OpGraph insert_layout_conversions(const OpGraph& plan, const std::vector<bool>& in_library) {
    std::vector<Tensor> tensors = plan.tensors();
    std::vector<char> blocked(tensors.size(), 0);  ///< by tensor: produced in the library's layout
    std::map<std::pair<int32_t, bool>, int32_t> converted;  ///< (tensor, to blocked) -> its copy
    std::vector<Operator> ops;
    ops.reserve(plan.ops().size());
    auto convert = [&](int32_t t, bool to_blocked) {
        const auto key = std::make_pair(t, to_blocked);
        if (const auto it = converted.find(key); it != converted.end()) return it->second;
        Tensor copy = tensors[static_cast<size_t>(t)];
        copy.name += to_blocked ? "/to_blocked" : "/to_plain";
        copy.role = TensorRole::Activation;
        const int32_t id = static_cast<int32_t>(tensors.size());
        tensors.push_back(copy);
        blocked.push_back(to_blocked);
        Operator r;
        r.name = copy.name;
        r.op_type = "Reorder";
        r.inputs = {t};
        r.outputs = {id};
        r.cost.cls = OpClass::DataMovement;
        r.cost.bytes_read = r.cost.bytes_written = copy.bytes();
        ops.push_back(std::move(r));
        converted.emplace(key, id);
        return id;
    };
    for (int32_t k : plan.topo_order()) {
        Operator op = plan.ops()[static_cast<size_t>(k)];
        const bool view = op.cost.cls == OpClass::ShapeOnly;
        bool out_blocked = !view && in_library[static_cast<size_t>(k)];
        for (int32_t t : plan.ops()[static_cast<size_t>(k)].inputs) {
            if (t < 0) continue;
            const TensorRole role = tensors[static_cast<size_t>(t)].role;
            if (role != TensorRole::Activation && role != TensorRole::Input) continue;
            if (view) {  // a view keeps the layout of what it views
                out_blocked = blocked[static_cast<size_t>(t)];
                break;
            }
            if (static_cast<bool>(blocked[static_cast<size_t>(t)]) != in_library[static_cast<size_t>(k)])
                retarget(op, t, convert(t, in_library[static_cast<size_t>(k)]));
        }
        for (int32_t t : op.outputs)
            if (t >= 0) blocked[static_cast<size_t>(t)] = out_blocked;
        ops.push_back(std::move(op));
    }
    // the model's outputs leave in the plain layout
    for (size_t t = 0; t < plan.tensors().size(); ++t)
        if (blocked[t] && plan.consumer_count(static_cast<int32_t>(t)) == 0 && plan.producer(static_cast<int32_t>(t)) >= 0)
            convert(static_cast<int32_t>(t), false);
    return OpGraph(plan.model_name(), plan.source(), std::move(tensors), std::move(ops), plan.runtime());
}

}  // namespace archsim
