#include "arch/cpu/tensor_layout.h"

#include <algorithm>

#include "arch/common/kernel_memo.h"
#include "arch/common/run_bytes.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

namespace {
constexpr uint64_t kPage = 4096;
}

TensorLayout::TensorLayout(const OpGraph& graph, const KernelRepeats& repeats, Precision precision, uint64_t base_bytes,
                           uint64_t align_bytes, uint64_t guard_bytes)
    : m_next(base_bytes + guard_bytes), m_align(std::max<uint64_t>(kPage, align_bytes)), m_guard(guard_bytes), m_graph(graph),
      m_precision(precision) {
    place(-1, 1, -1);
    for (const int32_t idx : graph.topo_order()) {
        const Operator& op = graph.ops()[static_cast<size_t>(idx)];
        const bool view = op.cost.cls == OpClass::ShapeOnly && !op.inputs.empty() && op.inputs[0] >= 0;
        for (const int32_t t : kernel_slots(op)) {
            if (m_base.count(t)) continue;
            if (view && t != op.inputs[0] && m_base.count(op.inputs[0]) &&
                bytes(t) <= m_bytes[op.inputs[0]]) {  // a view's output: its input's bytes
                m_base[t] = m_base[op.inputs[0]];
                m_bytes[t] = bytes(t);
                auto o = m_view_owner.find(op.inputs[0]);  // a view of a view: the bytes' owner
                const int32_t owner = o != m_view_owner.end() ? o->second : op.inputs[0];
                m_view_owner[t] = owner;
                m_views[owner].push_back(t);
                continue;
            }
            place(t, bytes(t), placed_counterpart(repeats, t));
        }
    }
}

int64_t TensorLayout::placed_counterpart(const KernelRepeats& repeats, int32_t t) const {
    // along the chain of counterparts, earlier instances first: a backward pass's instances run
    // in the reverse of the forward's, so a saved activation's earlier counterpart (the next
    // layer's) may not be placed yet while a later one (the layer before's) is placed; every
    // region's chain in turn (a forward and a backward region link the same
    // layers' tensors, in opposite directions)
    for (int32_t r = 0; r < static_cast<int32_t>(repeats.regions().size()); ++r) {
        for (int32_t u = repeats.prev(r, t), n = 0; u >= 0 && u != t && n < 1 << 16; u = repeats.prev(r, u), ++n)
            if (auto it = m_base.find(u); it != m_base.end()) return static_cast<int64_t>(it->second);
        for (int32_t u = repeats.next(r, t), n = 0; u >= 0 && u != t && n < 1 << 16; u = repeats.next(r, u), ++n)
            if (auto it = m_base.find(u); it != m_base.end()) return static_cast<int64_t>(it->second);
    }
    return -1;
}

uint64_t TensorLayout::bytes(int32_t t) const {
    if (t < 0) return 1;
    auto it = m_bytes.find(t);
    if (it != m_bytes.end()) return it->second;
    return static_cast<uint64_t>(std::max<int64_t>(1, run_bytes(m_graph.tensors()[static_cast<size_t>(t)], m_precision)));
}

const std::vector<int32_t>& TensorLayout::views_of(int32_t t) const {
    static const std::vector<int32_t> none;
    auto it = m_views.find(t);
    return it == m_views.end() ? none : it->second;
}

uint64_t TensorLayout::place(int32_t t, uint64_t bytes, int64_t congruent_to) {
    uint64_t at = m_next;
    if (congruent_to >= 0) {  // the first address >= m_next with at = congruent_to (mod m_align)
        const uint64_t want = static_cast<uint64_t>(congruent_to) % m_align;
        at += (want + m_align - at % m_align) % m_align;
    }
    m_next = at + (bytes + kPage - 1) / kPage * kPage + 2 * m_guard;
    m_base[t] = at;
    m_bytes[t] = bytes;
    m_ranges.push_back({at, at + bytes, t});
    return at;
}

uint64_t TensorLayout::base(int32_t t) {
    auto it = m_base.find(t);
    return it != m_base.end() ? it->second : place(t, bytes(t), -1);
}

int32_t TensorLayout::owner(uint64_t addr) const {
    auto it = std::upper_bound(m_ranges.begin(), m_ranges.end(), addr, [&](uint64_t a, const Range& r) { return a + m_guard < r.base; });
    if (it == m_ranges.begin()) return -2;
    --it;
    return addr < it->end + m_guard ? it->tensor : -2;
}

}  // namespace archsim
