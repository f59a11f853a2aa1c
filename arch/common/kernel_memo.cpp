#include "arch/common/kernel_memo.h"

#include <algorithm>
#include <cstring>

#include "sim/base/hash.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

MemoKey& MemoKey::add(uint64_t v) {
    m_h = mix_key(m_h, v);
    return *this;
}

MemoKey& MemoKey::add(double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    return add(bits);
}

MemoKey& MemoKey::add(std::string_view s) {
    add(static_cast<uint64_t>(s.size()));
    return add(fnv1a64(s));
}

std::vector<int32_t> kernel_slots(const Operator& op) {
    std::vector<int32_t> slots;
    auto note = [&](int32_t t) {
        if (t >= 0 && slot_index(slots, t) < 0) slots.push_back(t);
    };
    for (int32_t t : op.inputs) note(t);
    for (int32_t t : op.outputs) note(t);
    for (const auto& g : op.cost.gemms) note(g.a.tensor), note(g.b.tensor), note(g.c.tensor);
    for (const auto& a : op.cost.attention) {
        note(a.q.tensor), note(a.k.tensor), note(a.v.tensor), note(a.out.tensor);
        note(a.d_out.tensor), note(a.dq.tensor), note(a.dk.tensor), note(a.dv.tensor);
    }
    return slots;
}

void add_kernel_signature(MemoKey& key, const Operator& op, const OpGraph& graph, const std::vector<int32_t>& slots) {
    auto slot = [&](int32_t t) { return t < 0 ? -1 : slot_index(slots, t); };
    auto operand = [&](const GemmOperand& o) { key.add(slot(o.tensor)).add(o.in_place); };
    key.add(op.op_type).add(op.domain).add(op.opset);
    key.add(uint64_t(op.inputs.size()));
    for (int32_t t : op.inputs) key.add(slot(t));
    key.add(uint64_t(op.outputs.size()));
    for (int32_t t : op.outputs) key.add(slot(t));
    const OpCost& c = op.cost;
    key.add(uint64_t(c.cls)).add(c.macs).add(c.flops).add(c.bytes_read).add(c.bytes_written).add(c.params);
    key.add(uint64_t(c.gemms.size()));
    for (const auto& g : c.gemms) {
        key.add(g.repeat).add(g.batch).add(g.groups).add(g.m).add(g.n).add(g.k).add(g.a_unique_elems).add(g.b_is_weight);
        operand(g.a), operand(g.b), operand(g.c);
    }
    key.add(uint64_t(c.attention.size()));
    for (const auto& a : c.attention) {
        key.add(a.batch).add(a.q_len).add(a.kv_len).add(a.head_dim).add(a.v_dim).add(a.ops_per_score).add(a.causal).add(a.backward);
        operand(a.q), operand(a.k), operand(a.v), operand(a.out);
        operand(a.d_out), operand(a.dq), operand(a.dk), operand(a.dv);
    }
    key.add(uint64_t(c.read_elems.size()));
    for (int64_t e : c.read_elems) key.add(e);
    key.add(uint64_t(op.members.size())).add(uint64_t(op.path)).add(op.threads);
    for (int32_t t : slots) {
        const Tensor& x = graph.tensors()[static_cast<size_t>(t)];
        key.add(uint64_t(x.shape.size()));
        for (int64_t d : x.shape) key.add(d);
        // a graph input is an activation that is in memory when the run starts: no machine
        // treats it otherwise, so the first layer, which reads one, repeats the layers after it
        const TensorRole role = x.role == TensorRole::Input ? TensorRole::Activation : x.role;
        key.add(x.onnx_dtype).add(x.elem_bytes).add(uint64_t(role)).add(x.causal_mask).add(graph.consumer_count(t) == 0);
    }
}

}  // namespace archsim
